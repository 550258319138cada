"""One maker for each shared cache entry: an exclusive lock held while it is made.

The caches (builds, Debian sources and sysroots, abibench's own tools) are shared by every
abibench process on the machine: two runs, a fleet's hosts on one machine, the test suite's
parallel workers. Each entry is already published by one atomic rename, so a second process never
sees half of one; without a lock, though, both would make it, and a build of lame or a Debian
sysroot costs minutes. ``made_once`` serialises the makers of ONE entry: the first makes it, the
others wait on the lock and then find it made. Makers of different entries do not wait for each
other.

The lock is ``flock(2)`` on a small file near the entry (``../.locks/PARENT--NAME.lock``): the
kernel releases it
when its holder exits, however it exits (a SIGKILL included), so a dead maker never blocks the
next one, and the file itself is harmless to leave behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def lock_path(entry: Path) -> Path:
    """The lock file of a cache entry: in a hidden `.locks` directory one level up, so that the
    entry's own directory holds only entries (what lists it sees nothing else)."""
    return entry.parent.parent / ".locks" / f"{entry.parent.name}--{entry.name}.lock"


@contextlib.contextmanager
def exclusive(entry: Path) -> Iterator[None]:
    """Hold the entry's lock while the block runs (waiting for a holder in another process)."""
    with _locked(entry, wait=True):
        yield


@contextlib.contextmanager
def exclusive_if_free(entry: Path) -> Iterator[bool]:
    """Hold the entry's lock while the block runs if no other process holds it: yields True
    then, else False at once (for a sweep that must leave an entry in use alone)."""
    with _locked(entry, wait=False) as held:
        yield held


@contextlib.contextmanager
def _locked(entry: Path, wait: bool) -> Iterator[bool]:
    path = lock_path(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing the only descriptor releases the lock


def made_once(entry: Path, found: Callable[[], T | None], make: Callable[[], T]) -> T:
    """``found()`` if the entry is already made, else ``make()`` under the entry's lock; a process
    that waited for the lock looks again first and makes nothing when another one just did."""
    have = found()
    if have is not None:
        return have
    with exclusive(entry):
        have = found()
        return have if have is not None else make()
