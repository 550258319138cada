"""The history page: self-contained, escaped, one checked chart per series."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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


@settings(max_examples=6, deadline=None)
@given(names=st.lists(st.from_regex(r"[a-z0-9]{1,4}(/[a-z0-9]{1,4}){0,2}", fullmatch=True),
                      min_size=2, max_size=2, unique=True))
def test_a_series_is_a_ratio_because_the_analysis_says_so_not_its_name(names: list[str]) -> None:
    from abibench.records import RunDoc
    from tests.conftest import synthetic_doc

    docs = [RunDoc.from_dict(synthetic_doc(
        run_id=f"2026010{i}-000000-aaaa", started=f"2026-01-0{i}T00:00:00+00:00", seed=i,
        targets=tuple(names), workloads={"alpha": {names[0]: 90.0, names[1]: 100.0}}))
        for i in (1, 2)]
    hist = history(docs, "alpha")
    assert len(hist.ratios) == 1 and set(hist.series) == {*hist.ratios, *names}
    assert not any(hist.is_ratio(n) for n in names)
    for s in names:  # a target's chart is labelled with its metric, never as a ratio
        svg = historyhtml.series_svg(hist, s, "t")
        assert "ratio (other/reference)" not in svg and "rate ops/s" in svg
