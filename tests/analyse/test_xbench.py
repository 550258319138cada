"""The XBench-style index on synthetic run documents with known answers."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from abibench.analyse.xbench import group_of, xbench_index
from abibench.records import Metric, RunDoc
from abibench.report.terminal import index_lines as render

DocFactory = Callable[[dict[str, dict[str, Any]], list[dict[str, Any]]], RunDoc]

def _doc(run_doc: DocFactory, tests: dict[str, tuple[str, dict[str, list[float]]]],
         checks: dict[str, dict[str, str]] | None = None) -> RunDoc:
    """tests: workload -> (better, {target: values by round}); metric is always 'rate'."""
    workloads: dict[str, Any] = {}
    samples = []
    for wid, (better, values) in tests.items():
        workloads[wid] = {"primary": "rate", "targets": list(values),
                          "metrics": {"rate": {"unit": "x/s", "better": better}}}
        for target, vals in values.items():
            check = (checks or {}).get(wid, {}).get(target, "same")
            for rnd, v in enumerate(vals, start=1):
                samples.append({"workload": wid, "target": target, "round": rnd,
                                "warmup": False, "status": "ok", "kind": "timed",
                                "metrics": {"rate": v}, "check": check, "max_rss_kb": 1,
                                "wall_s": 1.0})
    return run_doc(workloads, samples)


def test_scores_relative_to_x86_64(run_doc: DocFactory) -> None:
    doc = _doc(run_doc, {
        "cpu-a": ("higher", {"i386": [50, 51, 49, 50], "x86_64": [100, 101, 99, 100]}),
        "cpu-b": ("lower", {"i386": [2.0, 2.0, 2.1, 1.9], "x86_64": [1.0, 1.0, 1.0, 1.0]}),
        "mem-c": ("higher", {"i386": [200, 200, 200, 200], "x86_64": [100, 100, 100, 100]}),
        "ptrtree": ("higher", {"i386": [1, 1], "x86_64": [2, 2]}),  # not a micro test
    })
    idx = xbench_index(doc)
    scores = {t.workload: t for t in idx.tests}
    assert set(scores) == {"cpu-a", "cpu-b", "mem-c"}
    assert scores["cpu-a"].score == pytest.approx(50.0, rel=1e-3)
    # Lower is better: twice the time is half the score.
    assert scores["cpu-b"].score == pytest.approx(50.0, rel=1e-3)
    assert scores["mem-c"].score == pytest.approx(200.0)
    for t in scores.values():
        assert t.ci_low <= t.score <= t.ci_high
    groups = {g.group: g for g in idx.groups}
    assert groups["cpu"].score == pytest.approx(50.0, rel=1e-3) and groups["cpu"].tests == 2
    assert groups["mem"].score == pytest.approx(200.0)
    (total,) = idx.totals
    # Geometric mean of 50, 50, 200.
    assert total.score == pytest.approx((50 * 50 * 200) ** (1 / 3), rel=1e-3)
    assert total.ci_low <= total.score <= total.ci_high and total.tests == 3
    text = "\n".join(render(idx))
    assert "x86_64 = 100" in text and "CPU Test" in text and "Memory Test" in text


def test_miscompared_workload_is_left_out_and_named(run_doc: DocFactory) -> None:
    doc = _doc(run_doc, {"cpu-a": ("higher", {"i386": [1, 1], "x86_64": [2, 2]}),
                "cpu-b": ("higher", {"i386": [1, 1], "x86_64": [1, 1]})},
               checks={"cpu-b": {"i386": "x", "x86_64": "y"}})
    idx = xbench_index(doc)
    assert [t.workload for t in idx.tests] == ["cpu-a"]
    assert idx.excluded == ("cpu-b",)
    assert "left out (outputs differ between ABIs): cpu-b" in render(idx)


def test_extra_metrics_and_unpaired_rounds(run_doc: DocFactory) -> None:
    doc = _doc(run_doc, {"stream": ("higher", {"i386": [10, 10, 10], "x86_64": [20, 20]})})
    samples = tuple(replace(s, metrics={**s.metrics, "copy_mbs": s.metrics["rate"] * (
        3 if s.target == "i386" else 1)}) for s in doc.samples)
    meta = doc.workloads["stream"]
    meta = replace(meta, metrics={**meta.metrics,
                                  "copy_mbs": Metric("copy_mbs", "MB/s", "higher")})
    doc = replace(doc, samples=samples, run=replace(doc.run, config=replace(
        doc.run.config, workloads={"stream": meta})))
    idx = xbench_index(doc, extra_metrics={"stream": ("copy_mbs", "not_a_metric")})
    assert [(t.metric, round(t.score)) for t in idx.tests] == [("rate", 50), ("copy_mbs", 150)]
    assert {t.group for t in idx.tests} == {"mem"}


def test_one_sample_per_target_has_no_ci(run_doc: DocFactory) -> None:
    idx = xbench_index(_doc(run_doc, {"disk-x": ("higher", {"i386": [1.0], "x86_64": [2.0]})}))
    (t,) = idx.tests
    assert t.score == pytest.approx(50.0) and math.isnan(t.ci_low)
    assert math.isnan(idx.totals[0].ci_low)
    assert "(no CI)" in "\n".join(render(idx))


def test_no_reference_no_scores(run_doc: DocFactory) -> None:
    idx = xbench_index(_doc(run_doc, {"cpu-a": ("higher", {"i386": [1, 1], "x32": [1, 1]})}))
    assert idx.tests == () and idx.totals == ()
    assert render(idx) == ["index: no test has samples of both x86_64 and another ABI"]


def test_groups() -> None:
    assert [group_of(w) for w in ("cpu-gcd", "thread-locks", "mem-fill", "disk-seq-read-4k",
                                  "stream", "footprint-list[n=10]", "nbody")] == \
        ["cpu", "thread", "mem", "disk", "mem", "other", "other"]
