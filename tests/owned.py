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
import os
import shutil
import stat
import tempfile
from pathlib import Path

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


# As a pytest plugin (tests/conftest.py): every test process, the controller and each xdist
# worker, sweeps as it starts and releases its own parent as it ends.
def pytest_configure(config: object) -> None:
    sweep()


def pytest_unconfigure(config: object) -> None:
    release()
