"""Family: a fast path that computes another way (issue 30).

Reading a run of 10^6 samples, the analysis asks each sample for several metrics and pairs
every comparison by round; those passes went from Python per sample to passes in C over
columns (`pairing.metric_column`, `pairing.pair_by_round`), computed once per document
(`RunDoc.values`, `RunDoc.paired`, `RunDoc.measured_memory`), and the report's sample rows are
made when a renderer reads them (`analyse.report.SetRows`). The invariant: each gives exactly
what its sample-by-sample definition gives. Hypothesis generates the samples: targets, rounds
repeated or missing, values missing, NaN, infinite or whole, designs with and without a
covariate, samples that do not count; each fast answer is compared with the definition,
written here the obvious way.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse import report as analysis
from abibench.analyse.merge import Series
from abibench.records import (
    MEMORY_METRICS,
    Paired,
    ResultSet,
    RunDoc,
    Sample,
    measured_memory,
    metric_column,
    pair_by_round,
)
from tests.conftest import synthetic_doc

TARGETS = ("i386", "x86_64", "x32")
METRICS = ("rate", "time", "wall", "max_rss", "tree_peak_rss", "minflt", "user")
_VALUE = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=32),
                   st.integers(-3, 10**6).map(float))


@st.composite
def samples(draw: st.DrawFn) -> list[Sample]:
    out = []
    for i in range(draw(st.integers(0, 12))):
        metrics = {m: v for m in ("rate", "time") if (v := draw(_VALUE)) is not None}
        covariate = draw(st.one_of(st.none(), st.sampled_from([-1.0, 0.0, math.nan, 5.0, 7.5])))
        out.append(Sample(
            run_id="r", workload=draw(st.sampled_from(["w1", "w2"])),
            target=draw(st.sampled_from(TARGETS)), round=draw(st.integers(0, 4)), position=i,
            warmup=draw(st.booleans()), status=draw(st.sampled_from(["ok", "ok", "failed"])),
            exit_code=0, wall_s=draw(st.floats(0, 10)), user_s=draw(st.floats(0, 10)),
            sys_s=0.0, max_rss_kb=draw(st.integers(0, 10**7)), stdout_digest="d", check=None,
            metrics=metrics, minflt=draw(st.one_of(st.none(), st.integers(0, 100))),
            tree_peak_rss_kb=draw(st.one_of(st.none(), st.integers(0, 10**6))),
            design=draw(st.sampled_from(["sequential", "covariate"])), covariate=covariate,
            kind=draw(st.sampled_from(["timed", "timed", "counters"]))))
    return out


def _slow_pair(a: Iterable[Sample], b: Iterable[Sample], metric: str) -> Paired:
    """pair_by_round's definition, one sample at a time."""
    def by_round(ss: list[Sample]) -> dict[int, float]:
        out: dict[int, float] = {}
        for s in ss:
            v = s.value(metric)
            if v is not None and math.isfinite(v):
                out[s.round] = v
        return out

    def covariates(ss: list[Sample], rounds: list[int]) -> tuple[float, ...] | None:
        found = {s.round: s.covariate for s in ss if s.design == "covariate"}
        values = [found.get(r) for r in rounds]
        if any(v is None or not math.isfinite(v) or v <= 0 for v in values):
            return None
        return tuple(float(v) for v in values if v is not None)

    sa, sb = list(a), list(b)
    va, vb = by_round(sa), by_round(sb)
    if va and set(va) == set(vb):
        rounds = sorted(va)
        ca, cb = covariates(sa, rounds), covariates(sb, rounds)
        if metric in MEMORY_METRICS or ca is None or cb is None:
            ca = cb = ()
        return Paired(tuple(va[r] for r in rounds), tuple(vb[r] for r in rounds), True, ca, cb)
    return Paired(tuple(va.values()), tuple(vb.values()), False)


def _same(x: Any) -> Any:
    """NaN as a value that equals itself, so that lists of values compare."""
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if isinstance(x, list | tuple):
        return [_same(v) for v in x]
    return x


@functools.cache
def _base() -> RunDoc:
    return RunDoc.from_dict(synthetic_doc(rounds=1))


def _doc(ss: list[Sample]) -> RunDoc:
    return replace(_base(), samples=tuple(ss))  # a new document: nothing remembered yet


@settings(max_examples=30, deadline=None)
@given(ss=samples(), metric=st.sampled_from(METRICS))
def test_a_column_is_each_samples_value(ss: list[Sample], metric: str) -> None:
    assert _same(metric_column(ss, metric)) == _same([s.value(metric) for s in ss])


@settings(max_examples=40, deadline=None)
@given(a=samples(), b=samples(), metric=st.sampled_from(METRICS))
def test_pairs_are_the_sample_by_sample_pairs(a: list[Sample], b: list[Sample],
                                              metric: str) -> None:
    assert pair_by_round(a, b, metric) == _slow_pair(a, b, metric)
    # the same samples in both: every round pairs with itself
    assert pair_by_round(a, a, metric) == _slow_pair(a, a, metric)


@settings(max_examples=30, deadline=None)
@given(ss=samples(), metric=st.sampled_from(METRICS), x=st.sampled_from(TARGETS),
       y=st.sampled_from(TARGETS))
def test_a_documents_answers_are_their_definitions(ss: list[Sample], metric: str, x: str,
                                                   y: str) -> None:
    doc = _doc(ss)
    for w in ("w1", "w2", "none"):
        counted = [s for s in ss if s.workload == w and s.counted]
        for _ in range(2):  # the second answer is the one remembered
            assert _same(doc.values(w, x, metric)) == _same(
                [v for s in counted if s.target == x and (v := s.value(metric)) is not None])
            assert doc.counted(w, x) == [s for s in counted if s.target == x]
            assert doc.paired(w, metric, x, y) == _slow_pair(
                [s for s in counted if s.target == x], [s for s in counted if s.target == y],
                metric)
            assert doc.measured_memory(w) == measured_memory(counted)
    assert doc.n_counted() == sum(1 for s in ss if s.counted)


@settings(max_examples=30, deadline=None)
@given(one=samples(), two=samples(), index=st.integers(-60, 60),
       cut=st.tuples(st.integers(-30, 30), st.integers(-30, 30)))
def test_rows_made_when_read_are_the_rows(one: list[Sample], two: list[Sample], index: int,
                                          cut: tuple[int, int]) -> None:
    sets = [ResultSet(_doc(one), "a", "A"), ResultSet(_doc(two), "b", "B")]
    series = [Series(label=f"{t}#{i}", set_index=i, tag=tag, target=t, abi=t, host="vm",
                     kernel_bits=64) for i, tag in enumerate("AB") for t in TARGETS[:2]]
    rows = analysis._sample_rows(sets, series)
    want = [analysis.SampleRow(rs.tag, rs.doc.run.id, rs.doc.host.hostname,
                               rs.doc.host.kernel_bits, f"{s.target}#{i}"
                               if s.target in TARGETS[:2] else s.target, s)
            for i, rs in enumerate(sets) for s in rs.doc.samples]
    assert len(rows) == len(want) and list(rows) == want
    assert rows[cut[0]:cut[1]] == want[cut[0]:cut[1]]
    if -len(want) <= index < len(want):
        assert rows[index] == want[index]
    else:
        try:
            rows[index]
        except IndexError:
            pass
        else:
            raise AssertionError(f"row {index} of {len(want)}")
    every = [s for rs in sets for s in rs.doc.samples]
    assert analysis._counts(sets) == analysis.SampleCounts(
        total=len(every), counted=sum(1 for s in every if s.counted),
        warmup=sum(1 for s in every if s.warmup),
        failed=sum(1 for s in every if s.status != "ok"))
