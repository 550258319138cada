"""An exported run document read as columns: what the summary views ask, with no Sample made
for a sample that counts (issue 30).

`compare RUN FILE` read the file's side as records, a Sample per sample (10^6 samples: 74 s and
2.7 GB, where the stored side, read as columns, took a third of that). Here the file is read
by the import's own streamed reader (store/exchange.py's `stream_file`: the head checked as a
whole document's, each sample checked by the codec's strict decoder and runcheck's rules as it
comes, refusals with their `$.path`; no digest, which `compare` never checked), asking for
each sample's fields rather than its record: store/shapes.py's plan gives them without a record
when it is sure of them, and any other sample is made and checked as a record, exactly as
before. What is kept of them is what store/columns.ColumnDoc keeps of a stored run: for each
(workload, target) the counted samples' `FIELDS` as columns (their place in the file standing
for the row id), the samples that do not count as records, the counts. The document *is* a
`ColumnDoc` (its questions answered by the same code over a `Columns` built here), so there is
one definition of every answer.

Its `samples`, walked only by a view that shows samples or a question no column answers, are
the file read again as records (`load_file`'s, the general path), held to the identity of the
file first read: a file changed in between is refused, never mixed with what was counted.
tests/invariants/test_file_columns.py holds every answer and whole reports to `load_file`'s
document on generated files, refusals and exit codes included.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..records import RunDoc, Sample
from ..walked import Walked
from .batch import Fields
from .columns import FIELDS, ColumnDoc, Columns
from .exchange import SchemaError, stream_file
from .gcpause import paused_collector
from .schema import positional

_INDEX = {f.name: i for i, f in enumerate(dataclasses.fields(Sample))}
# What decides where a sample goes: its series, and what Sample.counted reads.
_KEY_NAMES = ("workload", "target", "status", "warmup", "kind", "discarded")
_KEY = operator.itemgetter(*(_INDEX[n] for n in _KEY_NAMES))
_KEEP = operator.itemgetter(*(_INDEX[f] for f in FIELDS))  # a counted sample's columns
_MAKE: Callable[[Any], Sample] = positional(Sample)  # Sample(*fields): the plan's own maker
# Fields whose values repeat (texts, round numbers): one object for each value, as the stored
# reader shares texts. JSON gives each sample fresh ones, the metrics' keys too (a million
# samples' "rate" and "time" were 106 MiB).
_SHARED = frozenset({"design", "tree_memory", "check", "round"})
_CHUNK = 4096  # rows of a series held before they are moved into its columns (20 series of
# 50,000 rows held whole were 220 MiB at 10^6)


class _Series:
    """One (workload, target)'s counted samples: rows held a chunk at a time, then moved into
    one list per field (`_SHARED` values and the metrics' keys shared)."""

    def __init__(self, first: int, shared: dict[Any, Any]) -> None:
        self.first = first
        self.ids: list[int] = []
        self.rows: list[tuple[Any, ...]] = []
        self.cols: list[list[Any]] = [[] for _ in FIELDS]
        self._shared = shared

    def flush(self) -> None:
        if not self.rows:
            return
        for f, col, values in zip(FIELDS, self.cols, zip(*self.rows, strict=True),
                                  strict=True):
            if f == "metrics":
                col.extend(map(self._keys_shared, values))
            else:
                col.extend(map(self._shared.setdefault, values, values) if f in _SHARED
                           else values)
        self.rows = []

    def extend(self, ids: list[int], cols: list[Sequence[Any]]) -> None:
        """Samples given as columns (`FIELDS`' order), after those held as rows. Their
        metrics' keys are not made again: one scan of the stream made a list's samples, and
        it gives equal keys one object."""
        self.flush()
        self.ids.extend(ids)
        for f, col, values in zip(FIELDS, self.cols, cols, strict=True):
            col.extend(map(self._shared.setdefault, values, values) if f in _SHARED
                       else values)

    def _keys_shared(self, m: dict[str, Any]) -> dict[str, Any]:
        """The same mapping (keys in the same order, the same values), its keys shared."""
        return dict(zip(map(self._shared.setdefault, m, m), m.values(), strict=True))

    def columns(self) -> dict[str, tuple[Any, ...]]:
        self.flush()
        out = {"id": tuple(self.ids)}
        for f, col in zip(FIELDS, self.cols, strict=True):
            out[f] = tuple(col)
        self.cols = []
        return out


class _Taker:
    """What `stream_file` hands the checked samples to: each sample's fields sorted into its
    series' columns or, when it does not count, kept as a record with its place."""

    def __init__(self) -> None:
        self.series: dict[tuple[str, str], _Series] = {}
        self.others: list[tuple[int, Sample]] = []
        self.total = self.warmup = self.failed = 0
        self._shared: dict[Any, Any] = {}

    def take(self, head: RunDoc, checked: Iterator[Any]) -> tuple[str, int]:
        where: dict[tuple[Any, ...], _Series | None] = {}  # by _KEY; None: does not count
        n = 0
        for values in checked:
            if type(values) is Fields:
                self._batch(values, n, where)
                n += values.n
                continue
            key = _KEY(values)
            series = where.get(key, _UNSEEN)
            if series is _UNSEEN:
                series = where[key] = self._series(values, n)
            if series is None:
                self.others.append((n, _MAKE(values)))
            else:
                series.ids.append(n)
                series.rows.append(_KEEP(values))
                if len(series.rows) == _CHUNK:
                    series.flush()
            n += 1
        self.total = n
        return head.run.id, n

    def _batch(self, batch: Fields, n: int, where: dict[tuple[Any, ...], _Series | None]
               ) -> None:
        """A list of samples checked by columns (store/batch.py), the first the n-th of the
        file: each key's samples into its series' columns or, when they do not count, made
        into records, in the file's order."""
        cols = batch.columns
        keys = list(zip(*(cols[name] for name in _KEY_NAMES), strict=True))
        places: dict[tuple[Any, ...], list[int]] = {}
        first: dict[tuple[Any, ...], int] = {}
        # each sample's key as the place of its key's first sample (a pass in C), then each
        # key's places by comparing small ints (a series of a batch: one pass in C each)
        codes = list(map(first.setdefault, keys, itertools.count()))
        if len(first) == 1:
            places[keys[0]] = list(range(batch.n))
        else:
            for key, code in first.items():
                places[key] = list(itertools.compress(range(batch.n), map(code.__eq__, codes)))
        others: list[tuple[int, Sample]] = []
        for key, at in places.items():  # in the order of each key's first sample
            series = where.get(key, _UNSEEN)
            if series is _UNSEEN:
                series = where[key] = self._series(_row(cols, at[0]), n + at[0])
            if series is None:
                others.extend((n + j, _MAKE(_row(cols, j))) for j in at)
            else:
                series.extend([n + j for j in at], [_picked(cols[f], at, batch.n)
                                                     for f in FIELDS])
        others.sort(key=operator.itemgetter(0))
        self.others.extend(others)

    def _series(self, values: tuple[Any, ...], i: int) -> _Series | None:
        """The series of the samples of `values`'s key (`values` the first of them, the i-th
        of the file); None when they do not count (decided by Sample.counted itself, on the
        first one's record: the key holds everything it reads)."""
        first = _MAKE(values)
        if not first.counted:
            return None
        at = (first.workload, first.target)
        if at not in self.series:
            self.series[at] = _Series(i, self._shared)
        return self.series[at]

    def counts(self) -> None:
        """n_warmup and n_failed: the counted samples are neither; the others are records."""
        self.warmup = sum(1 for _, s in self.others if s.warmup)
        self.failed = sum(1 for _, s in self.others if s.status != "ok")


_UNSEEN: Any = object()
_NAMES = tuple(f.name for f in dataclasses.fields(Sample))


def _row(cols: dict[str, Sequence[Any]], j: int) -> tuple[Any, ...]:
    """The j-th sample of a list given by columns, as its fields' tuple (the record's order)."""
    return tuple(cols[name][j] for name in _NAMES)


def _picked(col: Sequence[Any], at: list[int], n: int) -> Sequence[Any]:
    """The values of `col` at the places `at` (all n of them: the column itself)."""
    if len(at) == n:
        return col
    if len(at) == 1:
        return [col[at[0]]]
    got: tuple[Any, ...] = operator.itemgetter(*at)(col)
    return got


class FileColumns(Columns):
    """`Columns` of an exported document (the attributes ColumnDoc reads), from a `_Taker`."""

    def __init__(self, taker: _Taker) -> None:  # not the store's: no super().__init__
        self.groups = {at: s.columns() for at, s in taker.series.items()}
        self.first = {at: s.first for at, s in taker.series.items()}
        self.targets: dict[str, list[str]] = {}
        for workload, target in sorted(self.first, key=self.first.__getitem__):
            self.targets.setdefault(workload, []).append(target)
        self.others: dict[str, list[Sample]] = {}
        self.other_ids: dict[str, list[int]] = {}
        for i, s in taker.others:
            self.others.setdefault(s.workload, []).append(s)
            self.other_ids.setdefault(s.workload, []).append(i)
        taker.counts()
        self.total, self.warmup, self.failed = taker.total, taker.warmup, taker.failed


class _Enough(Exception):
    """The samples asked for have been read: the rest of the file is not."""


def _identity(path: Path) -> tuple[int, ...] | None:
    """What says a file is still the one read: device, inode, size and time of change."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _records(path: Path, want: int) -> tuple[list[Sample], bool]:
    """The file's first `want` samples as `load_file` makes them, and whether they are all."""
    got: list[Sample] = []

    def keep(head: RunDoc, checked: Iterator[Sample]) -> tuple[str, int]:
        for s in checked:
            got.append(s)
            if len(got) == want:
                raise _Enough
        return head.run.id, len(got)
    try:
        stream_file(path, keep, digest=False)
    except _Enough:
        return got, False
    return got, True


class FileSamples(Walked[Sample]):
    """The file's samples as records, read again when walked (the general path: `load_file`'s
    reading) and kept once read. A view that shows the first rows reads only the first ones,
    in passes that read 16 times further each time. The file must still be the one counted
    (the same file, size and times of change before each pass: a write, `touch` included,
    changes its ctime; and the same count of samples), else it is refused."""

    _FIRST = 256

    def __init__(self, path: Path, n: int, identity: tuple[int, ...] | None) -> None:
        self._path, self._n, self._identity = path, n, identity
        self._held: list[Sample] = []  # the first samples, as far as a walk has read them
        self._whole = False  # ... which are all of them

    def __len__(self) -> int:
        return self._n

    def _changed(self) -> SchemaError:
        return SchemaError(f"{self._path}: changed while it was read (it is no longer the "
                           "document counted): read it again when nothing writes it")

    def _read(self, want: int) -> None:
        if _identity(self._path) != self._identity:
            raise self._changed()
        got, whole = _records(self._path, want)
        if len(got) > self._n or (whole and len(got) != self._n):
            raise self._changed()
        self._held, self._whole = got, whole

    def __iter__(self) -> Iterator[Sample]:
        done = 0
        while True:
            held = self._held
            yield from held[done:] if done else held
            done = len(held)
            if self._whole:
                return
            self._read(max(self._FIRST, 16 * done))


def load_file_columns(path: Path) -> ColumnDoc:
    """An exported run document, checked as `load_file` checks it, as a `ColumnDoc`: its
    head as `load_file` makes it, its samples as columns (and as records read again from the
    file on demand)."""
    taker = _Taker()
    identity = _identity(path)  # before the reading: a change during it is one after this
    with paused_collector():  # millions of values, no cycle among them (store/gcpause.py)
        head, _, _ = stream_file(path, taker.take, fields=True, digest=False)  # no digest
        cols = FileColumns(taker)
    doc = ColumnDoc(run=head.run, host=head.host,
                    samples=FileSamples(path, cols.total, identity),  # type: ignore[arg-type]
                    artifacts=head.artifacts, statuses=head.statuses, warnings=head.warnings,
                    outcomes=head.outcomes, system_boots=head.system_boots)
    doc.__dict__["_columnar"] = cols
    return doc

