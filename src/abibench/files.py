"""Reading a file a user named (a profile, an exported run): only a regular file, never more
than a limit, and never a wait. A FIFO would block the read until a writer came, and a device
such as /dev/zero would never end; both are refused instead of read."""

from __future__ import annotations

import errno
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


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at path, if it holds at most `limit` bytes.

    Raises FileNotFoundError, IsADirectoryError and PermissionError as open() does, NotRegular
    for anything but a file, and TooLarge when there is more than `limit` (what is read is
    bounded too: /proc files and files that grow do not report their size)."""
    # O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    # What a command reads it must never write: its reports are checked against this file.
    protect(path, "a file this command reads")
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        for test, kind in _KINDS:
            if test(mode):
                raise NotRegular(errno.EINVAL, f"{kind}, not a file", str(path))
        size = os.fstat(fd).st_size
        if size > limit:
            raise TooLarge(path, size)
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(path, len(data))
    return data
