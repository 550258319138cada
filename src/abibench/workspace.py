"""abibench's own temporary directories: made with their owner's identity, removed on every exit.

A directory is owned by one process, named for it: ``{kind}-p{pid}-t{start}-b{boot}-n{pidns}-{random}``
where ``start`` is the process's start time (field 22 of /proc/PID/stat, clock ticks after boot),
``boot`` the first 8 hex digits of the kernel's boot id and ``pidns`` the inode of its PID
namespace. (Short: a MariaDB socket lives in such a directory, and socket paths are limited to
107 bytes.) A PID alone is not an identity: PIDs are reused, and a reboot starts them over.

- ``owned_dir(kind)`` makes one under ``temp_root()`` (``$TMPDIR/abibench-<uid>/``) and removes it
  in ``finally``: every exit that runs Python code (return, exception, Ctrl-C, a SIGTERM turned
  into an interrupt) removes it.
- ``clean_stale(cache_root)`` removes what a SIGKILL, a crash or a power cut left: every such
  directory whose owner is gone (another boot, no such PID, or a PID reused by a process that
  started at another time), under the temp root and under the cache's own scratch places
  (build staging, sysroot staging and scratch, .deb downloads). Only names of this form, in those
  places, are ever removed; a directory whose owner is alive, or lives in another PID namespace
  (where its PID means something else), is left alone.
- A process started to work in such a directory (a build) carries its name in its environment
  (``marked_env``); ``kill_marked`` kills every process that still carries it, wherever it went
  (its own session, a double fork), and ``clean_stale`` does so before removing a stale
  directory: nothing started for a directory outlives it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import HostError

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
SYSROOT_WORK_DIR = "/abibench"  # scratch directories inside a sysroot live under this path

_TAG = re.compile(r"(?:^|-)p(\d+)-t(\d+)-b([0-9a-f]{8})-n(\d+)(?:-|$)")
# Sysroot scratch directories of versions before the full tag: `{prefix}-p{pid}-{12 hex}`.
_LEGACY_SCRATCH = re.compile(r"-p(\d+)-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Owner:
    """The process a directory belongs to, as its name records it."""

    pid: int
    start: int  # clock ticks after boot (field 22 of /proc/PID/stat)
    boot: str  # first 8 hex digits of /proc/sys/kernel/random/boot_id
    pidns: int  # inode of /proc/PID/ns/pid: a PID means something only in its namespace

    def tag(self) -> str:
        return f"p{self.pid}-t{self.start}-b{self.boot}-n{self.pidns}"

    def gone(self) -> bool:
        """True only when this process certainly exists no more."""
        here = current()
        if self.boot != here.boot:
            return True  # another boot: every process of it is gone
        if self.pidns != here.pidns:
            return False  # another container's PID: we cannot tell, so keep it
        started = start_time(self.pid)
        return started is None or started != self.start


def boot_id() -> str:
    return BOOT_ID.read_text().strip().replace("-", "")[:8]


def pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def start_time(pid: int) -> int | None:
    """When a live process started (clock ticks after boot); None when it is gone or a zombie."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = text.rsplit(")", 1)[-1].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])  # field 22 counted from 1; fields[0] is field 3


MARK_VAR = "ABIBENCH_OWNED_DIR"


def marked_env(path: Path) -> dict[str, str]:
    """The environment entry that ties a process to the owned directory it works in."""
    return {MARK_VAR: path.name}


def _marked_pids(name: str) -> list[int]:
    mark = f"{MARK_VAR}={name}".encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue  # gone, or not ours to read
        if (b"\0" + environ).find(b"\0" + mark) >= 0:
            found.append(int(entry.name))
    return found


def kill_marked(name: str, rounds: int = 50) -> int:
    """SIGKILL every process marked with the owned directory ``name``; how many were killed.

    Repeated until a scan finds none: a process may fork while the scan runs."""
    killed = 0
    for _ in range(rounds):
        pids = _marked_pids(name)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed


_CURRENT: dict[int, Owner] = {}


def current() -> Owner:
    """This process (looked up once per PID, so a forked child gets its own)."""
    pid = os.getpid()
    owner = _CURRENT.get(pid)
    if owner is None:
        started = start_time(pid)
        assert started is not None  # we are running
        owner = Owner(pid, started, boot_id(), pid_namespace())
        _CURRENT.clear()
        _CURRENT[pid] = owner
    return owner


def owner_of(name: str) -> Owner | None:
    """The owner a directory name records, or None when it is not one of ours."""
    m = _TAG.search(name)
    if m is None:
        return None
    return Owner(int(m[1]), int(m[2]), m[3], int(m[4]))


def prefix(kind: str) -> str:
    """A name prefix for a directory this process owns, e.g. for tempfile.mkdtemp(prefix=...)."""
    safe = re.sub(r"[^A-Za-z0-9._]+", "_", kind)
    return f"{safe}-{current().tag()}-"


def temp_root(base: Path | None = None) -> Path:
    """``$TMPDIR/abibench-<uid>/``: private to this user, created on first use."""
    root = Path(base or tempfile.gettempdir()) / f"abibench-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o700)
    st = root.lstat()
    # A shared /tmp: someone else may have made this name first, or planted a symlink.
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise HostError(f"{root} is not a directory of this user: remove it, or set TMPDIR to a "
                        "private directory")
    return root


@contextlib.contextmanager
def owned_dir(kind: str, parent: Path | None = None, mode: int = 0o700) -> Iterator[Path]:
    """A new directory named for this process under ``parent`` (default: the temp root),
    removed when the context ends, however it ends."""
    where = parent if parent is not None else temp_root()
    path = where / f"{prefix(kind)}{uuid.uuid4().hex[:8]}"
    path.mkdir(mode=mode)
    try:
        yield path
    finally:
        remove_tree(path)


def remove_tree(path: Path) -> None:
    """Remove a directory abibench made, read-only ones inside it too (a run's pinned copy of
    its programs, run/pinned.py): an entry a user other than root may not delete is retried
    once its directory is writable again. Errors are ignored, as for any cleanup."""
    def again(func: Callable[[str], object], failed: str,
              exc: tuple[type[BaseException], BaseException, object]) -> None:
        parent = os.path.dirname(failed)
        # Only directories inside the tree are made writable, never the one it lives in.
        if not isinstance(exc[1], PermissionError) or not parent.startswith(f"{path}"):
            return
        with contextlib.suppress(OSError):
            os.chmod(parent, 0o700)
            func(failed)

    shutil.rmtree(path, onerror=again)


def _stale(entry: Path) -> bool:
    owner = owner_of(entry.name)
    if owner is not None:
        return owner.gone()
    legacy = _LEGACY_SCRATCH.search(entry.name)
    # Only a PID to go by: stale only when no process has it (a reused PID keeps it).
    return legacy is not None and not Path(f"/proc/{legacy[1]}").exists()


def _sweep(parent: Path, legacy: bool = False) -> list[Path]:
    removed: list[Path] = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if owner_of(entry.name) is None and not (legacy and _LEGACY_SCRATCH.search(entry.name)):
            continue
        try:
            if not stat.S_ISDIR(entry.lstat().st_mode):  # never follow a symlink out
                continue
        except OSError:
            continue
        if _stale(entry):
            kill_marked(entry.name)
            remove_tree(entry)
            removed.append(entry)
    return removed


def _subdirs(parent: Path) -> Iterable[Path]:
    with contextlib.suppress(OSError):
        yield from (p for p in parent.iterdir() if p.is_dir() and not p.is_symlink())


def cache_scratch_dirs(cache_root: Path) -> list[Path]:
    """The places in the cache where abibench makes owned directories (see obtain/ and run/)."""
    sysroots = cache_root / "debian" / "sysroots"
    return [*_subdirs(cache_root / "builds"),  # build staging: .{abi}-{tag}-xxxx
            cache_root / "debsrc",  # Debian source trees being fetched: .{package}-{tag}-xxxx
            sysroots,  # sysroot staging: .{arch}-{tag}-xxxx
            cache_root / "debian" / "debs",  # apt-get download: .dl-{tag}-xxxx
            cache_root / "system-images",  # a system's disk being built: .image-{tag}-xxxx
            cache_root / "system-roots",  # mmdebstrap's tree being built: .root-{tag}-xxxx
            cache_root / "system-kernels"]  # a kernel and its initramfs: .kernel-{tag}-xxxx


def clean_stale(cache_root: Path | None = None, temp_base: Path | None = None) -> list[Path]:
    """Remove every owned directory whose owner is gone; return what was removed.

    Cheap (a few directory listings), so `abibench run` calls it at every start.
    """
    removed = _sweep(temp_root(temp_base))
    if cache_root is not None:
        for parent in cache_scratch_dirs(cache_root):
            removed += _sweep(parent)
        for sysroot in _subdirs(cache_root / "debian" / "sysroots"):
            removed += _sweep(sysroot / SYSROOT_WORK_DIR.strip("/"), legacy=True)
    return removed
