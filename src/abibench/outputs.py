"""Outputs never touch inputs: every file abibench writes because a user asked for it.

A report, an export, a CSV or an sdist is written through `write_output` (or placed with
`check_output`), and nowhere else. Before a byte is written the path is resolved (symlinks, `..`,
a trailing slash; a hard link by its inode) and refused, as one line naming the path and the
fix, when it is or lies inside something this process reads:

* what the command opened, registered where it was opened, so no command can forget it: the
  results database and its -wal, -shm and -journal files (`store/sqlite.py`), every file a user
  named that was opened (`files.open_regular`: profiles, exported runs read whole or
  streamed, hashed files, a program's stdin), a workload's source files
  (`workloads/profile.py`);
* the fixed places (`paths.py`): the build and input cache, abibench's own package (built-in
  profiles, sources, pages), and the data directory's internal files (the default database,
  kept profiles, fetched fleet documents, spools).

A write is atomic: a temporary file in the same directory, flushed to disk, then renamed over the
target; a write that fails (disk full, no permission) leaves the old file as it was.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from .errors import UsageError
from .paths import PACKAGE_DIR, cache_dir, data_dir, default_db

# The files SQLite keeps beside a database while it is open.
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")

# What this process has opened and must never write: resolved path -> what it is; and the
# same files by (device, inode), so that a hard link to one is caught too.
_FILES: dict[str, str] = {}
_INODES: dict[tuple[int, int], tuple[str, str]] = {}  # (device, inode) -> (what, path)
_TREES: dict[str, str] = {}


def _real(path: Path | str) -> str:
    return os.path.realpath(os.fspath(path))


def protect(path: Path | str, what: str) -> None:
    """Register a file this process reads (or will): no output may be written over it."""
    raw = os.fspath(path)
    if not raw or "\0" in raw:
        return
    for name in {os.path.abspath(raw), _real(raw)}:
        _FILES.setdefault(name, what)
    try:
        st = os.stat(raw)
    except (OSError, ValueError):
        return
    if stat.S_ISREG(st.st_mode):
        _INODES[(st.st_dev, st.st_ino)] = (what, _real(raw))


def protect_tree(path: Path | str, what: str) -> None:
    """Register a directory whose every file is an input: nothing may be written inside it."""
    raw = os.fspath(path)
    if raw and "\0" not in raw:
        _TREES.setdefault(_real(raw), what)


def protect_database(path: Path | str) -> None:
    """A SQLite results database and the files SQLite keeps beside it (under the name given and
    under the resolved one: SQLite follows a symlinked database to its target)."""
    raw = os.fspath(path)
    for base in {raw, _real(raw)}:
        protect(base, "the results database")
        for side in SQLITE_SIDE_FILES:
            protect(base + side, "a file of the results database (SQLite keeps it beside it)")


def _fixed() -> tuple[dict[str, str], dict[str, str]]:
    """The places protected whatever the command opened: (files, trees), resolved."""
    files = {}
    db = os.fspath(default_db())
    for name in (db, *(db + s for s in SQLITE_SIDE_FILES)):
        files[_real(name)] = "the default results database (or a file SQLite keeps beside it)"
    data = data_dir()
    trees = {
        _real(cache_dir()): "abibench's build and input cache",
        _real(PACKAGE_DIR): "abibench's own package (built-in profiles and sources)",
        _real(data / "profiles"): "abibench's kept profiles (in its data directory)",
        _real(data / "fleets"): "the run documents fetched by `abibench fleet run`",
        _real(data / "spool"): "the spools of shared databases (in abibench's data directory)",
    }
    return files, trees


def _inside(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip(os.sep) + os.sep)


def overlap(path: Path | str) -> str | None:
    """What `path` would overwrite (its description), or None when it touches no input."""
    real = _real(path)
    fixed_files, fixed_trees = _fixed()
    for files in (_FILES, fixed_files):
        if real in files:
            return files[real]
    for trees in (_TREES, fixed_trees):
        for tree, what in trees.items():
            if _inside(real, tree):
                return f"inside {what} ({tree})"
    try:
        st = os.stat(real)
    except OSError:
        return None
    found = _INODES.get((st.st_dev, st.st_ino))
    if found is None or not _same_file(found[1], st):
        # A registered file since deleted leaves its inode (and a tmpfs its device number) free
        # for another file: only a file that still is the one registered is a hard link to it.
        return None
    return f"a hard link to {found[0]}"


def _same_file(path: str, st: os.stat_result) -> bool:
    try:
        now = os.stat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def _in_place(raw: str) -> bool:
    """Whether `raw` is written where it is, not replaced: a device or a FIFO (/dev/null), or a
    name of an open descriptor (/dev/stdout, a pipe's /proc/self/fd/1), which a rename cannot
    replace."""
    try:
        kind = os.stat(raw).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(kind) or os.path.abspath(raw).startswith(("/dev/", "/proc/")) \
        or _real(raw).startswith("/proc/")


def check_output(path: Path, option: str) -> Path:
    """The resolved file `path` names, if abibench may write it for `option`; else UsageError
    (exit 2) naming the path and the fix. Checks before anything is measured or written."""
    raw = os.fspath(path)
    if not raw or "\0" in raw:
        raise UsageError(f"{option} {raw!r}: not a usable file name; give a path to a file")
    if raw.endswith(os.sep) or os.path.isdir(raw):
        raise UsageError(f"{option} {raw} is a directory: name a file to write to")
    what = overlap(raw)
    if what is not None:
        raise UsageError(f"{option} {raw} is {what}: abibench never writes over what it reads; "
                         "choose another file")
    if _in_place(raw):
        return Path(raw)
    real = Path(_real(raw))
    parent = real.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {raw}: {parent} is not a writable directory; "
                         "choose another path")
    return real


def check_output_dir(path: Path, option: str) -> Path:
    """The directory `path` names, made if absent, if abibench may write files into it for
    `option` (each file still goes through `write_output`); else UsageError (exit 2) naming the
    path and the fix. Checked before anything is measured, like `check_output`."""
    raw = os.fspath(path)
    if not raw or "\0" in raw:
        raise UsageError(f"{option} {raw!r}: not a usable directory name; give a path to a "
                         "directory")
    what = overlap(raw)
    if what is not None:
        raise UsageError(f"{option} {raw} is {what}: abibench never writes over what it reads; "
                         "choose another directory")
    real = Path(_real(raw))
    if real.exists() and not real.is_dir():
        raise UsageError(f"{option} {raw} is not a directory: name a directory to write into")
    try:
        real.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make {option} {raw}: {exc.strerror or exc}; choose another "
                         "path") from None
    if not os.access(real, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write into {option} {raw}: not a writable directory; choose "
                         "another path")
    return real


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _write_through(target: Path, data: bytes | Iterable[bytes]) -> None:
    """A device or FIFO (/dev/stdout, a pipe) is written as it is: it cannot be renamed over."""
    with open(target, "wb") as fh:
        _write_all(fh, data)


def _write_all(fh: BinaryIO, data: bytes | Iterable[bytes]) -> None:
    """`data` whole, or piece by piece as it is made (a document of 10^6 samples is 511 MiB:
    joined first, it was held three times)."""
    if isinstance(data, bytes):
        fh.write(data)
        return
    for piece in data:
        fh.write(piece)


def write_atomic(target: Path, data: bytes | Iterable[bytes]) -> None:
    """Replace `target` by `data` all at once (abibench's own files too, unchecked); pieces
    that fail half-way leave the old file as it was."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = _new_file_mode()
    # A short name of its own: the target's name may already be as long as a name can be.
    tmp = target.parent / f".abibench-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            _write_all(fh, data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    try:  # the rename itself reaches the disk: best effort (some filesystems refuse)
        dfd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def write_output(path: Path, data: str | bytes | Iterable[str], option: str) -> Path:
    """Write a file a user asked for (checked by `check_output`, then atomically); the path
    written. A failure is UsageError naming the path and the reason; the old file is kept.
    `data` may be pieces of text, written as they are made (never joined)."""
    target = check_output(path, option)
    body: bytes | Iterable[bytes]
    if isinstance(data, str):
        body = data.encode("utf-8")
    elif isinstance(data, bytes):
        body = data
    else:
        body = (piece.encode("utf-8") for piece in data)
    in_place = _in_place(os.fspath(target))
    try:
        if in_place:
            _write_through(target, body)
        else:
            write_atomic(target, body)
    except OSError as exc:
        why = exc.strerror or str(exc)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT) and not in_place:
            why += " (its old content, if any, is kept)"
        raise UsageError(f"cannot write {path}: {why}; choose another path") from None
    return target
