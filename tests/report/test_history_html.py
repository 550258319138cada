"""The history page: self-contained, escaped, one checked chart per series."""

from __future__ import annotations

from abibench.analyse.history import history
from abibench.report import historyhtml
from tests.analyse.test_baseline_history import _two_builds, doc


def test_the_history_page_charts_every_series_and_escapes_a_hostile_tag() -> None:
    runs = [*_two_builds(), doc(5, {"i386": 80.0, "x86_64": 100.0}, tag="<script>alert(1)</script>")]
    hist = history(runs, "alpha")
    page = historyhtml.render(hist)
    assert 'http-equiv="Content-Security-Policy" content="default-src &#x27;none&#x27;' in page
    assert page.count("<svg ") == len(hist.series) == 3
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "version v1 -&gt; v2" in page  # the change, in words
