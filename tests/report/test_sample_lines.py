"""The JSON report's and the samples CSV's per-sample writers, made fast, write what the
general ones write.

The family: a writer that builds a sample's line or cells its own way and says something else
(a boolean as 1, a float that is not finite as Infinity where the report writes null, a text
that starts a formula not guarded, a nested record not encoded, a column out of place, the
row's run id where the sample's goes). Generated: samples as a run writes them (derived from
`Sample`'s fields), with values no run writes (not finite, text that starts a formula or holds
escapes, whole numbers beyond 64 bits) put in, tagged with generated set, host and series.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.analyse.report import SampleRow
from abibench.codec import decoder, optional_of, spec
from abibench.records import Sample
from abibench.report import csvout, samplerows
from abibench.report.csvout import _fast_cells, _sample_cells
from abibench.report.jsonout import _fast_line, _sample_line
from abibench.text import clean, clean_all
from tests.documents import synthetic_doc
from tests.store.test_import_generated import TEXT, record_of

ODD: dict[type, list[Any]] = {
    float: [math.inf, -math.inf, math.nan, -0.0, 1e300, 5e-324],
    int: [-1, 1 << 70, True],
    str: ["=1+1", "+x", "-1.5", "@a", "\t", "\x1b[2Jx", "a,b\"c\nd", ""],
}


@st.composite
def rows(draw: st.DrawFn) -> SampleRow:
    sample: Sample = decoder(Sample, strict=True)(draw(record_of(Sample)))
    for f in spec(Sample):
        inner = optional_of(f.type)[1]
        if inner in ODD and draw(st.integers(0, 5)) == 0:
            sample = dataclasses.replace(sample, **{f.name: draw(st.sampled_from(ODD[inner]))})
    if draw(st.booleans()):
        sample = dataclasses.replace(sample, metrics={
            draw(TEXT): draw(st.sampled_from([1.0, math.inf, math.nan, 2]))})
    text = TEXT | st.sampled_from(ODD[str])
    return SampleRow(draw(text), draw(text), draw(st.none() | text),
                     draw(st.none() | st.sampled_from([32, 64])), draw(text), sample)


def _csv(cells: Sequence[object]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    return out.getvalue()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows(), st.lists(TEXT, max_size=3))
def test_the_fast_writers_write_what_the_general_ones_write(row: SampleRow,
                                                             extra: list[str]) -> None:
    assert _fast_line(row) == _sample_line(row)
    metrics = sorted({*row.sample.metrics, *extra})
    assert _csv(_fast_cells(row, metrics)) == _csv(_sample_cells(row, metrics))


# ----------------------------------------------------------------- the batches of a whole report

HOSTILE = ("\x1b[2J", "\u202e", "\x9b", "a\rb", "\u2028", "\ud800", "é", "\\u001b", "=1", "%s")


@st.composite
def groups(draw: st.DrawFn) -> list[samplerows.Group]:
    """Result sets as a report holds them: samples as a run writes them, some with a value no
    run writes or a text to clean put in, tagged with generated (and hostile) set, host and
    series."""
    plain = st.sampled_from(["a", "i386", "w00", "host-1", ""])
    text = plain | st.sampled_from(HOSTILE) | TEXT
    out: list[samplerows.Group] = []
    for _ in range(draw(st.integers(1, 3))):
        doc = synthetic_doc(rounds=draw(st.integers(0, 2)), seed=draw(st.integers(0, 9)))
        samples = [Sample.from_dict(d) for d in doc["samples"]]
        for k, s in enumerate(samples):
            if draw(st.integers(0, 3)) == 0:
                samples[k] = draw(rows()).sample if draw(st.booleans()) else \
                    dataclasses.replace(s, error=draw(text), metrics={
                        **s.metrics, draw(text): draw(st.sampled_from([1.5, math.inf]))})
        labels = {t: draw(text) for t in ("i386", "x86_64") if draw(st.booleans())}
        out.append((draw(text), draw(text), draw(st.none() | text),
                    draw(st.none() | st.sampled_from([32, 64])), labels, samples))
    return out


def _rows(gs: list[samplerows.Group]) -> list[SampleRow]:
    """The report's rows, cleaned, as CleanRows gives them to the general writers."""
    return [clean_all(SampleRow(tag, run_id, host, bits, labels.get(s.target, s.target), s))
            for tag, run_id, host, bits, labels, samples in gs for s in samples]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(), st.integers(1, 4))
def test_a_reports_batches_are_its_cleaned_rows_written_the_general_way(
        gs: list[samplerows.Group], batch: int) -> None:
    old = samplerows.BATCH
    samplerows.BATCH = batch  # small batches: a batch redone beside one that is not
    try:
        lines = ",\n".join(samplerows.json_batches(gs, _fast_line))
        metrics = sorted({clean(m) for *_, samples in gs for s in samples for m in s.metrics})
        cells = "".join(csvout.csv_batches(gs, metrics))
    finally:
        samplerows.BATCH = old
    rows_ = _rows(gs)
    assert lines == ",\n".join(f"  {_fast_line(r)}" for r in rows_)
    assert cells == "".join(_csv(_fast_cells(r, metrics)) for r in rows_)


def test_rows_as_a_run_writes_them_take_the_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast way is the one the property above tests: plain rows never need the general."""
    def general(*_: object) -> str:
        raise AssertionError("the general way was taken")
    monkeypatch.setattr(samplerows, "cleaned_row", general)
    monkeypatch.setattr(csvout, "cleaned_row", general)
    samples = [Sample.from_dict(d) for d in synthetic_doc(rounds=3)["samples"]]
    gs: list[samplerows.Group] = [("a", "r", "vm", 64, {"i386": "i386/x"}, samples)]
    assert len(",\n".join(samplerows.json_batches(gs, _fast_line)).splitlines()) == len(samples)
    assert len("".join(csvout.csv_batches(gs, ["rate", "time"])).splitlines()) == len(samples)
