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

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.analyse.report import SampleRow
from abibench.codec import decoder, optional_of, spec
from abibench.records import Sample
from abibench.report.csvout import _fast_cells, _sample_cells
from abibench.report.jsonout import _fast_line, _sample_line
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
