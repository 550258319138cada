"""Every chart drawn by report/svgplot.py, with generated hostile names and extreme numbers.

The family: "text from a run reaches the page unescaped" (docs/reliability.md, Invariants).
Hypothesis draws each chart type (bars, difference, why, footprint curve, shape, history
series, sweep curve) with names made of markup, controls, bidi marks, wide and right-to-left
scripts and very long runs, and numbers from the extremes (0, negatives, denormals, 1e308, nan,
inf where a caller can pass them; one bar, many bars). Each SVG is parsed: well-formed,
`check_svg` passes, every name is there as text (escaped once: the parser gives it back), no
coordinate is nan or inf. The scale and tick helpers are checked on their own below.
"""

from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.analyse import report as analysis
from abibench.analyse.explain import Explanation, Interval
from abibench.analyse.footprint import Point, Series
from abibench.analyse.history import Change, History
from abibench.analyse.history import Point as HistPoint
from abibench.analyse.shape import Shape
from abibench.analyse.sweeps import Axis, Curve, RatioPoint
from abibench.report import charts, historyhtml, svgplot, sweepview

NS = "{http://www.w3.org/2000/svg}"
PIECES = ("<script>alert(1)</script>", "</text></svg><svg onload=x>", "&amp;", "&", "<", ">",
          "\"", "'", "]]>", "<!--", "\x1b[31m", "\x00", "\x9b", "\u202e", "\u2066", "\u200f",
          "\u061c", "\n", "\t", "$x^2$", "עברית", "العربية", "中文", "🙂", "\ufeff", "\ud800", " ", "x" * 200)
names = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), min_size=1,
                 max_size=5).map("".join)
# Numbers as analyses can hand them over: the extremes, zero, tiny, negative; nan and inf.
numbers = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e308, -1e308, 5e-324, 1e-300,
                                     math.nan, math.inf, -math.inf, 1e300, 2.5e-7]),
                    st.floats(allow_nan=True, allow_infinity=True))
positive = st.floats(min_value=1e-310, max_value=1e308)
_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]
# bench/svgcharts.py runs these for minutes: this many examples a test instead of CI's few.
_MANY = int(os.environ.get("ABIBENCH_SVG_EXAMPLES", "0"))


def _examples(ci: int) -> int:
    return _MANY or ci
COORDS = {"x", "y", "x1", "y1", "x2", "y2", "width", "height", "cx", "cy", "r", "dy", "points",
          "d", "transform", "viewBox", "font-size", "stroke-width", "fill-opacity"}


def _texts(root: ET.Element) -> Iterator[str]:
    for el in root.iter(f"{NS}text"):
        yield "".join("".join(t.itertext()) for t in el.iter(f"{NS}tspan"))


def _bare(text: str) -> str:
    return "".join(text.split())


def check_chart(svg: str, shown: list[str]) -> None:
    """Well-formed, checked, finite, and every name in `shown` drawn as text. A name drawn
    inside a longer label is given as that label: the sanitiser reads the label whole (a raw
    CSI at a name's end takes the ": m" after it as its parameters)."""
    charts.check_svg(svg)
    root = ET.fromstring(svg)
    assert root.get("role") == "img" and root.get("class") == "chart"
    assert root.get("viewBox") and root.get("aria-label") is not None
    for el in root.iter():
        for attr, value in el.attrib.items():
            if attr in COORDS:
                assert not re.search(r"nan|inf", value, re.I), (attr, value)
                for tok in re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?", value):
                    assert math.isfinite(float(tok)), (attr, value)
    texts = [_bare(t) for t in _texts(root)]
    whole = "".join(texts)
    for name in shown:
        want = _bare(svgplot.shown(name)[:charts.LABEL_MAX // 2])
        assert want in whole, (name, want, texts[:20])


@settings(max_examples=_examples(25), deadline=None, suppress_health_check=_SLOW)
@given(labels=st.lists(names, min_size=1, max_size=9, unique=True),
       values=st.lists(st.tuples(numbers, numbers, numbers), min_size=9, max_size=9),
       title=names, unit=names, better=st.sampled_from(["higher", "lower"]))
def test_bars_and_differences_with_hostile_names_and_extreme_numbers(
        labels: list[str], values: list[tuple[float, float, float]], title: str, unit: str,
        better: str) -> None:
    bars = tuple(analysis.Bar(lbl, "not run" if math.isnan(m) else "ok", 3, m, lo, hi)
                 for lbl, (m, lo, hi) in zip(labels, values, strict=False))
    panel = analysis.Panel("metric", unit, better, True, bars)  # type: ignore[arg-type]
    check_chart(charts.bars_svg(panel, title, {}, salt=title), [title, *labels])
    diffs = [analysis.Diff(title, "m", unit, better, True, lbl, labels[0], 1.0, 0.9, 1.1,  # type: ignore[arg-type]
                           0.01, p, lo, hi, i % 2 == 0, "v", i % 3 != 0, f"{lbl} [x]")
             for i, (lbl, (p, lo, hi)) in enumerate(zip(labels, values, strict=False))]
    shown = [f"{title}: m"] + [d.label for d in diffs if charts._drawable(d.percent)]
    check_chart(charts.diff_svg(diffs, {}, labels[0], salt="d"), shown if len(labels) > 1 else [])


@settings(max_examples=_examples(20), deadline=None, suppress_health_check=_SLOW)
@given(rows=st.lists(st.tuples(names, names, names, positive, positive, numbers, numbers),
                     min_size=0, max_size=5))
def test_why_with_hostile_names_and_extreme_ratios(
        rows: list[tuple[str, str, str, float, float, float, float]]) -> None:
    xs = [Explanation(w, a, b, "instructions", "t", None, Interval(cost, lo, hi), True,
                      Interval(ins, ins, ins), True, Interval(cost / ins, math.nan, math.nan))
          for w, a, b, ins, cost, lo, hi in rows]
    drawn = [x for x, (*_, ins, cost, _lo, _hi) in zip(xs, rows, strict=True)
             if charts._drawable(ins) and charts._drawable(cost)]
    check_chart(charts.why_svg(xs, salt="w"), [f"{x.workload}: {x.a}/{x.b}" for x in drawn])


@settings(max_examples=_examples(20), deadline=None, suppress_health_check=_SLOW)
@given(abis=st.lists(names, min_size=1, max_size=3, unique=True), title=names,
       values=st.lists(numbers, min_size=3, max_size=3),
       sizes=st.lists(st.integers(1, 10**12), min_size=1, max_size=3, unique=True))
def test_curves_and_shapes_with_hostile_names(abis: list[str], title: str, values: list[float],
                                              sizes: list[int]) -> None:
    series = [Series(title, abi, tuple(Point(n, 3, 1.0, values[i % 3], values[(i + 1) % 3],
                                             values[(i + 2) % 3], ())
                                       for i, n in enumerate(sorted(sizes))))
              for abi in abis]
    drawn = [s.abi for s in series if any(charts._drawable(p.bytes_per_element)
                                          for p in s.points)]
    check_chart(charts.curve_svg(series, title, "bytes", {}, salt="c"), [title, *drawn])
    shapes = [Shape(abi, "slow tail", 1, 3, 0.1, 0.2, tuple(values)) for abi in abis]
    check_chart(charts.shape_svg(shapes, title, {}, salt="s"),
                [title, *[f"{abi}: slow tail" for abi in abis]])


@settings(max_examples=_examples(15), deadline=None, suppress_health_check=_SLOW)
@given(workload=names, series=st.lists(names, min_size=1, max_size=3, unique=True),
       tags=st.lists(names, min_size=1, max_size=6), level=positive)
def test_history_series_with_hostile_names(workload: str, series: list[str], tags: list[str],
                                           level: float) -> None:
    points = tuple(HistPoint(f"r{i}", "2026", {"version": tag}, {s: level * (1 + i % 2)
                                                                 for s in series}, {})
                   for i, tag in enumerate(tags))
    changes = tuple(Change(s, 1, "r1", level, level * 2, 0.01) for s in series if len(tags) > 1)
    hist = History(workload, "rate", "ops/s", "higher", "version", None, tuple(series), points,
                   changes, ratios=(series[0],))
    for s in series:
        shown = [f"{workload}: {s}", *tags]
        check_chart(historyhtml.series_svg(hist, s, salt=s), shown)


@settings(max_examples=_examples(15), deadline=None, suppress_health_check=_SLOW)
@given(base=names, param=names, values=st.lists(st.sampled_from(["1", "10", "1000", "7", "x", "2.5"]),
                                                min_size=1, max_size=5),
       ratios=st.lists(st.tuples(numbers, numbers, numbers), min_size=5, max_size=5))
def test_sweep_curve_with_hostile_names(base: str, param: str, values: list[str],
                                        ratios: list[tuple[float, float, float]]) -> None:
    pts = tuple(RatioPoint(r, lo, hi) for r, lo, hi in ratios[:len(values)])
    curve = Curve(base, param, tuple(values), (),
                  (Axis("rate", "ops/s", "higher", "i386", "x86_64", pts),))
    check_chart(sweepview.chart_svg(curve, salt="s"), [f"{base}: ratios against {param}"])


def test_esc_is_the_one_sanitiser_and_escapes_once() -> None:
    shown = svgplot.esc("a<b>&\"'\x1b[2J\u202e\nz")
    assert shown.startswith("a&lt;b&gt;&amp;&quot;&#x27;") and shown.endswith(" z")
    assert not any(c in shown for c in "\x1b\u202e\n<>")
    assert svgplot.esc("&amp;") == "&amp;amp;"  # a name that looks escaped is shown as typed


def test_nice_ticks_are_round_and_span_the_range() -> None:
    assert svgplot.nice_ticks(0, 5.03) == [0, 1, 2, 3, 4, 5]
    assert svgplot.nice_ticks(0, 10e6) == [0, 2e6, 4e6, 6e6, 8e6, 10e6]
    assert svgplot.nice_ticks(-0.5, 0.5) == [-0.4, -0.2, 0.0, 0.2, 0.4]
    assert svgplot.log_ticks(5e3, 2e6)[0] == [1e4, 1e5, 1e6]
    assert svgplot.plain([0.8, 0.9, 1.0])(1.0) == "1.0"
    assert svgplot.plain([0, 50, 100])(50) == "50"


@given(lo=st.floats(-1e300, 1e300), span=st.floats(1e-300, 1e300))
@settings(max_examples=50, deadline=None)
def test_nice_ticks_stay_few_and_inside(lo: float, span: float) -> None:
    hi = lo + span
    if not math.isfinite(hi) or hi <= lo:
        return
    ticks = svgplot.nice_ticks(lo, hi)
    assert 1 <= len(ticks) <= 50 and all(math.isfinite(t) for t in ticks)
