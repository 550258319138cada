"""Content digests of files: what identifies a build, an input or an output across ABIs."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .files import TooLarge, open_regular

CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in chunks (inputs are hundreds of MB). For files
    abibench made or built; a file a profile or a program names goes through sha256_regular."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def sha256_regular(path: Path, limit: int, *, follow: bool = True) -> str:
    """The sha256 of a regular file of at most `limit` bytes (files.open_regular: never a FIFO
    or a device, never a wait), reading no more than that even when the file grows meanwhile:
    TooLarge beyond it. A 20 GB sparse output costs one fstat, not minutes of hashing."""
    h = hashlib.sha256()
    read = 0
    with os.fdopen(open_regular(path, limit, follow=follow), "rb") as fh:
        while chunk := fh.read(min(CHUNK, limit + 1 - read)):
            read += len(chunk)
            if read > limit:
                raise TooLarge(path, read)
            h.update(chunk)
    return h.hexdigest()
