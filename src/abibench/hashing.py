"""Content digests of files: what identifies a build, an input or an output across ABIs."""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in chunks (inputs are hundreds of MB)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()
