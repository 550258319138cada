"""Family: a fast path that reads another way (issue 30). A stored run read as columns
(store/columns.ColumnDoc) and a comparison merged by names (analyse/parts.MergedDoc) answer
every question of the summary views without a Sample; the invariant is that each answer, and
each whole report, is the record-based document's (docs/reliability.md, "A fast path gives
exactly what its definition gives"). Hypothesis generates the stored runs: targets, rounds
repeated or missing, warm-ups, failures, counting runs and baselines, discarded samples,
values missing, negative or whole, checks that agree or not, the board's and the machine's
readings present or absent; each run is stored, read both ways, and compared.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.analyse import merge as merging
from abibench.analyse import report as analysis
from abibench.analyse.advise import Deployment
from abibench.analyse.legend import relabeled
from abibench.records import ResultSet, RunDoc, Sample
from abibench.report import render
from abibench.store.columns import _BY_FIELD as SAMPLE_BY_FIELD
from abibench.store.columns import FIELDS, ColumnDoc, load_columns
from abibench.store.exchange import import_doc
from abibench.store.rowstream import metrics_column as columns_metrics
from abibench.store.sqlite import Store
from tests.documents import synthetic_doc

SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))  # bench/invariants.py
TARGETS = ("i386", "x86_64", "x32")
WORKLOADS = ("alpha", "beta")
METRICS = ("rate", "time", "wall", "max_rss", "tree_peak_rss", "minflt", "user")
_VALUE = st.one_of(st.none(), st.floats(-1, 1e6, width=32),
                   st.integers(-3, 10**6).map(float))
_MAYBE = st.one_of(st.none(), st.floats(0, 5000, width=32))


@st.composite
def samples(draw: st.DrawFn) -> list[Sample]:
    out = []
    for i in range(draw(st.integers(0, 24))):
        metrics = {m: v for m in ("rate", "time") if (v := draw(_VALUE)) is not None}
        out.append(Sample(
            run_id="r", workload=draw(st.sampled_from(WORKLOADS)),
            target=draw(st.sampled_from(TARGETS)), round=draw(st.integers(0, 4)), position=i,
            warmup=draw(st.booleans()), status=draw(st.sampled_from(["ok", "ok", "failed"])),
            exit_code=0, wall_s=draw(st.floats(0.0001, 10)), user_s=draw(st.floats(0, 10)),
            sys_s=0.0, max_rss_kb=draw(st.integers(0, 10**7)), stdout_digest="d",
            check=draw(st.sampled_from([None, "c1", "c1", "c2"])), metrics=metrics,
            minflt=draw(st.one_of(st.none(), st.integers(0, 100))),
            tree_peak_rss_kb=draw(st.one_of(st.none(), st.integers(0, 10**6))),
            tree_memory=draw(st.sampled_from([None, "cgroup-v2"])),
            design=draw(st.sampled_from(["sequential", "covariate"])),
            covariate=draw(st.sampled_from([None, 0.0, 5.0, 7.5])),
            kind=draw(st.sampled_from(["timed", "timed", "timed", "counters", "baseline"])),
            discarded=draw(st.sampled_from([None, None, None, "resumed"])),
            emulated=draw(st.booleans()), instructions=draw(st.one_of(st.none(),
                                                                      st.integers(0, 10**9))),
            foreign_cpu_s=draw(_MAYBE), steal_s=draw(st.sampled_from([None, 0.0, 0.25])),
            clock_mhz=draw(_MAYBE), temp_c=draw(_MAYBE),
            throttled=draw(st.sampled_from([None, 0, 5])), repeat=draw(st.integers(1, 2)),
            error=draw(st.sampled_from([None, "boom"]))))
    return out


@functools.cache
def _head() -> RunDoc:
    doc = RunDoc.from_dict(synthetic_doc(rounds=1, targets=TARGETS, workloads={
        w: dict.fromkeys(TARGETS, 100.0) for w in WORKLOADS}))
    return replace(doc, samples=())


@contextmanager
def stored(ss: list[Sample]) -> Iterator[tuple[Store, str]]:
    with tempfile.TemporaryDirectory(prefix="abibench-cols-") as tmp:
        store = Store(Path(tmp) / "results.sqlite")
        try:
            run_id = import_doc(store, replace(_head(), samples=tuple(ss)), "test").run_id
            yield store, run_id
        finally:
            store.close()


def _same(x: Any) -> Any:
    """NaN as a value that equals itself, so that answers compare."""
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if isinstance(x, list | tuple):
        return [_same(v) for v in x]
    if isinstance(x, dict):
        return {k: _same(v) for k, v in x.items()}
    return x


def _answers(doc: RunDoc, targets: tuple[str, ...] = TARGETS,
             workloads: tuple[str, ...] = WORKLOADS,
             metrics: tuple[str, ...] = METRICS) -> list[Any]:
    """Every question the summary views ask of a document, answered."""
    out: list[Any] = [doc.n_counted(), doc.n_warmup(), doc.n_failed(), len(doc.samples)]
    for w in (*workloads, "none"):
        out += [doc.counted_targets(w), doc.others(w), doc.checks(w), doc.instructions(w),
                doc.counter_profiles(w), sorted(doc.emulated_targets(w)), doc.baseline_rss(w),
                doc.measured_memory(w)]
        for t in (*targets, "none"):
            out += [_same(doc.column(w, t, f)) for f in FIELDS]
            out += [_same(doc.values(w, t, m)) for m in metrics]
            out += [_same(doc.metric_column(w, t, m)) for m in metrics]
            out += [doc.paired(w, m, t, u) for m in metrics for u in targets]
    return out


_STAMP = re.compile(r"generated \S+|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")


def _views(sets: list[ResultSet]) -> list[str]:
    """The summary views of the result sets, but their time stamps."""
    rep = analysis.from_sets(sets, deployment=Deployment(4 << 30))
    return [_STAMP.sub("", render(rep, fmt)) for fmt in ("terminal", "markdown", "csv")]


@settings(max_examples=12 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ss=samples())
def test_a_run_read_as_columns_answers_as_its_records(ss: list[Sample]) -> None:
    with stored(ss) as (store, run_id):
        records = store.load_run(run_id)
        cols = load_columns(store, run_id)
        assert isinstance(cols, ColumnDoc)
        assert list(cols.samples) == list(records.samples)
        assert list(cols.samples[1:4]) == list(records.samples)[1:4]
        assert _answers(cols) == _answers(records)
        assert _views([ResultSet(cols, "r")]) == _views([ResultSet(records, "r")])


def _copied(sets: list[ResultSet], baseline: str | None = None,
            tags: list[str] | None = None) -> merging.Merged:
    """merge's definition: the merged document holds a renamed copy of every sample."""
    merged = merging.merge(sets, baseline, tags)
    copy = replace(merged.doc, samples=tuple(merged.doc.samples))  # no parts: records
    return replace(merged, doc=copy)


@settings(max_examples=6 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=samples(), b=samples(), same=st.booleans())
def test_a_merge_by_names_answers_as_the_merge_of_copies(a: list[Sample], b: list[Sample],
                                                         same: bool) -> None:
    with stored(a) as (sa, ra), stored(a if same else b) as (sb, rb):
        sets = [ResultSet(load_columns(sa, ra), "one"), ResultSet(load_columns(sb, rb), "two")]
        merged = merging.merge(sets)
        reference = _copied(sets)
        labels = tuple(s.label for s in merged.series)
        assert _answers(merged.doc, labels) == _answers(reference.doc, labels)
        assert merged.series == reference.series and merged.references == reference.references
        files = [ResultSet(sa.load_run(ra), "one"), ResultSet(sb.load_run(rb), "two")]
        views = _views(sets)
        assert _views(files) == views  # records merged by names: the same again
        with mock.patch.object(analysis, "merge", _copied):
            assert _views(files) == views


def _renamed_copies(doc: RunDoc, names: dict[str, str]) -> RunDoc:
    """legend.relabeled's definition: every sample, artifact and status a renamed copy."""
    def n(target: str) -> str:
        return names.get(target, target)

    metas = {wid: m.with_targets([n(t) for t in m.targets]) for wid, m in doc.workloads.items()}
    run = replace(doc.run, config=replace(doc.run.config, workloads=metas))
    return RunDoc(run, doc.host, tuple(replace(s, target=n(s.target)) for s in doc.samples),
                  tuple(replace(a, target=n(a.target)) for a in doc.artifacts),
                  tuple(replace(s, target=n(s.target)) for s in doc.statuses),
                  tuple(replace(w, target=n(w.target)) if w.target else w for w in doc.warnings),
                  doc.outcomes, doc.system_boots)


@settings(max_examples=8 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ss=samples(), renamed=st.sets(st.sampled_from(TARGETS), min_size=1))
def test_a_run_renamed_by_names_answers_as_its_renamed_copies(ss: list[Sample],
                                                              renamed: set[str]) -> None:
    names = {t: f"{t}-short" for t in renamed}
    labels = tuple(names.get(t, t) for t in TARGETS)
    with stored(ss) as (store, run_id):
        for doc in (load_columns(store, run_id), store.load_run(run_id)):
            by_names = relabeled(doc, names)
            assert _answers(by_names, labels) == _answers(_renamed_copies(doc, names), labels)
            assert list(by_names.samples) == list(_renamed_copies(doc, names).samples)


_METRIC_TEXT = st.one_of(
    st.dictionaries(st.sampled_from(["rate", "time", "x"]),
                    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers()))
    .map(json.dumps),
    st.sampled_from(['{"rate": 1.5} ', ' {"rate": 1.5}', '{"rate": 1.5}x', "[1.5]", "1.5", "{}",
                     '{"rate": "fast"}', "", "nul"]))


@settings(max_examples=60 * SCALE, deadline=None)
@given(texts=st.lists(_METRIC_TEXT, max_size=6))
def test_the_metrics_column_is_each_texts_conversion(texts: list[str]) -> None:
    convert = SAMPLE_BY_FIELD["metrics"].from_sql

    def each() -> Any:
        try:
            return [_same(convert(t)) for t in texts]
        except Exception as exc:
            return type(exc)

    try:
        got: Any = [_same(v) for v in columns_metrics(texts, convert)]
    except Exception as exc:
        got = type(exc)
    assert got == each()
