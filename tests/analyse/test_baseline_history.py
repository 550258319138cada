"""Axes, baselines and history on synthetic run documents (tests/conftest.py)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.axes import AXES, axes_of
from abibench.analyse.baseline import against
from abibench.analyse.history import history, levels
from abibench.records import RunDoc
from abibench.report import baseline as shown_baseline
from abibench.report import history as shown_history
from tests.conftest import HOSTILE, synthetic_doc


def doc(run: int, rates: dict[str, float], *, tag: str | None = None, host: str = "vm",
        seed: int | None = None, noise: float = 0.01) -> RunDoc:
    d: dict[str, Any] = synthetic_doc(
        run_id=f"2026010{run}-000000-aaaa", host=host, workloads={"alpha": rates},
        started=f"2026-01-0{run}T00:00:00+00:00", seed=run if seed is None else seed,
        noise=noise)
    if tag is not None:
        d["host"]["label"] = tag
    return RunDoc.from_dict(d)


BASE = {"i386": 90.0, "x86_64": 100.0}


def test_axes_are_read_from_what_a_run_stores() -> None:
    axes = axes_of(doc(1, BASE, tag="v2"))
    assert set(axes) == set(AXES)
    assert axes["version"] == axes["tag"] == "v2"
    assert axes["compiler"] == "gcc 12" and axes["cflags"] == "-O2"
    assert axes["release"] == "Debian 12" and axes["kernel"] == "6.1.0 (64-bit)"
    assert axes["host"] == "vm"
    assert axes_of(doc(1, BASE))["version"] is None  # no tag, no version or digest recorded


def test_a_planted_slowdown_is_stated_with_its_interval_and_fails_the_gate() -> None:
    then = doc(1, BASE)
    now = doc(2, {"i386": 90.0, "x86_64": 90.0})  # x86_64's rate 10% down: 11.1% slower
    cmp = against(now, then)
    (w,) = cmp.workloads
    x64 = next(c for c in w.abis if c.target == "x86_64")
    i386 = next(c for c in w.abis if c.target == "i386")
    assert x64.significant and x64.low < 1 / 0.9 - 1 < x64.high
    assert abs(i386.slowdown) < 0.02
    (gap,) = w.gaps
    assert (gap.other, gap.reference) == ("i386", "x86_64")
    assert gap.before == pytest.approx(0.9, rel=0.02) and gap.after == pytest.approx(1.0, rel=0.02)
    assert gap.low < gap.change < gap.high and gap.low > 1.05
    assert [c.target for _, c in cmp.slowdowns(0.05)] == ["x86_64"]
    assert cmp.slowdowns(0.20) == []
    text = shown_baseline.terminal(cmp)
    assert "x86_64 11.1% slower than baseline [" in text or "x86_64 11.0% slower" in text
    assert "i386/x86_64 gap 0.9" in text
    assert shown_baseline.gate_lines(cmp, 0.05)
    js = json.loads(shown_baseline.json_text(cmp))
    (x64_js,) = [a for a in js["workloads"][0]["abis"] if a["target"] == "x86_64"]
    assert x64_js["significant"] and x64_js["slowdown"] == pytest.approx(x64.slowdown)


def test_an_unchanged_rerun_passes_the_gate() -> None:
    cmp = against(doc(2, BASE, seed=9), doc(1, BASE))
    assert cmp.slowdowns(0.05) == []
    assert all(abs(c.slowdown) < 0.02 for w in cmp.workloads for c in w.abis)


def test_lower_is_better_metrics_turn_the_same_way() -> None:
    """A time up by 10% and a rate down by 10% are both slowdowns."""
    then, now = doc(1, BASE), doc(2, {"i386": 90.0, "x86_64": 90.0})
    rate = against(now, then).workloads[0]
    assert rate.better == "higher"
    x64 = next(c for c in rate.abis if c.target == "x86_64")
    assert x64.slowdown > 0 and x64.ratio.ratio < 1


def _two_builds() -> list[RunDoc]:
    """Two builds measured twice each: v1 at i386 90 / x86_64 100, v2 with i386 at 80."""
    return [doc(1, BASE, tag="v1"), doc(2, BASE, tag="v1"),
            doc(3, {"i386": 80.0, "x86_64": 100.0}, tag="v2"),
            doc(4, {"i386": 80.0, "x86_64": 100.0}, tag="v2")]


def test_history_shows_two_levels_and_one_change() -> None:
    h = history(list(reversed(_two_builds())), "alpha", "version")
    assert [p.axes["version"] for p in h.points] == ["v1", "v1", "v2", "v2"]
    assert h.series == ("i386/x86_64", "i386", "x86_64")
    changed = {(c.series, c.run_index) for c in h.changes}
    assert changed == {("i386/x86_64", 2), ("i386", 2)}
    lv = levels(h, "i386")
    assert [(a, b) for a, b, _ in lv] == [(0, 1), (2, 3)]
    assert lv[0][2] == pytest.approx(90, rel=0.01) and lv[1][2] == pytest.approx(80, rel=0.01)
    text = shown_history.terminal(h)
    assert "version v1 -> v2" in text and text.count("*") == 2
    assert shown_history.to_json(h)["changes"]


def test_history_keeps_one_host_unless_asked_for_every_host() -> None:
    docs = [*_two_builds(), doc(5, BASE, host="other")]
    assert len(history(docs, "alpha").points) == 1  # the newest run's host: "other"
    assert len(history(docs, "alpha", host="vm").points) == 4
    assert len(history(docs, "alpha", "host").points) == 5
    with pytest.raises(ValueError, match="no stored run"):
        history(docs, "gamma")


def test_history_and_baseline_text_never_carry_escape_sequences() -> None:
    docs = [doc(1, BASE, tag="v1"), doc(2, BASE, tag="v1")]
    raw = RunDoc.from_dict({**docs[1].to_dict(),
                            "host": {**docs[1].host.to_dict(), "label": HOSTILE}})
    text = shown_history.terminal(history([docs[0], raw], "alpha"))
    text += shown_baseline.terminal(against(raw, docs[0]))
    assert "\x1b" not in text and "\x9b" not in text and "\u202e" not in text
    md = shown_history.markdown(history([docs[0], raw], "alpha"))
    md += shown_baseline.markdown(against(raw, docs[0]))
    assert "\x1b" not in md and "\\[bold\\]" in md  # escaped: shown as text, never markup
    assert math.isfinite(against(raw, docs[0]).workloads[0].abis[0].slowdown)


@settings(max_examples=15, deadline=None)
@given(x64=st.floats(50, 200), i386=st.floats(50, 200), factor=st.floats(0.01, 100),
       seed=st.integers(0, 1000))
def test_a_baseline_change_is_unit_free_and_swapping_runs_inverts_it(
        x64: float, i386: float, factor: float, seed: int) -> None:
    """Generated: both runs times one factor change nothing; swapping now and baseline turns
    each cost ratio into its inverse; a run against itself never fails the gate."""
    then, now = doc(1, BASE, seed=seed), doc(2, {"i386": i386, "x86_64": x64}, seed=seed + 1)
    scaled = [RunDoc.from_dict(_scaled(d.to_dict(), factor)) for d in (then, now)]
    a, b, back = against(now, then), against(scaled[1], scaled[0]), against(then, now)
    for ca, cb, cback in zip(a.workloads[0].abis, b.workloads[0].abis, back.workloads[0].abis,
                             strict=True):
        assert cb.slowdown == pytest.approx(ca.slowdown, rel=1e-6, abs=1e-9)
        assert (1 + cback.slowdown) * (1 + ca.slowdown) == pytest.approx(1.0, rel=1e-9)
        assert ca.significant == cb.significant == cback.significant
    assert against(now, now).slowdowns(0.0) == []


def _scaled(d: dict[str, Any], factor: float) -> dict[str, Any]:
    for s in d["samples"]:
        s["metrics"] = {k: v * factor for k, v in s["metrics"].items()}
    return d
