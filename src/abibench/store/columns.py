"""A stored run read as columns: what the summary views ask, with no Sample made (issue 30).

The terminal report, the HTML, Markdown and results CSV, explain, advise and compare read a
run through a handful of questions (records.RunDoc: a target's values of a metric, the pairs
by round, one field of its counted samples, the samples that do not count, the output
checks, the counts). `ColumnDoc` answers them from columns read straight from SQL: for each
(workload, target) one query through the index on (run_id, workload, target), the counted
rows only, only the fields the questions read, each column a tuple. The samples that do not
count (warm-ups, failures, counting runs, baselines: a few per target) are read as records,
and `samples` itself is a sequence that reads the run's records from the store when a view
walks them (the per-sample views, and any question a column does not answer), so a question
this module does not know is answered by the general code, never wrongly.

tests/invariants/test_columnar.py holds every answer, and whole reports, to the record-based
document's on generated runs (docs/reliability.md, "A fast path gives exactly what its
definition gives").
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from ..codec import optional_of, spec
from ..jsontext import take
from ..records import RunDoc, Sample
from ..walked import Walked
from .finite import check_columns, check_sample
from .gcpause import paused_collector
from .rowstream import FIELD_NAMES, field_columns, id_field_columns, make_sample
from .rowstream import metrics_column as _metrics
from .schema import SAMPLE_COLUMNS, sample_reader
from .sql import SqlStore, guarded

T = TypeVar("T")

# Sample.counted, in SQL: the one rule, on the stored columns (warmup is stored as 0/1).
COUNTED = "status='ok' AND warmup=0 AND kind='timed' AND discarded IS NULL"

# The fields the summary views read of counted samples (records.RunDoc.column): pairing's
# (round, design, covariate), every built-in metric's field and the custom metrics, and what
# the conditions, the validation and the emulation notes read. `id` orders the checks.
FIELDS = ("round", "design", "covariate", "repeat", "foreign_cpu_s", "steal_s", "clock_mhz",
          "temp_c", "throttled", "tree_memory", "emulated", "check", "wall_s", "user_s",
          "sys_s", "max_rss_kb", "minflt", "majflt", "tree_peak_rss_kb", "metrics")

_BY_FIELD = {c.field: c for c in SAMPLE_COLUMNS}
_FLAGS = frozenset(f.name for f in spec(Sample) if optional_of(f.type)[1] is bool)  # as stored: 0/1


def _convert(field: str, raw: Sequence[Any], shared: dict[Any, Any]) -> tuple[Any, ...]:
    """One column's stored values as the Sample's field holds them (schema's conversions)."""
    col = _BY_FIELD[field]
    if field == "metrics":
        return _metrics(raw, col.from_sql)
    if col.plain and col.type == "TEXT":
        return tuple(map(shared.setdefault, raw, raw))  # equal texts shared, as the reader
    if col.plain:
        return tuple(raw)
    if field in _FLAGS and None not in raw:
        return tuple(map(bool, raw))  # a flag's from_sql of a value that is not None: bool
    return tuple(map(col.from_sql, raw))


class Columns:
    """One run's counted samples as columns per (workload, target), and its other samples;
    `rows`: every sample's fields as columns in the order of the run, when it was read so
    (`scanned`), else None."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], dict[str, tuple[Any, ...]]] = {}
        self.first: dict[tuple[str, str], int] = {}
        self.targets: dict[str, list[str]] = {}
        self.others: dict[str, list[Sample]] = {}
        self.other_ids: dict[str, list[int]] = {}
        self.total = self.warmup = self.failed = 0
        self.rows: list[tuple[Any, ...]] | None = None

    def order_targets(self) -> None:
        for workload, target in sorted(self.first, key=self.first.__getitem__):
            self.targets.setdefault(workload, []).append(target)


def queried(store: SqlStore, run_id: str) -> Columns:
    """The counted samples' columns by one query per (workload, target), through the index on
    (run_id, workload, target): only the fields the questions read, of the counted rows."""
    out = Columns()
    have = {d[0] for d in store.execute("SELECT * FROM samples WHERE 0=1").description}
    present = [f for f in FIELDS if _BY_FIELD[f].name in have]
    pairs = list(store.tuples("SELECT DISTINCT workload, target FROM samples WHERE run_id=?",
                              (run_id,)))
    with paused_collector():
        _query_groups(store, run_id, out, pairs, present)
    out.order_targets()
    out.others, out.other_ids = _others(store, run_id, have)
    total, warmup, failed = next(iter(store.tuples(
        # named: PostgreSQL's rows are mappings, where three unnamed sums are one key
        "SELECT COUNT(*) AS total, "
        "COALESCE(SUM(CASE WHEN warmup != 0 THEN 1 ELSE 0 END), 0) AS warmups, "
        "COALESCE(SUM(CASE WHEN status != 'ok' THEN 1 ELSE 0 END), 0) AS failures "
        "FROM samples WHERE run_id=?", (run_id,))))
    out.total, out.warmup, out.failed = int(total), int(warmup), int(failed)
    return out


def _query_groups(store: SqlStore, run_id: str, out: Columns, pairs: list[Sequence[Any]],
                  present: list[str]) -> None:
    """`queried`'s columns: one query per (workload, target), the counted rows only."""
    names = ", ".join(["id", *(_BY_FIELD[f].name for f in present)])
    shared: dict[Any, Any] = {}
    for workload, target in pairs:
        rows = list(store.tuples(
            f"SELECT {names} FROM samples WHERE run_id=? AND workload=? AND target=? AND "
            f"{COUNTED} ORDER BY id", (run_id, workload, target)))
        if not rows:
            continue
        raw = list(zip(*rows, strict=True))
        del rows
        cols = {"id": raw[0]}
        for j, f in enumerate(present, 1):
            cols[f] = _convert(f, raw[j], shared)
        n = len(raw[0])
        for f in FIELDS:
            if f not in cols:  # a column this database predates: the field's default
                col = _BY_FIELD[f]
                cols[f] = tuple(col.from_sql(col.default) for _ in range(n))
        check_columns(run_id, workload, target, cols)
        out.groups[(workload, target)] = cols
        out.first[(workload, target)] = raw[0][0]


_AT = {f: i for i, f in enumerate(FIELD_NAMES)}
_SHARED = frozenset(_AT[c.field] for c in SAMPLE_COLUMNS if c.plain and c.type == "TEXT")


def scanned(store: SqlStore, run_id: str) -> Columns:
    """Every sample's fields as columns in the order of the run, from one pass over its rows
    (store/rowstream.id_field_columns: the values the reader converts, the non-finite refusal
    on each batch), and from them the counted samples' columns per (workload, target) and the
    other samples as records: what `queried` reads, and the rows the JSON report and the
    samples CSV write, read once."""
    ids: list[tuple[int, ...]] = []
    parts: list[list[tuple[Any, ...]]] = [[] for _ in FIELD_NAMES]  # each field's batches
    shared: dict[Any, Any] = {}
    with paused_collector():
        for batch_ids, cols in id_field_columns(store, run_id):
            ids.append(batch_ids)
            for at, col in enumerate(cols):
                if at in _SHARED and len(set(col)) * 2 <= len(col):
                    col = tuple(map(shared.setdefault, col, col))
                parts[at].append(col)
        full = [tuple(itertools.chain.from_iterable(p)) for p in parts]
        del parts, shared
        return _split(run_id, tuple(itertools.chain.from_iterable(ids)), full)


def _split(run_id: str, ids: tuple[int, ...], full: list[tuple[Any, ...]]) -> Columns:
    """`scanned`'s columns per (workload, target) of the counted rows (Sample.counted, the
    rule COUNTED says in SQL), and the others as records."""
    out = Columns()
    out.rows = full
    status, warmup, kind, discarded = (full[_AT[f]] for f in ("status", "warmup", "kind",
                                                              "discarded"))
    counted = list(map(_counted, status, warmup, kind, discarded))
    where: dict[tuple[str, str] | None, list[int]] = {}
    for i, pair in enumerate(zip(full[_AT["workload"]], full[_AT["target"]], strict=True)):
        where.setdefault(pair if counted[i] else None, []).append(i)
    for key, at in where.items():
        if key is None:
            continue
        pick = take(at)
        cols = {"id": pick(ids), **{f: pick(full[_AT[f]]) for f in FIELDS}}
        check_columns(run_id, key[0], key[1], cols)
        out.groups[key] = cols
        out.first[key] = ids[at[0]]
    out.order_targets()
    for i in where.get(None, ()):
        s = check_sample(make_sample(tuple(c[i] for c in full)))
        out.others.setdefault(s.workload, []).append(s)
        out.other_ids.setdefault(s.workload, []).append(ids[i])
    out.total = len(ids)
    out.warmup = sum(map(bool, warmup))
    out.failed = len(ids) - status.count("ok")
    return out


def _counted(status: Any, warmup: Any, kind: Any, discarded: Any) -> bool:
    """COUNTED (Sample.counted) on a row's converted values."""
    return status == "ok" and not warmup and kind == "timed" and discarded is None


def _others(store: SqlStore, run_id: str, have: set[str],
            ) -> tuple[dict[str, list[Sample]], dict[str, list[int]]]:
    """The samples that do not count, as records by workload, and their row ids."""
    names = [c.name for c in SAMPLE_COLUMNS if c.name in have]
    read = sample_reader(names)
    by: dict[str, list[Sample]] = {}
    ids: dict[str, list[int]] = {}
    for row in store.tuples(f"SELECT id, {', '.join(names)} FROM samples WHERE run_id=? AND "
                            f"NOT ({COUNTED}) ORDER BY id", (run_id,)):
        s = check_sample(read(row[1:]))
        by.setdefault(s.workload, []).append(s)
        ids.setdefault(s.workload, []).append(row[0])
    return by, ids


def translated(store: SqlStore, items: Iterator[T]) -> Iterator[T]:
    """`items` (read from the store), each failure of the engine a StoreError (as `guarded`
    makes it): records and columns are read after load_columns has returned, while a view
    walks them."""
    while True:
        try:
            item = next(items)
        except StopIteration:
            return
        except Exception as exc:
            error = store.translate(exc)
            if error is None:
                raise
            raise error from exc
        yield item


class StoredSamples(Walked[Sample]):
    """A stored run's samples as records, read from the store when they are walked (in the
    order of the run: store.iter_samples); nothing is held. They can be read as columns too
    (walked.Columnar: the JSON report's and the samples CSV's rows, no record made)."""

    def __init__(self, store: SqlStore, run_id: str, cols: Columns) -> None:
        self._store, self._run_id, self._cols = store, run_id, cols

    def __len__(self) -> int:
        return self._cols.total

    def __iter__(self) -> Iterator[Sample]:
        return translated(self._store, self._store.iter_samples(self._run_id))

    def field_columns(self, size: int) -> Iterator[list[tuple[Any, ...]]]:
        rows = self._cols.rows
        if rows is not None:  # read already (`scanned`)
            return ([c[i:i + size] for c in rows] for i in range(0, self._cols.total, size))
        return translated(self._store, field_columns(self._store, self._run_id, size))

    def metric_names(self) -> set[str]:
        """From the columns already read: the counted samples' metrics and the others'."""
        cols = self._cols
        names: set[str] = set()
        for group in cols.groups.values():
            names.update(*group["metrics"])
        for others in cols.others.values():
            names.update(*(s.metrics for s in others))
        return names


class ColumnDoc(RunDoc):
    """A stored run whose questions are answered from `Columns` (see the module's doc). Made
    only by `load_columns`; a copy made by `dataclasses.replace` has no columns and is the
    record-based document of its (new) samples."""

    def _columns(self) -> Columns | None:
        got: Columns | None = self.__dict__.get("_columnar")
        return got

    def column(self, workload: str, target: str, name: str) -> tuple[Any, ...]:
        cols = self._columns()
        if cols is None or name not in FIELDS:
            return super().column(workload, target, name)
        group = cols.groups.get((workload, target))
        return group[name] if group is not None else ()

    def counted_targets(self, workload: str) -> list[str]:
        cols = self._columns()
        if cols is None:
            return super().counted_targets(workload)
        return list(cols.targets.get(workload, ()))

    def n_counted(self) -> int:
        cols = self._columns()
        if cols is None:
            return super().n_counted()
        return sum(len(g["id"]) for g in cols.groups.values())

    def others(self, workload: str) -> list[Sample]:
        cols = self._columns()
        if cols is None:
            return super().others(workload)
        return list(cols.others.get(workload, ()))

    def n_warmup(self) -> int:
        cols = self._columns()
        return super().n_warmup() if cols is None else cols.warmup

    def n_failed(self) -> int:
        cols = self._columns()
        return super().n_failed() if cols is None else cols.failed

    def checks(self, workload: str) -> tuple[dict[str, set[str]], bool]:
        cols = self._columns()
        if cols is None:
            return super().checks(workload)
        # (row id, target, check) of every ok, not discarded sample with a check, in run order:
        # the counted ones (each target's distinct checks, at their first row) and the others.
        found: list[tuple[int, str, str]] = []
        for target in cols.targets.get(workload, ()):
            group = cols.groups[(workload, target)]
            first = dict(zip(reversed(group["check"]), reversed(group["id"]), strict=True))
            found += [(i, target, c) for c, i in first.items() if c is not None]
        others = cols.others.get(workload, [])
        found += [(i, s.target, s.check) for i, s in zip(cols.other_ids.get(workload, []),
                                                         others, strict=True)
                  if s.status == "ok" and s.check is not None and s.discarded is None]
        checks: dict[str, set[str]] = {}
        for _, target, check in sorted(found, key=operator.itemgetter(0)):
            checks.setdefault(target, set()).add(check)
        any_ok = bool(cols.targets.get(workload)) or any(s.status == "ok" for s in others)
        return checks, any_ok


@guarded
def load_columns(store: SqlStore, run_id: str, rows: bool = False) -> ColumnDoc:
    """A stored run as a `ColumnDoc`: its head as `load_run` reads it, its samples as columns
    (and as records read on demand while the store is open). rows: every sample's fields are
    read too, in one pass (`scanned`), for a view that writes every sample (the JSON report,
    the samples CSV); else only what the questions read (`queried`)."""
    head = load_head(store, run_id)
    return column_doc(store, run_id, head,
                      scanned(store, run_id) if rows else queried(store, run_id))


def load_head(store: SqlStore, run_id: str) -> RunDoc:
    """The run's head (everything but its samples) as `load_run` reads it."""
    return RunDoc.from_dict(store.load_run_dict(run_id, with_samples=False))


def column_doc(store: SqlStore, run_id: str, head: RunDoc, cols: Columns) -> ColumnDoc:
    """The `ColumnDoc` of a run's head and its columns (`queried`'s or `scanned`'s, read here or
    by store/beside.py's reader), its records read from `store` when walked."""
    doc = ColumnDoc(run=head.run, host=head.host,
                    samples=StoredSamples(store, run_id, cols),  # type: ignore[arg-type]
                    artifacts=head.artifacts, statuses=head.statuses, warnings=head.warnings,
                    outcomes=head.outcomes, system_boots=head.system_boots)
    doc.__dict__["_columnar"] = cols
    return doc
