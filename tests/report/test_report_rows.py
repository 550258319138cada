"""The JSON report and the samples CSV of a stored run, written from its rows as columns
(store/columns.py read with or without every field, store/rowstream.field_columns,
report/samplerows.py), are byte for byte the report written from its records the general way
(each cleaned row by `jsonout._fast_line` / `csvout._fast_cells`), in both backends.

The family (docs/reliability.md, "A fast path gives exactly what its definition gives"): a
writer that reads a sample's values another way and says something else (a flag left 0/1, a
metric's number converted otherwise, a column of one value written once for all rows wrongly,
a text that starts a formula or needs quotes or cleaning written as it is, a target renamed
or a round moved in one path and not the other, a sample out of order). Generated: stored runs
as the columnar tests make them (targets, warm-ups, failures, counting runs, baselines,
discarded samples, values missing), with hostile text in the free-text fields and the metric
names, extreme finite numbers, samples without metrics, targets that a report shortens, and
records of any shape; each run is reported alone and compared with itself.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.analyse import report as analysis
from abibench.codec import decoder
from abibench.records import ResultSet, RunDoc, Sample
from abibench.report import csvout, jsonout
from abibench.store.columns import load_columns
from abibench.store.exchange import import_doc
from tests.conftest import OpenDb
from tests.documents import synthetic_doc
from tests.invariants.test_columnar import TARGETS, WORKLOADS, samples
from tests.store.test_import_generated import record_of

HOSTILE = ("\x1b[2J", "\u202e", "\x9b", "a\rb", "\u2028", "é", "=1+1", "%s", "%", 'a,b"c\nd',
           "+x", "-1.5", "@a", "\t", "", " lead", "\\u001b", "中")
TEXT = st.sampled_from(HOSTILE) | st.text(max_size=6)
EXTREME = st.sampled_from([1e308, 5e-324, -0.0, 0.0, 0.1, 1.0, 123456789.125, -2.5])
_IDS = itertools.count()


@st.composite
def hostile(draw: st.DrawFn, targets: tuple[str, ...]) -> list[Sample]:
    """A run's samples (test_columnar's) on `targets` (its i386 perhaps one that a report
    shortens), some of them given hostile text, extreme numbers or no metrics; and a few
    records of any shape."""
    out = []
    for s in draw(samples()):
        if s.target not in targets:
            s = replace(s, target=targets[0])
        kind = draw(st.integers(0, 6))
        if kind == 0:
            s = replace(s, error=draw(st.none() | TEXT), check=draw(st.none() | TEXT),
                        stdout_digest=draw(TEXT), started_at=draw(TEXT))
        elif kind == 1:
            s = replace(s, metrics={**s.metrics, draw(TEXT): draw(EXTREME)})
        elif kind == 2:
            s = replace(s, metrics={})
        elif kind == 3:
            s = replace(s, wall_s=draw(EXTREME), user_s=draw(EXTREME),
                        max_rss_kb=draw(st.integers(-(2**63), 2**63 - 1)))
        out.append(s)
    extra = draw(st.lists(record_of(Sample).map(decoder(Sample, strict=True)), max_size=2))
    return out + [replace(s, workload=draw(st.sampled_from(WORKLOADS)),
                          target=draw(st.sampled_from(targets))) for s in extra]


@functools.cache
def _head(targets: tuple[str, ...]) -> RunDoc:
    doc = RunDoc.from_dict(synthetic_doc(rounds=1, targets=targets, workloads={
        w: dict.fromkeys(targets, 100.0) for w in WORKLOADS}))
    return replace(doc, samples=())


_STAMP = re.compile(r'"generated": "[^"]*"')


def _written(rep: analysis.Report) -> tuple[str, str]:
    """The JSON report (but its time stamp) and the samples CSV of a report."""
    text = _STAMP.sub("", "".join(jsonout.chunks(rep)))
    return text, "".join(csvout.samples_chunks(rep))


def _general(rep: analysis.Report) -> tuple[str, str]:
    """The same written the general way: every row made, cleaned and written on its own."""
    return _written(replace(rep, samples=list(rep.samples)))


def _reports(sets: list[ResultSet]) -> list[analysis.Report]:
    return [analysis.from_sets(sets[:1]), analysis.from_sets(sets)]


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.sampled_from([TARGETS, ("i386/prebuilt", *TARGETS[1:])]).flatmap(
    lambda t: st.tuples(st.just(t), hostile(t))))
def test_a_runs_rows_are_written_as_its_records_are(
        open_db: OpenDb, run: tuple[tuple[str, ...], list[Sample]]) -> None:
    targets, ss = run
    store = open_db()
    head = replace(_head(targets), run=replace(_head(targets).run,
                                               id=f"20260101-000000-rows{next(_IDS)}"))
    run_id = import_doc(store, head, "test").run_id
    store.add_samples(run_id, ss)
    records = store.load_run(run_id)
    want = [_general(rep) for rep in _reports([ResultSet(records, "r"), ResultSet(records, "r")])]
    reads: list[Callable[[], Any]] = [lambda: load_columns(store, run_id),
                                      lambda: load_columns(store, run_id, rows=True),
                                      lambda: records]
    for read in reads:
        doc = read()
        got = [_written(rep) for rep in _reports([ResultSet(doc, "r"), ResultSet(doc, "r")])]
        assert got == want
