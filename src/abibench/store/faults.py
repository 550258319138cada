"""What goes wrong under the results database, as one line naming the file and the fix.

Every public method of the store passes a failure through here, so no `sqlite3.Error` reaches
the user as a traceback and each kind of fault has its own exit code (errors.py). SQLite's error
code (Python 3.11's `sqlite_errorcode`) decides; the message text only where no code is given.
What is stored is never touched by any of this: SQLite rolls back the statement that failed,
and every earlier sample was committed on its own.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from ..errors import (
    EXIT_HOST,
    EXIT_STORE_CORRUPT,
    EXIT_STORE_FULL,
    EXIT_STORE_LOCKED,
    EXIT_STORE_READONLY,
    EXIT_USAGE,
    StoreError,
    StoreLost,
)

TIMEOUT_ENV = "ABIBENCH_DB_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0

# Below this much free space an I/O error is taken for a full disk: SQLite reports ENOSPC from
# some calls (extending the shared-memory index, truncating) as an I/O error, not as SQLITE_FULL.
_NEARLY_FULL = 64 * 1024


def busy_timeout() -> float:
    """How long to wait for another process's lock (seconds): ABIBENCH_DB_TIMEOUT, else 30."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        raise StoreError(f"{TIMEOUT_ENV}={text!r} is not a number of seconds: set it like "
                         f"{TIMEOUT_ENV}=30 or unset it", EXIT_USAGE) from None
    if not value >= 0:
        raise StoreError(f"{TIMEOUT_ENV}={text!r} must be 0 or more seconds", EXIT_USAGE)
    return value


def _one_line(text: str) -> str:
    return " ".join(text.split())


def full(path: Path, detail: str) -> StoreError:
    return StoreError(f"results database {path}: the disk is full ({_one_line(detail)}); every "
                      "sample committed before is kept: free space on its filesystem or choose "
                      "another with --db", EXIT_STORE_FULL)


def readonly(path: Path, detail: str) -> StoreError:
    return StoreError(f"results database {path} cannot be written ({_one_line(detail)}): make the "
                      "file, its directory and its filesystem writable or choose another with "
                      "--db (runs, report, compare and export only read it)", EXIT_STORE_READONLY)


def corrupt(path: Path, detail: str) -> StoreError:
    return StoreError(f"results database {path} is corrupt ({_one_line(detail)}) and was left as "
                      "it is: restore a copy, or move it aside and use another --db (`sqlite3 "
                      f"{path} .recover` may save what it holds)", EXIT_STORE_CORRUPT)


def locked(path: Path, timeout: float) -> StoreError:
    return StoreError(f"results database {path} is locked by another process (waited "
                      f"{timeout:g}s; {TIMEOUT_ENV} sets how long): let that process finish or "
                      "choose another with --db", EXIT_STORE_LOCKED)


def lost(path: Path, detail: str) -> StoreLost:
    """The file at path is no longer the database this process writes (see `identity_problem`)."""
    reason = f"results database {path} {detail} while this process wrote it"
    return StoreLost(f"{reason}: what it commits no longer reaches a database anyone can "
                     "open at that path; choose a --db nothing else deletes or overwrites", reason)


# The first 16 bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"

Identity = tuple[int, int]  # (st_dev, st_ino): which file a path or a descriptor is


def identity_of(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino)


def identity_problem(path: Path, fd: int, wal: Identity | None) -> str | None:
    """Why the file at path is no longer the one open as fd (and its log the one recorded at
    open), or None while it is: deleted, renamed away, replaced by another file, or overwritten
    in place so that its header is no SQLite header. What SQLite writes after any of these goes
    to a file no other process will open (or into garbage), so every commit asks this."""
    opened = os.fstat(fd)
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return "was deleted (or moved away)"
    if identity_of(now) != identity_of(opened):
        return "was replaced by another file"
    if opened.st_nlink == 0:
        return "was deleted (or moved away)"
    if os.pread(fd, len(SQLITE_MAGIC), 0) != SQLITE_MAGIC:
        return "was overwritten (its first bytes are no longer a SQLite header)"
    if wal is not None:
        log = path.with_name(path.name + "-wal")
        try:
            if identity_of(os.stat(log)) != wal:
                return f"had its log {log} replaced"
        except FileNotFoundError:
            return f"had its log {log} deleted"
    return None


def _writable(path: Path) -> bool:
    """Whether the database and the side files SQLite creates beside it can be written.

    access(2) answers EROFS for a read-only mount even to root, who passes every permission.
    """
    if path.exists() and not os.access(path, os.W_OK):
        return False
    wal = path.with_name(path.name + "-wal")
    return wal.exists() or os.access(path.parent, os.W_OK)


def _nearly_full(path: Path) -> bool:
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < _NEARLY_FULL


def _code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None  # the primary code of an extended one


def _code_from_text(text: str) -> int | None:
    """For errors raised without a code (older bindings, or the module itself)."""
    for needle, code in (("disk is full", sqlite3.SQLITE_FULL),
                         ("readonly database", sqlite3.SQLITE_READONLY),
                         ("not a database", sqlite3.SQLITE_NOTADB),
                         ("malformed", sqlite3.SQLITE_CORRUPT),
                         ("database is locked", sqlite3.SQLITE_BUSY)):
        if needle in text:
            return code
    return None


def translate(exc: sqlite3.Error, path: Path, timeout: float) -> StoreError:
    """The one-line error of a failed SQLite call on the database at path."""
    detail = str(exc) or type(exc).__name__
    code = _code(exc)
    if code is None:
        code = _code_from_text(detail)
    if code == sqlite3.SQLITE_FULL:
        return full(path, detail)
    if code == sqlite3.SQLITE_READONLY:
        return readonly(path, detail)
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return corrupt(path, detail)
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return locked(path, timeout)
    if code == sqlite3.SQLITE_CANTOPEN and not _writable(path):
        return readonly(path, f"{detail}: the file or its directory is read-only, so SQLite cannot "
                        "create its -wal and -shm files")
    if code == sqlite3.SQLITE_IOERR:
        if _nearly_full(path):
            return full(path, detail)
        return StoreError(f"results database {path}: {_one_line(detail)}: check the disk "
                          "(dmesg) or choose another with --db", EXIT_HOST)
    return StoreError(f"results database {path}: {_one_line(detail)}: check the file or choose "
                      "another with --db", EXIT_USAGE)


def from_os(exc: OSError, path: Path) -> StoreError:
    """An OSError met while preparing the database (its directory, its side files)."""
    detail = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return full(path, detail)
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return readonly(path, detail)
    return StoreError(f"cannot open results database {path}: {_one_line(detail)}; choose another "
                      "with --db", EXIT_USAGE)
