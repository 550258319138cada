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

import operator
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from ..records import RunDoc, Sample
from ..walked import Walked
from .finite import check_columns, check_sample
from .rowstream import field_columns
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


def _convert(field: str, raw: Sequence[Any], shared: dict[Any, Any]) -> tuple[Any, ...]:
    """One column's stored values as the Sample's field holds them (schema's conversions)."""
    col = _BY_FIELD[field]
    if field == "metrics":
        return _metrics(raw, col.from_sql)
    if col.plain and col.type == "TEXT":
        return tuple(map(shared.setdefault, raw, raw))  # equal texts shared, as the reader
    if col.plain:
        return tuple(raw)
    return tuple(map(col.from_sql, raw))


class Columns:
    """One run's counted samples as columns per (workload, target), and its other samples."""

    def __init__(self, store: SqlStore, run_id: str) -> None:
        have = {d[0] for d in store.execute("SELECT * FROM samples WHERE 0=1").description}
        present = [f for f in FIELDS if _BY_FIELD[f].name in have]
        names = ", ".join(["id", *(_BY_FIELD[f].name for f in present)])
        shared: dict[Any, Any] = {}
        self.groups: dict[tuple[str, str], dict[str, tuple[Any, ...]]] = {}
        self.first: dict[tuple[str, str], int] = {}
        pairs = list(store.tuples("SELECT DISTINCT workload, target FROM samples WHERE run_id=?",
                                  (run_id,)))
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
            self.groups[(workload, target)] = cols
            self.first[(workload, target)] = raw[0][0]
        self.targets: dict[str, list[str]] = {}
        for workload, target in sorted(self.first, key=self.first.__getitem__):
            self.targets.setdefault(workload, []).append(target)
        self.others, self.other_ids = _others(store, run_id, have)
        total, warmup, failed = next(iter(store.tuples(
            # named: PostgreSQL's rows are mappings, where three unnamed sums are one key
            "SELECT COUNT(*) AS total, "
            "COALESCE(SUM(CASE WHEN warmup != 0 THEN 1 ELSE 0 END), 0) AS warmups, "
            "COALESCE(SUM(CASE WHEN status != 'ok' THEN 1 ELSE 0 END), 0) AS failures "
            "FROM samples WHERE run_id=?", (run_id,))))
        self.total, self.warmup, self.failed = int(total), int(warmup), int(failed)


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
def load_columns(store: SqlStore, run_id: str) -> ColumnDoc:
    """A stored run as a `ColumnDoc`: its head as `load_run` reads it, its samples as columns
    (and as records read on demand while the store is open)."""
    head = RunDoc.from_dict(store.load_run_dict(run_id, with_samples=False))
    cols = Columns(store, run_id)
    doc = ColumnDoc(run=head.run, host=head.host,
                    samples=StoredSamples(store, run_id, cols),  # type: ignore[arg-type]
                    artifacts=head.artifacts, statuses=head.statuses, warnings=head.warnings,
                    outcomes=head.outcomes, system_boots=head.system_boots)
    doc.__dict__["_columnar"] = cols
    return doc
