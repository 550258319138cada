"""A memory metric is a fact written once: registered in `records.BUILTINS`, it reaches the
analysis and every report format (terminal, Markdown, CSV, HTML, JSON) with nothing else to edit.

Family: "a fact written twice" (the formats named max_rss and tree_peak_rss by hand, so a new
memory metric silently missed them). The invariant: every memory table, column and comparison
is derived from the registry (`records.MEMORY_NAMES`, `analyse.results.memory_medians`). The test
generates the members: a new memory quantity, a field of a Sample subclass, under a generated
name, report label and values, and looks for it in every format; a control renders the same
document without the registration and finds it nowhere, so the check cannot pass vacuously.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse import report as analysis
from abibench.metrics import extended
from abibench.records import (
    BUILTIN_METRICS,
    MEMORY_METRICS,
    MEMORY_NAMES,
    Builtin,
    HostContext,
    Metric,
    Run,
    RunConfig,
    RunDoc,
    Sample,
    WorkloadMeta,
)
from abibench.report import render
from abibench.report.formatting import kib as fmt_kib

SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))  # bench/invariants.py
FORMATS = ("terminal", "markdown", "csv", "html", "json")
RATE = {"rate": {"name": "rate", "unit": "ops/s", "better": "higher"}}


@dataclass(frozen=True)
class SwapSample(Sample):
    """A sample with one more quantity of memory than abibench measures today."""

    swap_peak_kb: int | None = None


def _doc(values: dict[str, list[int]]) -> RunDoc:
    meta = WorkloadMeta.from_dict("w", {"primary": "rate", "targets": list(values),
                                        "metrics": RATE})
    run = Run("r", "2026-01-01T00:00:00+00:00", None, "complete", "test",
              RunConfig({"w": meta}))
    samples = tuple(
        SwapSample(run_id="r", workload="w", target=target, round=rnd, position=pos,
                   warmup=False, status="ok", exit_code=0, wall_s=1.0, user_s=1.0, sys_s=0.0,
                   max_rss_kb=100_000 + rnd, stdout_digest="d", check="c",
                   metrics={"rate": 10.0 + rnd + pos}, swap_peak_kb=v)
        for pos, (target, vs) in enumerate(values.items())
        for rnd, v in enumerate(vs, start=1))
    return RunDoc(run, HostContext(), samples)


def _median(vs: list[int]) -> float:
    s = sorted(vs)
    return float(s[len(s) // 2])


names = st.from_regex(r"[a-z][a-z0-9_]{2,10}", fullmatch=True).filter(
    lambda n: n not in BUILTIN_METRICS and n != "rate")
labels = st.from_regex(r"[a-z]{3,7}", fullmatch=True).map(lambda w: f"swapped {w}")
series = st.lists(st.integers(200_000, 10_000_000), min_size=5, max_size=5, unique=True)


@settings(max_examples=3 * SCALE, deadline=None)
@given(name=names, label=labels, a=series, b=series)
def test_a_registered_memory_metric_reaches_every_format(name: str, label: str,
                                                         a: list[int], b: list[int]) -> None:
    doc = _doc({"i386": a, "x86_64": b})
    metric = Builtin(Metric(name, "KiB", "lower"), "swap_peak_kb", memory=label)
    before = render(analysis.from_run(doc), "markdown")
    assert label not in before  # the control: unregistered, no format knows it
    with extended(metric):
        assert name in MEMORY_METRICS and MEMORY_NAMES[name] == label
        rep = analysis.from_run(doc)
        out = {fmt: render(rep, fmt) for fmt in FORMATS}
    assert name not in MEMORY_METRICS  # the registry is whole again after the block
    medians = {"i386": _median(a), "x86_64": _median(b)}
    for fmt in ("terminal", "markdown", "html"):
        assert label in out[fmt], fmt  # its column or table rows, and its comparison
        for m in medians.values():
            assert fmt_kib(m) not in before and fmt_kib(m) in out[fmt], fmt
    rows = [r for r in csv.DictReader(io.StringIO(out["csv"])) if r["metric"] == name]
    assert {r["target"]: float(r["median"]) for r in rows} == medians
    assert any(r["ratio"] for r in rows if r["target"] == "i386")
    (w,) = json.loads(out["json"])["workloads"]
    assert {t["label"]: t["memory_kb"][name] for t in w["targets"]} == medians
    assert [c["metric"] for c in w["memory"] if c["metric"] == name] == [name]
