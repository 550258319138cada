"""Reading a file a user named (a profile, an exported run, a [validate] output, a [run]
stdin): only a regular file, never more than a limit, and never a wait. A FIFO would block the
open or the read until a writer came, and a device such as /dev/zero would never end; both are
refused instead of read. `open_regular` is the one way such a file is opened: read_regular,
hashing.sha256_regular and the sample launcher's stdin all go through it."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

from .outputs import protect


class NotRegular(OSError):
    """The path is a FIFO, a socket or a device; str() says which."""


class TooLarge(OSError):
    """The file holds more than the limit; `size` is at least that many bytes."""

    def __init__(self, path: Path, size: int) -> None:
        super().__init__(errno.EFBIG, f"{size} bytes", str(path))
        self.size = size


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def kind_problem(mode: int) -> str | None:
    """What a file of this mode is, when it is not a regular file; None for a regular file."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return None


def existing_kind_problem(path: Path) -> str | None:
    """kind_problem of the file at path (links followed), for a check at load; None when it is
    a regular file or does not exist (yet)."""
    try:
        return kind_problem(os.stat(path).st_mode)
    except OSError:
        return None


def open_regular(path: Path, limit: int | None, *, follow: bool = True) -> int:
    """A blocking, read-only descriptor of the regular file at path, holding at most `limit`
    bytes when it was opened (None: any size). The caller closes it.

    Raises FileNotFoundError, IsADirectoryError and PermissionError as open() does, NotRegular
    for anything but a file (with follow=False a symbolic link too: a path checked before is
    opened without following a link planted since), and TooLarge beyond `limit`."""
    # O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting.
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise NotRegular(errno.ELOOP, "a symbolic link, not a file", str(path)) from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        problem = kind_problem(st.st_mode)
        if problem is not None:
            raise NotRegular(errno.EINVAL, f"{problem}, not a file", str(path))
        if limit is not None and st.st_size > limit:
            raise TooLarge(path, st.st_size)
        # A regular file never blocks; whoever reads it (a program's stdin) gets a plain one.
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    # What a command reads it must never write: its reports are checked against this file.
    # Here, where every user file is opened (read whole, streamed, hashed or given as stdin),
    # so that no reader can forget it (the streamed import did: compare FILE --csv FILE).
    protect(path, "a file this command reads")
    return fd


def read_regular(path: Path, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of the regular file at path, if it holds at most `limit` bytes.

    Raises as open_regular does; what is read is bounded too (/proc files and files that grow
    do not report their size)."""
    with os.fdopen(open_regular(path, limit, follow=follow), "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(path, len(data))
    return data
