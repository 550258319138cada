"""The analysis stage on typed run documents: which samples count, how rounds pair, which
target is the reference, verdicts, validation and the suite mean. No CLI, no store."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from abibench.analyse import report as analysis
from abibench.analyse.results import analyse, suite_summary, validate_outputs
from abibench.records import RunDoc, Sample, pair_by_round, pick_reference
from abibench.report import render
from abibench.report.formatting import kib as fmt_kib

DocFactory = Callable[[dict[str, dict[str, Any]], list[dict[str, Any]]], RunDoc]
RATE = {"rate": {"unit": "ops/s", "better": "higher"}}


def _samples(wid: str, values: dict[str, list[float]], **extra: Any) -> list[dict[str, Any]]:
    out = []
    for target, vals in values.items():
        for rnd, v in enumerate(vals, start=1):
            out.append({"workload": wid, "target": target, "round": rnd, "check": "same",
                        "metrics": {"rate": v}, "max_rss_kb": 1000, **extra})
    return out


def _doc(run_doc: DocFactory, values: dict[str, dict[str, list[float]]],
         extra: list[dict[str, Any]] | None = None) -> RunDoc:
    workloads = {w: {"primary": "rate", "targets": list(v), "metrics": RATE}
                 for w, v in values.items()}
    samples = [s for w, v in values.items() for s in _samples(w, v)]
    return run_doc(workloads, samples + (extra or []))


def test_counted_leaves_out_warmups_failures_and_counter_runs(run_doc: DocFactory) -> None:
    base = {"workload": "w", "target": "i386", "metrics": {"rate": 1.0}}
    doc = run_doc({"w": {"primary": "rate", "targets": ["i386"], "metrics": RATE}},
                  [{**base, "round": 0, "warmup": True},
                   {**base, "round": 1},
                   {**base, "round": 2, "status": "failed"},
                   {**base, "round": 3, "kind": "counters", "instructions": 5},
                   {**base, "round": 4}])
    assert [s.round for s in doc.counted("w")] == [1, 4]
    assert doc.instructions("w") == {"i386": 5}


def test_pairing_needs_the_same_rounds_on_both_sides(run_doc: DocFactory) -> None:
    doc = _doc(run_doc, {"w": {"i386": [1.0, 2.0, 3.0], "x86_64": [2.0, 4.0, 6.0]}})
    p = doc.paired("w", "rate", "i386", "x86_64")
    assert p.paired and p.a == (1.0, 2.0, 3.0) and p.b == (2.0, 4.0, 6.0)
    # A missing round on one side: nothing pairs, every value is still used.
    rows = [s for s in doc.samples if not (s.target == "x86_64" and s.round == 2)]
    q = pair_by_round([s for s in rows if s.target == "i386"],
                      [s for s in rows if s.target == "x86_64"], "rate")
    assert not q.paired and len(q.a) == 3 and len(q.b) == 2
    # A sample without the metric, or with a non-finite value, is no value.
    odd = [Sample.from_dict({**_odd(), "metrics": {"rate": math.inf}}),
           Sample.from_dict({**_odd(), "round": 2, "metrics": {}})]
    assert pair_by_round(odd, odd, "rate").a == ()


def _odd() -> dict[str, Any]:
    return {"run_id": "r", "workload": "w", "target": "i386", "round": 1, "position": 0,
            "warmup": False, "status": "ok", "exit_code": 0, "wall_s": 1.0, "user_s": 1.0,
            "sys_s": 0.0, "max_rss_kb": 1, "stdout_digest": "", "check": None}


def test_reference_is_the_64_bit_abi_of_the_family() -> None:
    assert pick_reference(["i386", "x86_64", "x32"]) == "x86_64"
    assert pick_reference(["x86_64/debian", "i386/debian"]) == "x86_64/debian"
    assert pick_reference(["armhf", "aarch64"]) == "aarch64"
    assert pick_reference(["a", "b"]) == "b"  # no 64-bit ABI: the last one


def test_verdict_direction_and_reference(run_doc: DocFactory) -> None:
    doc = _doc(run_doc, {"w": {"x86_64": [100, 101, 99, 100, 102],
                               "i386": [80, 81, 79, 80, 82]}})
    (res,) = analyse(doc)
    (c,) = res.comparisons
    assert (c.a, c.b) == ("i386", "x86_64")
    assert c.ratio.paired and c.ratio.ratio == pytest.approx(0.8, rel=0.01)
    assert c.verdict.winner == "x86_64" and c.verdict.significant
    assert c.verdict.text.startswith("x86_64 is ") and "faster" in c.verdict.text
    assert c.verdict.percent == pytest.approx(25.0, abs=0.5)
    assert res.validation == "ok"
    # The reference can be named (a merged comparison does): then it is used.
    (other,) = analyse(doc, {"w": "i386"})
    assert other.comparisons[0].b == "i386" and other.comparisons[0].verdict.winner == "x86_64"


def test_miscompare_is_invalid_and_left_out_of_the_suite(run_doc: DocFactory) -> None:
    good = _samples("good", {"i386": [1.0, 1.1, 1.0], "x86_64": [2.0, 2.1, 2.0]})
    bad = _samples("bad", {"i386": [1.0, 1.1, 1.0]}) + \
        _samples("bad", {"x86_64": [2.0, 2.1, 2.0]}, check="other")
    workloads = {w: {"primary": "rate", "targets": ["i386", "x86_64"], "metrics": RATE}
                 for w in ("good", "bad")}
    results = analyse(run_doc(workloads, good + bad))
    by = {r.id: r for r in results}
    assert by["bad"].validation == "miscompare" and "differ between ABIs" in \
        by["bad"].validation_detail
    (suite,) = suite_summary(results)
    assert suite.workloads == ("good",) and suite.excluded == ("bad",)
    assert validate_outputs([], ["i386"], validates=False) == (
        "unchecked", "no validation value (the profile has no [validate])")
    assert validate_outputs([], ["i386"], validates=True) == (
        "unchecked", "not checked: no sample succeeded")


def test_holm_adjusts_every_primary_p_value(run_doc: DocFactory) -> None:
    values = {f"w{i}": {"i386": [1.0 + 0.01 * i, 1.02, 0.99, 1.01], "x86_64": [1.0] * 4}
              for i in range(3)}
    results = analyse(_doc(run_doc, values))
    for r in results:
        c = r.comparisons[0]
        assert c.p_adjusted >= c.ratio.p_value or math.isnan(c.ratio.p_value)


def test_report_cells_and_tones(run_doc: DocFactory) -> None:
    doc = _doc(run_doc, {"w": {"x86_64": [100, 101, 99, 100], "i386": [80, 81, 79, 80]}})
    rep = analysis.from_run(doc)
    (block,) = rep.workloads
    cells = {c.label: c for c in block.cells(["i386", "x86_64", "x32"])}
    assert cells["x32"].row is None and cells["x32"].median is None
    assert cells["x86_64"].reference and cells["x86_64"].diff is None
    d = cells["i386"].diff
    # One way of stating it (issue 29): the rate 80 against 100 is "x86_64 is 25.0% faster" in
    # the verdict and "25.0% slower" in i386's cell, never -20%.
    assert d is not None and d.tone == "worse" and d.percent == pytest.approx(-25, abs=1)
    assert d.verdict.startswith("x86_64 is 25.0% faster") and d.phrase.startswith("25.0% slower")
    assert rep.counts.total == 8 and rep.counts.counted == 8


def test_values_not_all_positive_give_a_reason_never_a_verdict(run_doc: DocFactory) -> None:
    # The issue: with rates -2 (i386) and -1 (x86_64), higher being better, the report said
    # "x86_64 is 100.0% faster" although i386's value was the higher one.
    doc = _doc(run_doc, {"neg": {"i386": [-2.0, -2.1, -1.9, -2.0, -2.05],
                                 "x86_64": [-1.0, -1.05, -0.95, -1.0, -1.02]},
                         "zero": {"i386": [1.0, 1.1, 0.9, 1.0, 1.0],
                                  "x86_64": [0.0, 1.0, 1.1, 0.9, 1.0]},
                         "fine": {"i386": [2.0, 2.1, 1.9, 2.0, 2.05],
                                  "x86_64": [1.0, 1.05, 0.95, 1.0, 1.02]}})
    results = {r.id: r for r in analyse(doc)}
    assert results["neg"].comparisons == []
    assert "rate: i386 has values <= 0: a ratio of them means nothing, no verdict" in \
        results["neg"].warnings
    assert results["zero"].comparisons == []
    assert "rate: x86_64 has values <= 0: a ratio of them means nothing, no verdict" in \
        results["zero"].warnings
    assert results["fine"].comparisons[0].verdict.winner == "i386"
    # The suite mean and the report use what has a ratio, and say nothing about the rest.
    (suite,) = suite_summary(list(results.values()))
    assert suite.workloads == ("fine",)
    report = analysis.from_run(doc)
    assert not any(d.workload in ("neg", "zero") for b in report.workloads for d in b.diffs)


def test_a_secondary_metric_without_a_ratio_is_a_warning(run_doc: DocFactory) -> None:
    metrics = {**RATE, "temp": {"unit": "C", "better": "lower"}}
    samples = [{"workload": "w", "target": t, "round": r, "check": "same",
                "metrics": {"rate": 1.0 + r / 10, "temp": -5.0 - r}}
               for t in ("i386", "x86_64") for r in range(1, 6)]
    doc = run_doc({"w": {"primary": "rate", "targets": ["i386", "x86_64"],
                         "metrics": metrics}}, samples)
    (block,) = analysis.from_run(doc).workloads
    assert [d.metric for d in block.diffs] == ["rate"]
    assert "temp: i386 has values <= 0: a ratio of them means nothing, no verdict" in \
        block.result.warnings


def test_tree_memory_has_its_own_verdict_beside_peak_rss(run_doc: DocFactory) -> None:
    samples = []
    for rnd in range(1, 6):
        for target, tree in (("i386", 300_000 + rnd), ("x86_64", 450_000 - rnd)):
            samples.append({"workload": "b", "target": target, "round": rnd, "check": "c",
                            "metrics": {"rate": 10.0 + rnd}, "max_rss_kb": 100_000 + rnd,
                            "tree_peak_rss_kb": tree, "tree_memory": "cgroup-v1"})
    doc = run_doc({"b": {"primary": "rate", "targets": ["i386", "x86_64"], "metrics": RATE}},
                  samples)
    (res,) = analyse(doc)
    by_metric = {c.metric: c for c in res.memory}
    assert set(by_metric) == {"max_rss", "tree_peak_rss"}
    verdict = by_metric["tree_peak_rss"]
    assert verdict.ratio.ratio == pytest.approx(300_003 / 449_997)
    assert verdict.verdict.significant and "smaller" in verdict.verdict.text
    assert [r.tree_kb for r in res.rows] == [300_003, 449_997]
    assert any("cgroup v1" in p for p in res.provenance)
    rep = analysis.from_run(doc)
    assert [p.metric for p in rep.workloads[0].panels][-2:] == ["max_rss", "tree_peak_rss"]
    for fmt in ("terminal", "markdown", "html"):
        text = render(rep, fmt)
        assert "tree peak RSS" in text, fmt
        assert fmt_kib(300_003) in text and fmt_kib(449_997) in text, fmt


def test_without_tree_memory_there_is_no_tree_verdict_or_warning(run_doc: DocFactory) -> None:
    doc = _doc(run_doc, {"w": {"i386": [1.0, 1.1, 1.2], "x86_64": [2.0, 2.1, 2.2]}})
    (res,) = analyse(doc)
    assert [c.metric for c in res.memory] == ["max_rss"]
    assert not any("tree" in w for w in res.warnings)


def test_outputs_equal_within_a_close_tolerance_are_not_called_identical() -> None:
    def sample(target: str, check: str) -> Sample:
        return Sample("r", "w", target, 1, 0, False, "ok", 0, 1.0, 1.0, 0.0, 1000, "d", check)

    close = "decoded.wav~0123456789abcdef"
    assert validate_outputs([sample("i386", close), sample("x86_64", close)],
                            ["i386", "x86_64"]) == (
        "ok", "equal within the profile's [validate] close tolerance on i386, x86_64")
    exact = "out.mp3:0123456789abcdef"
    assert validate_outputs([sample("i386", exact), sample("x86_64", exact)],
                            ["i386", "x86_64"]) == ("ok", "identical on i386, x86_64")
