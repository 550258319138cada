"""Temporary directories a test process owns, and the sweep of those a killed one left behind.

A fixture that starts a server (PostgreSQL's data directory, the fleet's sshd hosts) or keeps a
run-wide copy (apt's cache) makes its directory with `owned_tempdir`, and removes it in its
`finally`. A process killed outright (SIGKILL, the OOM killer, a lost CI runner) runs no
`finally`: its servers stop (PR_SET_PDEATHSIG, tests/servers.py) but their directories stay.
So every such directory lives under one parent per process,

    $TMPDIR/abibench-tests-UID/PID-START/

stamped with the owning process's PID and its start time (a PID is reused; the pair is not),
and `sweep()`, run when each test process starts (this module is a pytest plugin), removes the parents whose
owner no longer runs. The invariant, in one place: a test run leaves nothing behind, even when
a previous one was killed. tests/invariants/test_leftovers.py kills holders at generated points.

(PYTEST_DONT_REWRITE: imported by tests/servers.py before pytest loads it as a plugin; it has
no assertions to rewrite.)
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from abibench.locks import exclusive, exclusive_if_free
from abibench.paths import cache_dir

ROOT_PREFIX = "abibench-tests-"


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or
    None when no such process runs (a zombie counts as gone: it runs nothing)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    if not fields or fields[0] == "Z":
        return None
    return fields[19]


def stamp(pid: int | None = None) -> str:
    """PID-START of a running process (this one by default)."""
    pid = os.getpid() if pid is None else pid
    began = start_time(pid)
    if began is None:
        raise ProcessLookupError(f"process {pid} is not running")
    return f"{pid}-{began}"


def owner_alive(name: str) -> bool | None:
    """Whether the process a parent's name stamps still runs; None for a name that is no
    stamp (not ours to judge: left alone)."""
    pid, sep, began = name.partition("-")
    if not sep or not pid.isdigit() or not began.isdigit():
        return None
    return start_time(int(pid)) == began


def root(base: Path | None = None) -> Path:
    """$TMPDIR/abibench-tests-UID, made if missing (mode 0755: a server run as another user,
    postgres, must reach its directory below). Refused if it is not a directory of ours: in a
    shared /tmp, another user may have made that name first."""
    where = Path(base or tempfile.gettempdir()) / f"{ROOT_PREFIX}{os.geteuid()}"
    with contextlib.suppress(FileExistsError):
        where.mkdir(mode=0o755)
    st = where.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise RuntimeError(f"{where}: not a directory of user {os.geteuid()} (remove it, or "
                           "set TMPDIR to a directory of your own)")
    where.chmod(0o755)
    return where


def owned_root(base: Path | None = None) -> Path:
    """This process's parent directory under root(), made on first use."""
    mine = root(base) / stamp()
    if not mine.is_dir():
        mine.mkdir(mode=0o755, exist_ok=True)
        atexit.register(release, base)  # a script's clean end too, not only a test session's
    return mine


def owned_tempdir(prefix: str, base: Path | None = None) -> Path:
    """A new directory (like tempfile.mkdtemp) under this process's parent: removed by its
    maker's `finally`, or by the next session's sweep() if its maker is killed first."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=owned_root(base)))


def sweep(base: Path | None = None) -> list[Path]:
    """Remove every parent whose owner no longer runs; returns them. A live owner's parent,
    and a name that is no stamp, are left as they are."""
    try:
        entries = list(root(base).iterdir())
    except (OSError, RuntimeError):
        return []  # nothing of ours there, or not ours at all: nothing to sweep
    gone = [p for p in entries if owner_alive(p.name) is False]
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
    return [p for p in gone if not p.exists()]


def release(base: Path | None = None) -> None:
    """At a clean end: this process's parent, if its makers removed all they made (a directory
    still in it is left for the sweep, which finds its owner gone)."""
    began = start_time(os.getpid())
    mine = Path(base or tempfile.gettempdir()) / f"{ROOT_PREFIX}{os.geteuid()}" / \
        f"{os.getpid()}-{began}"
    with contextlib.suppress(OSError):
        mine.rmdir()


# ----------------------------------------------------------------- the fleet hosts' kept dirs
# The fleet tests' two hosts each get a work directory whose virtual environment setup.sh makes
# (`pip install -e .[dev]`, about 30 CPU s a host). It is kept between test runs under a key of
# what determines its content, not of the checkout that made it: CI's every gate is a new clone
# on this machine, and a key per checkout rebuilt both environments every gate and left 1.1 GB
# behind per clone that nothing removed (docs/method.md, section 10, Round 6).
KEEP_DAYS = 3    # a key unused this long belongs to a pyproject.toml/setup.sh nobody tests now
KEEP_COUNT = 4   # 1.1 GB each: at most about 4.4 GB kept, whatever the number of branches
# The PATH sshd gives a root session (its compiled-in default): where the hosts' setup.sh looks
# for python3.11 / python3, the interpreter the environment is made with.
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
USED = ".used"
REPO = Path(__file__).resolve().parents[1]


def host_python(path: str = HOST_PATH) -> Path | None:
    """The interpreter setup.sh's python_setup picks on the hosts' PATH (the first python3.11,
    else python3; its version check is setup.sh's)."""
    for name in ("python3.11", "python3"):
        found = shutil.which(name, path=path)
        if found:
            return Path(found).resolve()
    return None


def fleet_key(repo: Path, python: Path | None = None) -> str:
    """What the hosts' environment is made from: pyproject.toml (the dependencies, the entry
    points), setup.sh (how it is made, and when made again) and the interpreter's build (its
    path, size and time: a Debian upgrade replaces it). Not the sources: the install is
    editable, and the playbook unpacks them afresh into each host's src/ on every run."""
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "setup.sh"):
        digest.update(name.encode() + b"\0" + (repo / name).read_bytes() + b"\0")
    python = python if python is not None else host_python()
    if python is not None:
        st = python.stat()
        digest.update(f"{python}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def kept_root() -> Path:
    return cache_dir() / "test-fleet"


@contextlib.contextmanager
def kept_dir(key: str, parent: Path | None = None) -> Iterator[Path]:
    """The kept directory of `key`, held under its lock (abibench.locks) while the block runs:
    a second test run of the same key waits rather than share a half-made environment, and the
    sweep never removes it meanwhile. Its `.used` stamp dates the last use, for the sweep."""
    where = (parent or kept_root()) / key
    with exclusive(where):
        where.mkdir(parents=True, exist_ok=True)
        (where / USED).touch()
        yield where


def last_used(where: Path) -> float:
    """When a test run last used the directory: its `.used` stamp, or the latest change of it
    or of a host's directory in it (one made before the stamp existed, perhaps in use now by a
    test run of older code, which holds no lock: the newest are kept)."""
    times = [where.stat().st_mtime]
    for p in [where / USED, *where.iterdir()]:
        with contextlib.suppress(OSError):
            times.append(p.stat().st_mtime)
    return max(times)


def kept_victims(ages: dict[str, float], keep_days: float = KEEP_DAYS,
                 keep_count: int = KEEP_COUNT, current: str | None = None) -> set[str]:
    """The keys to remove, given each key's seconds since its last use: all but the
    `keep_count` most recently used, and any unused for more than `keep_days`; never `current`
    (this run's own: it is about to be used)."""
    newest = sorted(ages, key=lambda k: ages[k])
    return {k for i, k in enumerate(newest)
            if k != current and (i >= keep_count or ages[k] > keep_days * 86400)}


def sweep_kept(parent: Path | None = None, now: float | None = None,
               current: str | None = None) -> list[Path]:
    """Remove the kept fleet directories kept_victims names, each under its lock taken without
    waiting: one a live test run holds is left alone. Returns those removed."""
    parent = parent or kept_root()
    try:
        dirs = {p.name: p for p in parent.iterdir() if p.is_dir() and not p.is_symlink()}
    except OSError:
        return []
    now = time.time() if now is None else now
    ages = {}
    for name, p in dirs.items():
        with contextlib.suppress(OSError):  # removed by another sweep meanwhile
            ages[name] = now - last_used(p)
    gone = []
    for name in sorted(kept_victims(ages, current=current)):
        with exclusive_if_free(dirs[name]) as free:
            if free:
                shutil.rmtree(dirs[name], ignore_errors=True)
                if not dirs[name].exists():
                    gone.append(dirs[name])
    return gone


@pytest.fixture(scope="module")
def fleet_workdir() -> Iterator[Path]:
    """The hosts' work directories' parent. It persists (abibench's cache, like the Debian
    sysroots) under a key of what makes the hosts' virtual environments (fleet_key), held
    under its lock while the fleet's module runs (not the worker's whole session: another
    gate's fleet waits no longer than it must): made once per machine and key, not per
    checkout or session. ABIBENCH_TEST_FLEET_DIR puts it elsewhere."""
    given = os.environ.get("ABIBENCH_TEST_FLEET_DIR")
    if given:
        yield Path(given)
        return
    with kept_dir(fleet_key(REPO)) as where:
        yield where


# As a pytest plugin (tests/conftest.py): every test process, the controller and each xdist
# worker, sweeps as it starts and releases its own parent as it ends.
def pytest_configure(config: object) -> None:
    sweep()
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # once a run: the controller's
        with contextlib.suppress(OSError):
            sweep_kept(current=fleet_key(REPO))


def pytest_unconfigure(config: object) -> None:
    release()
