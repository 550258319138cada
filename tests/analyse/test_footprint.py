"""Footprint curves from a run document: synthetic documents with known answers, then a real run."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from abibench.analyse.footprint import largest_n_difference, series
from abibench.records import RunDoc, WorkloadMeta
from abibench.store.exchange import document

DocFactory = Callable[[dict[str, dict[str, Any]], list[dict[str, Any]]], RunDoc]

Cli = Callable[..., subprocess.CompletedProcess[str]]



def _sample(wid: str, target: str, rnd: int, rss_kb: float, ns: float, baseline_kb: float = 1000,
            **extra: Any) -> dict[str, Any]:
    s = {"workload": wid, "target": target, "round": rnd, "warmup": False, "status": "ok",
         "kind": "timed", "max_rss_kb": rss_kb, "wall_s": 0.1,
         "metrics": {"ns_per_element": ns, "baseline_kb": baseline_kb}}
    s.update(extra)
    return s


def _doc(run_doc: DocFactory, per_element: dict[str, dict[str, float]], ns: dict[str, float],
         ns_values: tuple[int, ...] = (10_240, 1_000_000)) -> RunDoc:
    """footprint-list instances at each N; peak RSS = 1000 KiB baseline + N x bytes/element
    (N a multiple of 1024 and 16: the launcher reports whole KiB)."""
    workloads: dict[str, Any] = {}
    samples = []
    for n in ns_values:
        wid = f"footprint-list[n={n}]"
        workloads[wid] = {"params": {"n": str(n)}, "targets": ["i386", "x86_64", "x32"],
                          "primary": "ns_per_element", "metrics": {}}
        for target, bpe in per_element.items():
            for rnd in (1, 2, 3):
                rss = 1000 + n * bpe[str(n)] / 1024 + rnd  # a little noise per round
                samples.append(_sample(wid, target, rnd, rss, ns[target] + rnd))
            # Warm-ups and failures are not points.
            samples.append(_sample(wid, target, 0, 1e9, 1e9, warmup=True))
            samples.append(_sample(wid, target, 4, 1e9, 1e9, status="failed"))
    workloads["ptrtree"] = {"params": {"nodes": "5"}, "targets": ["i386"], "primary": "x",
                            "metrics": {}}
    return run_doc(workloads, samples)


BPE = {"i386": {"10240": 16.0, "1000000": 16.0}, "x86_64": {"10240": 32.0, "1000000": 32.0}}


def test_series_per_abi_in_ascending_n(run_doc: DocFactory) -> None:
    out = series(_doc(run_doc, BPE, {"i386": 50.0, "x86_64": 40.0}, (1_000_000, 10_240)))
    assert [(s.structure, s.abi) for s in out] == [("footprint-list", "i386"),
                                                  ("footprint-list", "x86_64")]
    i386 = out[0]
    assert [p.n for p in i386.points] == [10_240, 1_000_000]
    big = i386.points[1]
    assert big.samples == 3
    # Median RSS is round 2's: 1000 + 15625 + 2 KiB.
    assert big.peak_rss_kb == pytest.approx(1000 + 15625 + 2)
    assert big.bytes_per_element == pytest.approx((1000 + 15625 + 2) * 1024 / 1e6)
    assert big.net_bytes_per_element == pytest.approx((15625 + 2) * 1024 / 1e6)
    assert big.ns_per_element == pytest.approx(52.0)
    # At small N the fixed part dominates the gross figure; the net one stays at the node cost.
    small = i386.points[0]
    assert small.bytes_per_element > 100 and small.net_bytes_per_element == pytest.approx(
        16.0 + 2 * 1024 / 10_240)


def test_largest_n_difference(run_doc: DocFactory) -> None:
    (d,) = largest_n_difference(series(_doc(run_doc, BPE, {"i386": 50.0, "x86_64": 40.0})), "i386", "x86_64")
    assert (d.structure, d.n, d.a, d.b) == ("footprint-list", 1_000_000, "i386", "x86_64")
    expected = (1000 + 15625 + 2) / (1000 + 31250 + 2)
    assert d.ratio.ratio == pytest.approx(expected)
    assert d.percent == pytest.approx((expected - 1) * 100)
    assert d.ratio.paired and d.ratio.ci_low <= d.ratio.ratio <= d.ratio.ci_high
    assert "footprint-list at N=1,000,000: i386" in d.text and "peak RSS -48." in d.text


def test_missing_target_or_samples_give_no_point(run_doc: DocFactory) -> None:
    doc = _doc(run_doc, {"i386": BPE["i386"]}, {"i386": 50.0})
    out = series(doc)
    assert [s.abi for s in out] == ["i386"]  # x86_64 and x32 had no samples: no series
    assert largest_n_difference(out, "i386", "x86_64") == []
    broken = replace(doc.run.config, workloads={
        **doc.workloads, "footprint-tree": WorkloadMeta("footprint-tree", "x", ("i386",), {},
                                                        params={"n": "oops"})})
    assert len(series(replace(doc, run=replace(doc.run, config=broken)))) == 1


def test_single_sample_has_no_ci(run_doc: DocFactory) -> None:
    doc = _doc(run_doc, BPE, {"i386": 1.0, "x86_64": 1.0}, (10_240,))
    doc = replace(doc, samples=tuple(s for s in doc.samples if s.round == 1))
    (d,) = largest_n_difference(series(doc), "i386", "x86_64")
    assert math.isnan(d.ratio.ci_low) and "no CI" in d.text


def test_real_run_shows_lp64_costing_memory(cli: Cli) -> None:
    # Read for its samples alone: --no-html spares the run's HTML report,
    # which this test never reads (tests/report reads it).
    r = cli("run", "--suite", "footprint", "--abi", "i386,x86_64", "--rounds", "2",
            "--set", "n=200000", "--json", "--no-html")
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    out = {(s.structure, s.abi): s for s in series(document(doc, "run"))}
    assert len(out) == 6
    for structure in ("footprint-list", "footprint-tree", "footprint-hash"):
        (i386,) = out[(structure, "i386")].points
        (x86_64,) = out[(structure, "x86_64")].points
        assert i386.n == x86_64.n == 200_000
        assert i386.net_bytes_per_element is not None and x86_64.net_bytes_per_element is not None
        # ILP32 nodes are 12-20 bytes, LP64 16-32: by chunk size, at least a third more.
        assert x86_64.net_bytes_per_element > 1.3 * i386.net_bytes_per_element
    diffs = largest_n_difference(list(out.values()), "i386", "x86_64")
    assert {d.structure for d in diffs} == {"footprint-list", "footprint-tree", "footprint-hash"}
    assert all(d.percent < -20 for d in diffs)
