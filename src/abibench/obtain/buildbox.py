"""Where a build command runs: what it can read, and that it dies with abibench.

A build's cache key must cover everything the build can read. Rather than guessing what a
recipe reads, abibench decides it: every build command runs in a bubblewrap sandbox that sees
the system read-only (/usr, the /lib links, a few files of /etc, the toolchains the recipe
names), a private /tmp, no network, its own staging directory writable, and of the profile's
directory only the files the profile declares ([source] files; the files of [source] data found
beside it), each bound read-only at its own path and copied into the build tree. An undeclared
file is simply not there: the build fails, and the failure names the file and how to declare it,
instead of a later change to it going unnoticed by the cache.

Where bwrap cannot run (probed once), builds run unconfined with the profile's whole directory
in the build tree, and the whole directory is hashed into the key instead: everything the build
could have read. The build record says which of the two it was (`isolation`).

Nothing a build starts outlives abibench: the command runs in its own process group, whose
leader dies with abibench (PR_SET_PDEATHSIG, even on SIGKILL); bwrap gives the build its own PID
namespace and dies with its parent too (--die-with-parent), which kills every process in it.
Every build process carries its staging directory's name in its environment
(`workspace.marked_env`): after the command, on Ctrl-C, and at the next start's
`workspace.clean_stale` for a killed run, whatever still carries it is killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import itertools
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO

from ..errors import BuildError
from ..hashing import sha256_file
from ..paths import MICRO_DIR
from ..workloads.confine import inside
from ..workloads.profile import Workload, resolve_source_files, substitute
from ..workspace import kill_marked, marked_env
from . import buildlog

SANDBOX_SWITCH = "ABIBENCH_BUILD_SANDBOX"  # "off": never sandbox (hosts where bwrap misbehaves)
PROBE_TIMEOUT_S = 30.0
MAX_LISTED = 5000  # files of a profile's directory looked at to name an undeclared one
# /etc as a build sees it: what the dynamic loader, compilers (alternatives) and id lookups need.
ETC_FILES = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group",
             "nsswitch.conf")
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Declared:
    """An input a profile declares: its real path, and its name in the build tree."""

    path: Path
    name: str


def normal(p: Path) -> Path:
    """An absolute path without `..` (links not followed): `elsewhere/../proj` names nothing
    inside the sandbox, where `elsewhere` does not exist."""
    return Path(os.path.abspath(p))


def profile_dir_of(wl: Workload) -> Path:
    return normal(wl.path.parent)


def _name_of(p: Path, profile_dir: Path) -> str:
    """A declared input's name in the build tree: its path under the profile's directory, or
    under micro/ for abibench's own sources."""
    # Lexically, or with links resolved (source files come resolved from the profile loader).
    for root, label in ((profile_dir, ""), (profile_dir.resolve(), ""),
                        (normal(MICRO_DIR), "micro/"), (MICRO_DIR.resolve(), "micro/")):
        if p.is_relative_to(root):
            return label + p.relative_to(root).as_posix()
    raise BuildError(f"{p}: outside the profile's directory")


def declared_inputs(wl: Workload) -> list[Declared]:
    """Every file or directory the profile declares as an input of its build."""
    profile_dir = profile_dir_of(wl)
    if not wl.source.build:
        files = resolve_source_files(wl)
        # Headers beside the sources are included by them: part of the input.
        files += sorted({h for d in {p.parent for p in files} for h in d.glob("*.h")})
    else:
        values = {"micro": str(MICRO_DIR), "profile_dir": str(profile_dir), **wl.params}
        files = []
        for f in wl.source.files:
            p = Path(substitute(f, values))
            p = p if p.is_absolute() else profile_dir / p
            if not p.exists():
                raise BuildError(f"{wl.id}: declared input '{f}' does not exist ({p}): fix "
                                 f"[source] files in {wl.path}")
            if not any(inside(p, r) for r in (profile_dir, MICRO_DIR)):
                raise BuildError(f"{wl.id}: declared input '{f}' leads to {p.resolve()}, outside "
                                 f"the profile's directory: copy it next to {wl.path}")
            files.append(p)
        if not wl.source.debian:
            # [source] data names files of the build tree; those found beside the profile are
            # copied into the tree, so they are inputs too.
            files += [profile_dir / d for d in wl.source.data
                      if "{" not in d and (profile_dir / d).exists()
                      and inside(profile_dir / d, profile_dir)]
    out: dict[str, Declared] = {}
    for p in map(normal, files):
        name = _name_of(p, profile_dir)
        out.setdefault(name, Declared(p, name))
    return sorted(out.values(), key=lambda d: d.name)


def _walk(path: Path, name: str, skip: frozenset[Path]) -> Iterator[tuple[str, Path]]:
    yield name, path
    if path.is_dir() and not path.is_symlink():
        for child in sorted(path.iterdir()):
            if child not in skip:
                yield from _walk(child, f"{name}/{child.name}", skip)


def digest(inputs: Sequence[Declared], skip: frozenset[Path] = frozenset()) -> str:
    """Names, kinds, mode bits and contents of every declared input (directories walked,
    but not into `skip`, the build cache; links recorded as links, never followed)."""
    h = hashlib.sha256()
    for d in inputs:
        for name, p in _walk(d.path, d.name, skip):
            st = p.lstat()
            h.update(f"{name}\0{stat.S_IFMT(st.st_mode):o}\0{stat.S_IMODE(st.st_mode):o}\0"
                     .encode())
            if stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(p).encode())
            elif stat.S_ISREG(st.st_mode):
                h.update(sha256_file(p).encode())
            h.update(b"\0")
    return h.hexdigest()


def copy_into(inputs: Sequence[Declared], tree: Path, skip: frozenset[Path] = frozenset()) -> None:
    """The declared inputs at their names in the build tree (writable copies), but for `skip`
    (the build cache, should a declared directory hold it)."""
    for d in inputs:
        dest = tree / d.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if d.path.is_dir() and not d.path.is_symlink():
            shutil.copytree(d.path, dest, symlinks=True, dirs_exist_ok=True,
                            ignore=lambda at, names: [n for n in names if normal(Path(at, n))
                                                      in skip])
        else:
            shutil.copy2(d.path, dest, follow_symlinks=False)


def copy_whole(profile_dir: Path, tree: Path, skip: frozenset[Path]) -> None:
    """The profile's whole directory as the build tree (unconfined builds), but for `skip`
    (the build cache, which may lie inside it and holds this very tree)."""
    shutil.copytree(profile_dir, tree, symlinks=True,
                    ignore=lambda d, names: [n for n in names if normal(Path(d, n)) in skip])


def undeclared_files(profile_dir: Path, inputs: Sequence[Declared],
                     skip: frozenset[Path] = frozenset()) -> list[str]:
    """Files in the profile's directory that no declared input covers (relative names)."""
    covered = [d.path for d in inputs]
    out: list[str] = []
    for name, p in itertools.islice(_walk(profile_dir.absolute(), ".", skip), MAX_LISTED):
        if p.is_file() and not p.is_symlink() and not any(
                p == c or p.is_relative_to(c) for c in covered):
            out.append(name.removeprefix("./"))
    return out


def named_in(log_text: str, names: Sequence[str]) -> list[str]:
    """The names a build's log mentions: by relative path, or by file name as a whole word."""
    found = []
    for n in names:
        base = n.rsplit("/", 1)[-1]
        if n in log_text or re.search(rf"(?<![\w.-]){re.escape(base)}(?![\w-])", log_text):
            found.append(n)
    return found


def _switched_off() -> bool:
    return os.environ.get(SANDBOX_SWITCH, "").lower() in ("off", "0", "no")


def _system_mounts() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in SYSTEM_LINKS:
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/etc"]
    for name in ETC_FILES:
        p = Path("/etc") / name
        if p.exists():
            args += ["--ro-bind", str(p), str(p)]
    return args


BWRAP_OPTIONS = ("--unshare-all", "--die-with-parent", "--new-session")


@cache
def sandbox_problem() -> str | None:
    """Why builds cannot run sandboxed here, or None when they can (asked once per process)."""
    if _switched_off():
        return f"{SANDBOX_SWITCH}=off"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap is not installed (apt-get install bubblewrap)"
    try:
        proc = subprocess.run([bwrap, *BWRAP_OPTIONS, *_system_mounts(), "--", "true"],
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not run ({type(exc).__name__})"
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return f"bwrap cannot make a sandbox here ({why[:160]})"
    return None


@dataclass(frozen=True)
class Box:
    """One build's confinement: its staging directory, what it may read, its environment."""

    staging: Path
    profile_dir: Path
    readonly: tuple[Path, ...] = ()  # bound read-only at their own paths
    skip: frozenset[Path] = frozenset()  # never an input: the build cache
    # A toolchain's own shared cache (toolchain.shared_caches), bound writable at its path.
    writable: tuple[Path, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    sandboxed: bool = True

    def argv(self, argv: Sequence[str], cwd: Path) -> list[str]:
        if not self.sandboxed:
            return list(argv)
        hide: list[str] = []
        # A profile directory under a system path (an installed abibench) would be visible
        # whole: an empty directory over it, then the declared files.
        if not any(Path(s).is_relative_to(self.profile_dir) for s in ("/usr", "/etc", "/tmp")):
            hide = ["--tmpfs", str(self.profile_dir)]
        binds: list[str] = []
        for p in self.readonly:
            binds += ["--ro-bind", str(p), str(p)]
        for p in self.writable:
            binds += ["--bind", str(p), str(p)]
        return [shutil.which("bwrap") or "bwrap", *BWRAP_OPTIONS, *_system_mounts(), *hide,
                *binds, "--bind", str(self.staging), str(self.staging), "--chdir", str(cwd),
                "--", *argv]

    @property
    def isolation(self) -> str:
        if self.sandboxed:
            return ("sandboxed (bwrap): only the declared inputs, the system read-only and the "
                    "named toolchains were visible")
        return (f"not sandboxed ({sandbox_problem()}): the profile's whole directory was "
                "visible and is part of the cache key")


def environment(staging: Path, extra: dict[str, str], sandboxed: bool) -> dict[str, str]:
    """A build's environment: fixed by abibench, so it is no hidden input (the host's CFLAGS,
    say); PATH finds the toolchains whose versions are recorded."""
    tmp = Path("/tmp") if sandboxed else staging / "tmp"  # unconfined: made by the build
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(tmp),
            "TMPDIR": str(tmp), "GOCACHE": str(tmp / "go-cache"), "GOPATH": str(tmp / "go"),
            "GOTOOLCHAIN": "local", "GOFLAGS": "-buildvcs=false", "GOPROXY": "off",
            "CARGO_HOME": str(tmp / "cargo"), "CARGO_NET_OFFLINE": "true",
            **extra, **marked_env(staging)}


def _die_with(parent: int) -> Callable[[], None]:
    libc = ctypes.CDLL(None, use_errno=True)

    def child() -> None:
        # Killed when abibench dies, even by SIGKILL; if abibench died before this call, the
        # build must not start at all.
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(125)

    return child


def run_unconfined(argv: Sequence[str], cwd: Path, log: IO[str], staging: Path) -> int:
    """A step that needs the host as it is (apt-get source fetches over the network), in the
    same kill-tree as a build: its own group, dying with abibench, marked with `staging`."""
    box = Box(staging, staging, env={**os.environ, "LC_ALL": "C", **marked_env(staging)},
              sandboxed=False)
    return run(argv, cwd, log, box)


def run(argv: Sequence[str], cwd: Path, log: IO[str], box: Box) -> int:
    """Run one build command in the box, its output to log; its exit status.

    However this returns (an exit, an exception, Ctrl-C), no process of the command is left."""
    log.write(f"{buildlog.COMMAND_MARK}{shlex.join(argv)}\n")
    log.flush()
    proc = subprocess.Popen(box.argv(argv, cwd), cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=box.env, start_new_session=True,
                            preexec_fn=_die_with(os.getpid()))
    try:
        # Waited for without reaping: while the leader is not reaped, its PID (the group's id)
        # cannot be reused, so the group killed below is certainly the build's.
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    finally:
        # What the command left running in its group, then whatever left the group.
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kill_marked(box.staging.name)
    return proc.returncode
