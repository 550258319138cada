"""An answer read from somewhere slow, kept between runs under a key of what it is read from.

Several answers cost far more to read than to keep: which package owns the C library (`dpkg -S`
reads every package's file list), what a .deb ships (decompressing all of it), a program's
stripped size (running strip), an ELF file's headers (pyelftools). Each is kept in the cache as
one small JSON entry, ``{"kept": FORMAT, "key": KEY, "value": VALUE}``, and this module is the
one place such an entry is read or written. What it guarantees, for every cache of that kind:

* the entry is believed only when its ``key`` is exactly the key of the question now (what the
  answer is read from: a file's digest, dpkg's database state, the strip installed, the
  reader's version) and its value passes the caller's shape check: a stale, damaged, truncated,
  foreign or hand-edited entry (any bytes, any JSON, the right key with a wrong-shaped value) is
  read again from its source and rewritten, never taken for an answer;
* it is read only if it is a regular file of at most ``MAX_ENTRY`` bytes (never a FIFO that
  blocks or a device that never ends), as strict JSON (no NaN or Infinity);
* it is made once: a miss takes the entry's lock (`locks.exclusive`) and looks again, so of two
  processes asking at once one reads the source and the other finds its answer;
* it is written whole or not at all (`outputs.write_atomic`: a temporary file renamed over it);
  a write that fails (a full or read-only disk, a lock that cannot be taken) costs only the
  next run a new read, never this one its answer;
* an answer the caller says not to keep (a failed read, a database that changed meanwhile) or
  one not of its own shape is returned and not kept.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from .files import open_regular
from .locks import exclusive
from .outputs import write_atomic
from .text import not_text

T = TypeVar("T")

FORMAT = 1  # the entry's own layout; a change makes every kept entry a miss
MAX_ENTRY = 64 << 20  # a .deb's contents of tens of thousands of paths fit; a runaway file not


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a kept value")


def _text(key: object) -> str:
    return json.dumps(key, sort_keys=True, allow_nan=False)


def _load(entry: Path, key_text: str, shape: Callable[[object], bool]) -> tuple[object] | None:
    """(value,) of the entry when it holds this key and a value of the shape; else None."""
    try:
        with os.fdopen(open_regular(entry, MAX_ENTRY), "rb") as fh:
            raw = fh.read(MAX_ENTRY + 1)
        doc = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested too deep
        return None
    if not isinstance(doc, dict) or set(doc) != {"kept", "key", "value"} or \
            doc["kept"] != FORMAT or type(doc["kept"]) is not int:
        return None
    try:
        if _text(doc["key"]) != key_text:
            return None
    except (ValueError, RecursionError):
        return None
    value = doc["value"]
    # A hand-made entry may spell a lone surrogate ("\ud800"): not text, so not an answer.
    return (value,) if shape(value) and not not_text(value) else None


def _store(entry: Path, key: object, value: object) -> None:
    """Written whole or not at all; a failure only leaves the next asker a miss."""
    try:
        data = json.dumps({"kept": FORMAT, "key": key, "value": value}, allow_nan=False)
    except (TypeError, ValueError):  # not JSON (a NaN, a set): returned, never kept
        return
    with contextlib.suppress(OSError):
        write_atomic(entry, data.encode("utf-8"))


def answer(entry: Path, key: object, shape: Callable[[object], bool], read: Callable[[], T],
           keep: Callable[[T], bool] = lambda _: True) -> T:
    """What ``read()`` says, kept at ``entry`` under ``key`` (JSON: what the answer is read
    from). A kept value is returned only when its key is this one and ``shape(value)`` holds;
    ``shape`` must accept exactly what ``read`` returns when kept (it is the type check of
    ``T``). ``keep(value)`` says whether a fresh answer may be kept (default: always); one
    ``shape`` refuses is returned and not kept. Exceptions of ``read`` reach the caller."""
    key_text = _text(key)
    found = _load(entry, key_text, shape)
    if found is not None:
        return cast(T, found[0])
    try:
        lock = exclusive(entry)
        lock.__enter__()
    except OSError:  # no lock here (a read-only cache): answered, not kept
        return read()
    try:
        found = _load(entry, key_text, shape)  # another maker may have kept it meanwhile
        if found is not None:
            return cast(T, found[0])
        value = read()
        if keep(value) and shape(value):
            _store(entry, key, value)
        return value
    finally:
        lock.__exit__(None, None, None)
