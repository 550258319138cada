"""Charts as SVG strings, drawn by our own writer (report/svgplot.py), for inlining into a
self-contained HTML report.

Honest by construction: bars start at zero, every chart says in its own text whether higher or
lower is better, and whiskers are 95% confidence intervals (of the median for a target's bar, of
the ratio for a difference). Text stays text (the browser draws it with its own fonts, nothing is
embedded or fetched), and a ``$`` in a workload name is a dollar sign. svgplot writes every
piece of text through its one escaping function; every SVG is still parsed and checked
(:func:`check_svg`) before it is handed to a report: no scripts, no event handlers, no links to
anything outside the SVG itself.
"""

from __future__ import annotations

import math
import re
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from ..analyse.explain import Explanation
from ..analyse.footprint import Series
from ..analyse.report import Diff, Panel
from ..analyse.shape import TAIL_FACTOR, Shape
from ..text import one_line
from . import formatting as fmt
from .formatting import better_words
from .svgplot import Axis, Entry, Figure, Scale, nice_ticks, plain

PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c",
           "#ccb974", "#64b5cd", "#2f4b7c")
INVALID = "#c0392b"
GREY = "#777777"

# What svgplot (and report/system.py's stacked bars) write, and nothing that could run or load.
_ALLOWED = {"svg", "g", "path", "text", "tspan", "defs", "pattern", "rect", "line", "polyline",
            "circle", "title"}


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


class UnsafeSvgError(ValueError):
    pass


def check_svg(svg: str) -> None:
    """Refuse an SVG that could run or fetch anything: only drawing elements, local links."""
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as exc:
        raise UnsafeSvgError(f"chart is not well-formed SVG: {exc}") from None
    for el in root.iter():
        name = el.tag.rsplit("}", 1)[-1]
        if name not in _ALLOWED:
            raise UnsafeSvgError(f"chart contains a <{name}> element")
        if name == "style" and re.search(r"@import|url\((?!#)", el.text or ""):
            raise UnsafeSvgError("chart style refers to an external resource")
        for attr, value in el.attrib.items():
            local = attr.rsplit("}", 1)[-1].lower()
            if local.startswith("on"):
                raise UnsafeSvgError(f"chart has an event handler attribute {local}")
            if local == "href" and not value.startswith("#"):
                raise UnsafeSvgError("chart links outside itself")
            if "url(" in value and not re.fullmatch(r"[^()]*(url\(#[\w-]+\)[^()]*)*", value):
                raise UnsafeSvgError("chart refers to an external resource")


# A value beyond this magnitude (an imported 1e308), or one so tiny that only a denormal holds
# it, would overflow an axis's span or its ticks' arithmetic: such a bar is named, not drawn,
# and every axis limit stays finite.
DRAWABLE = 1e300


def _drawable(value: float) -> bool:
    return math.isfinite(value) and (value == 0 or 1 / DRAWABLE <= abs(value) <= DRAWABLE)


LABEL_MAX = 120  # characters of a name a chart shows; the tables beside it show all of it


def _wrap(text: str, width: int) -> str:
    """A label from results in lines of at most `width`. Control characters go first: XML has
    no place for them, so one in a workload's name would make the chart's SVG unreadable; and a
    name of kilobytes is cut short rather than laid out over hundreds of lines."""
    text = one_line(text)
    if len(text) > LABEL_MAX:
        text = text[:LABEL_MAX - 1] + "…"
    return "\n".join(textwrap.wrap(text, width, break_long_words=True)) or text


def _tick(value: float, _pos: int | None = None) -> str:
    return "0" if value == 0 else fmt.si(value)



def _margin(lo: float, hi: float, log: bool = False, share: float = 0.05) -> tuple[float, float]:
    """The span of the data widened by `share` of itself each way (of its logarithm on a log
    axis), as an automatic axis would; a single value gets a span of its own."""
    if log:
        if hi <= lo:
            return lo / 2, hi * 2
        f = (hi / lo) ** share
        return lo / f, hi * f
    if hi <= lo:
        d = abs(lo) * 0.1 or 1.0
        return lo - d, hi + d
    d = (hi - lo) * share
    return lo - d, hi + d


def _categories(labels: Sequence[str], width: int) -> list[tuple[float, str]]:
    return [(float(i), _wrap(label, width)) for i, label in enumerate(labels)]


def _bar_unit(panel: Panel) -> tuple[str, float]:
    finite = [b.median for b in panel.bars if math.isfinite(b.median)]
    if panel.unit == "KiB" and finite and max(finite) >= 4096:
        return "MiB", 1 / 1024
    return panel.unit, 1.0


def _bar_note(panel: Panel, median: float, state: str) -> str:
    return _wrap(state if math.isnan(median) else
                 f"{fmt.si(median, panel.unit)}: out of the chart's range", 1000)


def bars_svg(panel: Panel, title: str, colours: dict[str, str], salt: str) -> str:
    """One metric, one bar per target from zero, whiskers: 95% CI of the median (two order statistics).

    Up to four short labels stand under vertical bars; more or longer ones (N-way comparisons)
    get horizontal bars with the labels beside them, so they never overlap.
    """
    words = better_words(panel.better)
    unit, scale = _bar_unit(panel)
    horizontal = len(panel.bars) > 4 or max((len(b.label) for b in panel.bars), default=0) > 10
    n = len(panel.bars)
    top = bottom = 0.0
    for bar in panel.bars:
        value, low, high = bar.median * scale, bar.low * scale, bar.high * scale
        if _drawable(value):
            top = max(top, high if _drawable(high) else value, value)
            bottom = min(bottom, low if _drawable(low) else value, value)
    axis_label = f"{_wrap(unit, 1000)} ({words})" if unit else words
    limit = top * (1.3 if horizontal else 1.15) if top > 0 else 1.0
    # Negative medians (a program's own metric may be) hang below zero.
    floor = bottom * (1.3 if horizontal else 1.15)
    values = Axis(Scale(floor, limit), axis_label, fmt=_tick, tick_size=8.5)
    cats = Axis(Scale(-0.5, n - 0.5), ticks=_categories([b.label for b in panel.bars],
                                                         16 if horizontal else 12),
                inverted=horizontal, tick_size=8.5)  # the first target at the top
    fig = Figure(3.7, 1.5 + 0.36 * n if horizontal else 3.0,
                 x=values if horizontal else cats, y=cats if horizontal else values,
                 title=f"{_wrap(title, 40)}\n{words} · median, 95% CI")
    for i, bar in enumerate(panel.bars):
        _one_bar(fig, panel, i, bar.median, bar.low, bar.high, scale, horizontal,
                 colours.get(bar.label, GREY), bar.state)
    return fig.svg(f"{title}: {words}", salt)


def _one_bar(fig: Figure, panel: Panel, i: int, median: float, low: float, high: float,
             scale: float, horizontal: bool, fill: str, state: str) -> None:
    value, low, high = median * scale, low * scale, high * scale
    if not _drawable(value):
        note = _bar_note(panel, median, state)
        if horizontal:
            fig.text(0, i, note, dx=3, colour=GREY)
        else:
            fig.text(i, 0, note, dy=3, rotate=-90, colour=GREY)
        return
    whiskers = _drawable(low) and _drawable(high)
    peak = high if _drawable(high) else value
    if horizontal:
        fig.rect(0, value, i - 0.325, i + 0.325, fill)
        if whiskers:
            fig.whisker(i, min(low, value), max(high, value), True, 4, width=1.2)
        fig.text(peak, i, fmt.si(value), dx=3)
    else:
        fig.rect(i - 0.325, i + 0.325, 0, value, fill)
        if whiskers:
            fig.whisker(i, min(low, value), max(high, value), False, 4, width=1.2)
        fig.text(i, peak, fmt.si(value), dy=2, anchor="middle", valign="bottom")


def _diff_tests(diffs: Sequence[Diff]) -> tuple[list[tuple[str, str]], list[str]]:
    tests: list[tuple[str, str]] = []
    labels: list[str] = []
    for d in diffs:
        if (d.workload, d.metric) not in tests:
            tests.append((d.workload, d.metric))
        if d.label not in labels:
            labels.append(d.label)
    return tests, labels


def _diff_span(diffs: Sequence[Diff]) -> tuple[float, float]:
    lo_x, hi_x = 0.0, 0.0
    for d in diffs:
        if not _drawable(d.percent):
            continue
        if _drawable(d.pct_low) and _drawable(d.pct_high):
            lo_x, hi_x = min(lo_x, d.pct_low), max(hi_x, d.pct_high)
        lo_x, hi_x = min(lo_x, d.percent), max(hi_x, d.percent)
    span = max(hi_x - lo_x, 1.0)
    return lo_x - 0.28 * span, hi_x + 0.28 * span


def diff_svg(diffs: Sequence[Diff], colours: dict[str, str], reference: str, salt: str) -> str:
    """Every test relative to the reference: + means better, whiskers: 95% CI of the ratio."""
    tests, labels = _diff_tests(diffs)
    index = {(d.workload, d.metric, d.label): d for d in diffs}
    nl = max(len(labels), 1)
    height = 1.6 + 0.32 * len(tests) * (0.6 + 0.4 * nl)
    words = f"+ means better than {reference}; higher is better"
    lo, hi = _diff_span(diffs)
    x = Axis(Scale(lo, hi), _wrap(f"% advantage, relative to the loser (+: better than "
                                  f"{reference}; -: {reference} better)", 44),
             fmt=lambda v: f"{v:+.0f}%")
    y = Axis(Scale(-0.5, len(tests) - 0.5), ticks=_categories([f"{w}: {m}" for w, m in tests], 20),
             inverted=True)  # the first test at the top
    fig = Figure(4.8, height, x, y, title=_wrap(f"Every test relative to {reference}", 44) +
                 "\nwhiskers: 95% CI; hatched: not significant")
    group = 0.8
    bar_h = group / nl
    fig.rule("x", 0, "#222222", 1)
    for ti, (wid, metric) in enumerate(tests):
        for li, label in enumerate(labels):
            d = index.get((wid, metric, label))
            if d is not None and _drawable(d.percent):
                _diff_bar(fig, d, ti - group / 2 + bar_h * (li + 0.5), bar_h,
                          colours.get(label, GREY) if d.valid else INVALID)
    entries = [Entry(_wrap(lbl, 28), colours.get(lbl, GREY)) for lbl in labels]
    if any(not d.valid for d in diffs):
        entries.append(Entry("outputs differ: invalid", INVALID))
    if len(entries) > 1:
        fig.legend = entries
    return fig.svg(f"every test relative to {reference}: {words}", salt)


def _diff_bar(fig: Figure, d: Diff, y: float, bar_h: float, fill: str) -> None:
    fig.rect(0, d.percent, y - bar_h * 0.45, y + bar_h * 0.45, fill,
             opacity=1.0 if d.significant else 0.55, hatch=not d.significant)
    whiskers = _drawable(d.pct_low) and _drawable(d.pct_high)
    if whiskers:
        fig.whisker(y, min(d.pct_low, d.percent), max(d.pct_high, d.percent), True, 3)
    edge = d.pct_high if d.percent >= 0 else d.pct_low
    if not _drawable(edge) or not whiskers:
        edge = d.percent
    right = d.percent >= 0
    fig.text(edge, y, d.headline + ("" if d.valid else " INVALID"), dx=4 if right else -4,
             anchor="start" if right else "end", size=8)


INSN_COLOUR = "#4c72b0"
TPI_COLOUR = "#dd8452"
WHY_STEPS = (0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 1.0, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0)


def _why_span(rows: Sequence[Explanation]) -> tuple[float, float]:
    lo, hi = 1.0, 1.0
    for x in rows:
        assert x.instructions is not None
        ins, cost = x.instructions.value, x.cost.value
        if _drawable(x.cost.low) and _drawable(x.cost.high) and x.cost.low > 0:
            lo, hi = min(lo, x.cost.low), max(hi, x.cost.high)
        lo, hi = min(lo, ins, cost), max(hi, ins, cost)
    pad = (hi / lo) ** 0.15 if hi > lo else 1.2
    return lo / pad, hi * pad * 1.15


def why_svg(explanations: Sequence[Explanation], salt: str) -> str:
    """Each comparison's time ratio as a stack from 1.0 on a log axis: the instruction-count
    ratio first, then the time-per-instruction ratio on top of it; they end at the time ratio,
    whose 95% CI is the whisker. Left of 1.0: the first ABI takes less."""
    rows = [x for x in explanations if x.instructions is not None
            and x.per_instruction is not None and _drawable(x.cost.value)
            and _drawable(x.instructions.value) and x.cost.value > 0
            and x.instructions.value > 0]
    n = max(len(rows), 1)
    lo, hi = _why_span(rows)
    # Ticks a reader can place: 1 and the usual steps around it, as far as the data go.
    x = Axis(Scale(lo, hi, log=True), "ratio a/b on a log scale; < 1: a takes less (lower is "
             "better)", ticks=[(t, f"{t:g}") for t in WHY_STEPS if lo <= t <= hi])
    y = Axis(Scale(-0.7, n - 0.5), ticks=_categories([f"{r.workload}: {r.a}/{r.b}"
                                                      for r in rows], 24), inverted=True)
    # Over the whole figure, not the axes: the workload labels take the left part, and a
    # title centred over the rest would run past the right edge.
    fig = Figure(5.6, 1.7 + 0.5 * n, x, y, title_over_figure=True,
                 title="Why: time ratio = instruction ratio × time-per-instruction ratio\n"
                       "diamond: time ratio, whiskers: its 95% CI",
                 legend=[Entry("instruction-count ratio (from 1)", INSN_COLOUR),
                         Entry("× time-per-instruction ratio", TPI_COLOUR)],
                 legend_below=True, legend_columns=2)
    for i, r in enumerate(rows):
        assert r.instructions is not None
        ins, cost = r.instructions.value, r.cost.value
        fig.rect(1, ins, i, i + 0.36, INSN_COLOUR)
        fig.rect(ins, cost, i - 0.36, i, TPI_COLOUR)
        if _drawable(r.cost.low) and _drawable(r.cost.high) and r.cost.low > 0:
            fig.whisker(i, min(r.cost.low, cost), max(r.cost.high, cost), True, 3)
        fig.line([cost], [i], "#222222", width=0, marker="D", size=4)
        at = max(cost, r.cost.high) if _drawable(r.cost.high) else cost
        fig.text(at, i, f"{fmt.number(cost, '.3f')}", dx=4, size=8)
    fig.rule("x", 1.0, "#222222", 1)
    if not rows:
        fig.text(1.0, 0, "no comparison has instruction counts", dx=3, colour=GREY)
    return fig.svg("why: instruction-count ratio and time-per-instruction ratio per workload; "
                   "lower is better", salt)


def _curve_lines(c: Series, quantity: str) -> list[tuple[str, list[tuple[float, float]], bool]]:
    """(label, drawable points, solid) of each line one ABI's curve draws."""
    lines: list[tuple[str, list[float | None], bool]]
    if quantity == "bytes":
        lines = [(c.abi, [p.bytes_per_element for p in c.points], True),
                 (f"{c.abi} net", [p.net_bytes_per_element for p in c.points], False)]
    else:
        lines = [(c.abi, [p.ns_per_element for p in c.points], True)]
    return [(label, [(float(p.n), v) for p, v in zip(c.points, values, strict=True)
                     if v is not None and _drawable(v) and _drawable(float(p.n))], solid)
            for label, values, solid in lines]


def curve_svg(curves: Sequence[Series], title: str, quantity: str, colours: dict[str, str],
              salt: str, small: bool = False) -> str:
    """One footprint quantity against N (log axis), one line with markers per ABI, y from zero.

    ``quantity`` is "bytes" (median peak RSS per element, solid, with the net figure, resident
    size before building taken off, dashed where measured) or "ns" (time per element). Lower is
    better for both.
    """
    words = better_words("lower")
    lines = [(c.abi, label, pts, solid) for c in curves
             for label, pts, solid in _curve_lines(c, quantity) if pts]
    xs = [x for *_, pts, _s in lines for x, _ in pts]
    top = max((y for *_, pts, _s in lines for _, y in pts), default=0.0)
    what = "peak RSS bytes / element" if quantity == "bytes" else "ns / element"
    if lines:
        # Plain text ticks: a power of ten as 1k, 10k, 100k.
        x = Axis(Scale(*_margin(min(xs), max(xs), log=True), log=True),
                 "N elements (log scale)", fmt=_tick, tick_size=8.5)
    else:
        x = Axis(Scale(0, 1), "N elements (log scale)", tick_size=8.5)
    y = Axis(Scale(0, top * 1.15 if top > 0 else 1.0), f"{what}\n({words})", fmt=_tick,
             tick_size=8.5)
    sub = "median; dashed: net" if quantity == "bytes" else "median"
    fig = Figure(3.7, 2.5 if small else 3.0, x, y,
                 title=f"{_wrap(title, 40)}\n{words} · {sub}", legend_size=7.5)
    for abi, label, pts, solid in lines:
        fig.line([p[0] for p in pts], [p[1] for p in pts], colours.get(abi, GREY),
                 width=1.5 if solid else 1.0, dash="none" if solid else "4 2",
                 marker="o" if solid else "s", size=4 if solid else 3)
        fig.legend.append(Entry(_wrap(label, 24), colours.get(abi, GREY),
                                "line" if solid else "dashed", "o" if solid else "s"))
    if not lines:
        fig.text(0.5, 0.5, "no samples", anchor="middle", colour=GREY, size=9.5, in_axes=True)
    return fig.svg(f"{title}: {what}, {words}", salt)


def shape_svg(shapes: Sequence[Shape], title: str, colours: dict[str, str], salt: str) -> str:
    """Every sample of each target whose samples have a slow tail or two modes, as dots on one
    axis: how much worse than the target's typical sample each was, in sample order from bottom
    to top of its band; a dashed line marks the tail's edge (TAIL_FACTOR)."""
    edge = (TAIL_FACTOR - 1) * 100
    rows = [[p * 100 for p in s.points if _drawable(p)] for s in shapes]
    values = [v for pts in rows for v in pts if _drawable(v)] + [edge]
    lo, hi = _margin(min(values), max(values))
    ticks = nice_ticks(lo, hi)
    x = Axis(Scale(lo, hi), "% worse than the target's typical sample (its fastest quarter); "
             "dashed: the tail's edge", fmt=plain(ticks))
    y = Axis(Scale(-0.5, len(shapes) - 0.5),
             ticks=_categories([f"{s.target}: {s.kind}" for s in shapes], 28))
    fig = Figure(7.0, 0.9 + 0.55 * len(shapes), x, y, title=_wrap(title, 90), title_size=10)
    for row, (shape, pts) in enumerate(zip(shapes, rows, strict=True)):
        n = max(1, len(pts))
        ys = [row - 0.3 + 0.6 * i / n for i in range(len(pts))]
        fig.line(pts, ys, colours.get(shape.target, GREY), width=0, marker="o", size=3.5)
    fig.rule("x", edge, GREY, 0.8, "4 2")
    return fig.svg(title, salt)

