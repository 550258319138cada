"""The noise calibration is a table in every format: what it measured, what it chose, and why
(issue 29: the host table printed the profile as raw JSON)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from abibench.analyse import report as analysis
from abibench.analyse.merge import ResultSet
from abibench.probe.noise import CpuNoise, NoiseProfile, PairNoise
from abibench.report import render
from abibench.store.exchange import document

MakeDoc = Callable[..., dict[str, Any]]

PROFILE = NoiseProfile(
    measured_at=1.7e9, duration_s=20.0, boot_id="b",
    cpus=(CpuNoise(0, 0.031, {"1": 0.012}, 0.25, 2000),
          CpuNoise(1, 0.027, {"1": 0.010}, 0.30, 2000)),
    cross_cpu=0.62, pairs={"1": PairNoise(0.018, 0.006, 0.009, 20)}, foreign_cpu=0.0)
REASON = "pairs one after the other vary 1.8%, on two CPUs at once 0.6%"


def _doc(make_doc: MakeDoc) -> dict[str, Any]:
    doc = make_doc()
    doc["host"]["noise"] = PROFILE.to_dict()
    doc["outcomes"]["alpha"]["stop_reason"] = f"fixed rounds [sampled simultaneous: {REASON}]"
    return doc


def test_calibration_is_a_table_in_every_format(make_doc: MakeDoc) -> None:
    doc = document(_doc(make_doc), "cal.json")
    for report in (analysis.from_run(doc),
                   analysis.from_sets([ResultSet(doc, "a"), ResultSet(doc, "b")])):
        rows = {r.label: r.values for r in report.calibration}
        assert rows["speed stays put for"][0] == "0.25 s"
        assert rows["CPU speed spread"][0] == "3.1% between 10 ms slices, 1.2% between 1 s windows"
        assert rows["two 1 s samples differ (sd)"][0].startswith("1.8% one after the other")
        assert rows["design for alpha"][0] == f"simultaneous: {REASON}"
        assert "design for beta" not in rows  # no design recorded: no row
        assert all(len(v) == len(report.sets) for v in rows.values())
        # Nowhere as JSON, in any format that shows the host: only the table.
        # HTML (a second of charts) for the single run only: its context section is shared.
        for fmt in ("terminal", "markdown", *(["html"] if report.kind == "run" else [])):
            text = render(report, fmt)
            assert '"cpus"' not in text and "&quot;cpus&quot;" not in text, fmt
            assert "Noise calibration" in text or "noise calibration" in text, fmt
            assert "0.25 s" in text and "simultaneous: pairs one after the other" in text, fmt
        shown = json.loads(render(report, "json"))["calibration"]
        assert {"label": "design for alpha",
                "values": [f"simultaneous: {REASON}"] * len(report.sets)} in shown


def test_no_calibration_no_table(make_doc: MakeDoc) -> None:
    report = analysis.from_run(document(make_doc(), "plain.json"))
    assert report.calibration == []
    assert "oise calibration" not in render(report, "markdown") + render(report, "terminal")
