"""Charts as SVG strings, drawn by matplotlib, for inlining into a self-contained HTML report.

Honest by construction: bars start at zero, every chart says in its own text whether higher or
lower is better, and whiskers are 95% confidence intervals (of the median for a target's bar, of
the ratio for a difference). Text stays text (``svg.fonttype = none``: the browser draws it with
its own fonts, nothing is embedded or fetched) and mathtext is off, so a ``$`` in a workload
name is a dollar sign. matplotlib escapes text and attributes it writes into SVG; every SVG is
still parsed and checked (:func:`check_svg`) before it is handed to a report: no scripts, no
event handlers, no links to anything outside the SVG itself.
"""

from __future__ import annotations

import io
import math
import re
import textwrap
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from html import escape
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter

from ..analyse.explain import Explanation
from ..analyse.footprint import Series
from ..analyse.report import Diff, Panel
from ..analyse.shape import TAIL_FACTOR, Shape
from ..text import one_line
from . import formatting as fmt
from .formatting import better_words

PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c",
           "#ccb974", "#64b5cd", "#2f4b7c")
INVALID = "#c0392b"
GREY = "#777777"

_ALLOWED = {"svg", "g", "path", "text", "tspan", "defs", "style", "clipPath", "use", "rect",
            "line", "polyline", "polygon", "circle", "ellipse", "title", "desc", "metadata",
            "pattern", "linearGradient", "radialGradient", "stop", "mask"}


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _rc(salt: str) -> Any:  # rc_context wants literal keys; these are checked at run time
    return {"svg.fonttype": "none", "text.parse_math": False, "text.usetex": False,
            "svg.hashsalt": salt, "font.family": ["DejaVu Sans", "sans-serif"],
            "font.size": 9.5, "axes.spines.top": False, "axes.spines.right": False,
            "axes.titlesize": 10, "hatch.color": "#ffffff", "hatch.linewidth": 1.2}


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


def _to_svg(fig: Figure, label: str) -> str:
    buf = io.StringIO()
    with warnings.catch_warnings():
        # Text stays text in the SVG (svg.fonttype none) and the browser's fonts draw it, so a
        # name in a script DejaVu lacks is no problem, and no reason to warn on every report.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, count=1, flags=re.S)
    check_svg(svg)
    # The label is a name from a run (a history's is not from a cleaned Report): the one
    # sanitiser here, for every chart, then escaped for the attribute.
    shown = escape(one_line(label))
    return svg.replace("<svg ", f'<svg role="img" aria-label="{shown}" class="chart" ', 1)


# matplotlib's transforms multiply data by hundreds of points and divide by an axis's span, so a
# value beyond this magnitude (an imported 1e308), or one so tiny that only a denormal holds it,
# overflows them: such a bar is named, not drawn, and every axis limit stays finite.
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


def bars_svg(panel: Panel, title: str, colours: dict[str, str], salt: str) -> str:
    """One metric, one bar per target from zero, whiskers: 95% CI of the median (two order statistics).

    Up to four short labels stand under vertical bars; more or longer ones (N-way comparisons)
    get horizontal bars with the labels beside them, so they never overlap.
    """
    words = better_words(panel.better)
    unit, scale = panel.unit, 1.0
    finite = [b.median for b in panel.bars if math.isfinite(b.median)]
    if unit == "KiB" and finite and max(finite) >= 4096:
        unit, scale = "MiB", 1 / 1024
    horizontal = len(panel.bars) > 4 or max((len(b.label) for b in panel.bars), default=0) > 10
    n = len(panel.bars)
    with matplotlib.rc_context(_rc(salt)):
        fig = Figure(figsize=(3.7, 1.5 + 0.36 * n if horizontal else 3.0), layout="constrained")
        ax = fig.add_subplot()
        top = bottom = 0.0
        for i, bar in enumerate(panel.bars):
            value = bar.median * scale
            if not _drawable(value):
                note = _wrap(bar.state if math.isnan(bar.median) else
                             f"{fmt.si(bar.median, panel.unit)}: out of the chart's range", 1000)
                if horizontal:
                    ax.text(0, i, f" {note}", ha="left", va="center", color=GREY,
                            fontsize=8.5)
                else:
                    ax.text(i, 0, f" {note}", rotation=90, ha="center", va="bottom",
                            color=GREY, fontsize=8.5)
                continue
            err = None
            low, high = bar.low * scale, bar.high * scale
            if _drawable(low) and _drawable(high):
                err = [[max(value - low, 0.0)], [max(high - value, 0.0)]]
            peak = high if _drawable(high) else value
            top = max(top, peak, value)
            bottom = min(bottom, low if _drawable(low) else value, value)
            colour = colours.get(bar.label, GREY)
            whisker = {"elinewidth": 1.2, "ecolor": "#222222"}
            if horizontal:
                ax.barh([i], [value], height=0.65, xerr=err, color=colour, capsize=4,
                        error_kw=whisker)
                ax.annotate(fmt.si(value), (peak, i), xytext=(3, 0), textcoords="offset points",
                            ha="left", va="center", fontsize=8.5)
            else:
                ax.bar([i], [value], width=0.65, yerr=err, color=colour, capsize=4,
                       error_kw=whisker)
                ax.annotate(fmt.si(value), (i, peak), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=8.5)
        axis_label = f"{_wrap(unit, 1000)} ({words})" if unit else words
        limit = top * (1.3 if horizontal else 1.15) if top > 0 else 1.0
        # Negative medians (a program's own metric may be) hang below zero.
        floor = bottom * (1.3 if horizontal else 1.15)
        if horizontal:
            ax.set_xlim(floor, limit)
            ax.set_yticks(range(n), [_wrap(b.label, 16) for b in panel.bars])
            ax.set_ylim(n - 0.5, -0.5)  # the first target at the top
            ax.xaxis.set_major_formatter(FuncFormatter(_tick))
            ax.set_xlabel(axis_label)
        else:
            ax.set_ylim(floor, limit)
            ax.set_xticks(range(n), [_wrap(b.label, 12) for b in panel.bars])
            ax.yaxis.set_major_formatter(FuncFormatter(_tick))
            ax.set_ylabel(axis_label)
        ax.tick_params(labelsize=8.5)
        ax.set_title(f"{_wrap(title, 40)}\n{words} · median, 95% CI", fontsize=9.5)
        return _to_svg(fig, f"{title}: {words}")


def diff_svg(diffs: Sequence[Diff], colours: dict[str, str], reference: str, salt: str) -> str:
    """Every test relative to the reference: + means better, whiskers: 95% CI of the ratio."""
    tests: list[tuple[str, str]] = []
    labels: list[str] = []
    for d in diffs:
        if (d.workload, d.metric) not in tests:
            tests.append((d.workload, d.metric))
        if d.label not in labels:
            labels.append(d.label)
    index = {(d.workload, d.metric, d.label): d for d in diffs}
    nl = max(len(labels), 1)
    height = 1.6 + 0.32 * len(tests) * (0.6 + 0.4 * nl)
    words = f"+ means better than {reference}; higher is better"
    with matplotlib.rc_context(_rc(salt)):
        fig = Figure(figsize=(4.8, height), layout="constrained")
        ax = fig.add_subplot()
        group = 0.8
        bar_h = group / nl
        lo_x, hi_x = 0.0, 0.0
        for ti, (wid, metric) in enumerate(tests):
            for li, label in enumerate(labels):
                found = index.get((wid, metric, label))
                if found is None or not _drawable(found.percent):
                    continue
                d = found
                y = ti - group / 2 + bar_h * (li + 0.5)
                err = None
                if _drawable(d.pct_low) and _drawable(d.pct_high):
                    err = [[max(d.percent - d.pct_low, 0.0)], [max(d.pct_high - d.percent, 0.0)]]
                    lo_x, hi_x = min(lo_x, d.pct_low), max(hi_x, d.pct_high)
                lo_x, hi_x = min(lo_x, d.percent), max(hi_x, d.percent)
                c = colours.get(label, GREY) if d.valid else INVALID
                ax.barh([y], [d.percent], height=bar_h * 0.9, color=c,
                        alpha=1.0 if d.significant else 0.55,
                        hatch=None if d.significant else "///", xerr=err, capsize=3,
                        error_kw={"elinewidth": 1.0, "ecolor": "#222222"})
                tag = d.headline + ("" if d.valid else " INVALID")
                edge = d.pct_high if d.percent >= 0 else d.pct_low
                if not _drawable(edge) or err is None:
                    edge = d.percent
                ax.annotate(tag, (edge, y), xytext=(4 if d.percent >= 0 else -4, 0),
                            textcoords="offset points", va="center",
                            ha="left" if d.percent >= 0 else "right", fontsize=8)
        span = max(hi_x - lo_x, 1.0)
        ax.set_xlim(lo_x - 0.28 * span, hi_x + 0.28 * span)
        ax.axvline(0, color="#222222", linewidth=1)
        ax.set_yticks(range(len(tests)), [_wrap(f"{w}: {m}", 20) for w, m in tests])
        ax.set_ylim(len(tests) - 0.5, -0.5)  # the first test at the top
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:+.0f}%"))
        ax.set_xlabel(_wrap(f"% advantage, relative to the loser (+: better than {reference}; "
                            f"-: {reference} better)", 44))
        ax.set_title(_wrap(f"Every test relative to {reference}", 44) +
                     "\nwhiskers: 95% CI; hatched: not significant", fontsize=9.5)
        handles = [Patch(color=colours.get(lbl, GREY), label=_wrap(lbl, 28)) for lbl in labels]
        if any(not d.valid for d in diffs):
            handles.append(Patch(color=INVALID, label="outputs differ: invalid"))
        if len(handles) > 1:
            ax.legend(handles=handles, fontsize=8, loc="best", frameon=False)
        return _to_svg(fig, f"every test relative to {reference}: {words}")


INSN_COLOUR = "#4c72b0"
TPI_COLOUR = "#dd8452"


def why_svg(explanations: Sequence[Explanation], salt: str) -> str:
    """Each comparison's time ratio as a stack from 1.0 on a log axis: the instruction-count
    ratio first, then the time-per-instruction ratio on top of it; they end at the time ratio,
    whose 95% CI is the whisker. Left of 1.0: the first ABI takes less."""
    rows = [x for x in explanations if x.instructions is not None
            and x.per_instruction is not None and _drawable(x.cost.value)
            and _drawable(x.instructions.value) and x.cost.value > 0
            and x.instructions.value > 0]
    n = max(len(rows), 1)
    with matplotlib.rc_context(_rc(salt)):
        fig = Figure(figsize=(5.6, 1.7 + 0.5 * n), layout="constrained")
        ax = fig.add_subplot()
        ax.set_xscale("log")
        lo, hi = 1.0, 1.0
        for i, x in enumerate(rows):
            assert x.instructions is not None
            ins, cost = x.instructions.value, x.cost.value
            ax.barh([i], [ins - 1], left=1, height=0.36, color=INSN_COLOUR, align="edge")
            ax.barh([i - 0.36], [cost - ins], left=ins, height=0.36, color=TPI_COLOUR,
                    align="edge")
            err = None
            if _drawable(x.cost.low) and _drawable(x.cost.high) and x.cost.low > 0:
                err = [[max(cost - x.cost.low, 0.0)], [max(x.cost.high - cost, 0.0)]]
                lo, hi = min(lo, x.cost.low), max(hi, x.cost.high)
            ax.errorbar([cost], [i], xerr=err, fmt="D", color="#222222", markersize=4,
                        capsize=3, elinewidth=1.0)
            lo, hi = min(lo, ins, cost), max(hi, ins, cost)
            ax.annotate(f"{fmt.number(cost, '.3f')}", (max(cost, x.cost.high)
                        if _drawable(x.cost.high) else cost, i), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=8)
        pad = (hi / lo) ** 0.15 if hi > lo else 1.2
        ax.set_xlim(lo / pad, hi * pad * 1.15)
        ax.axvline(1.0, color="#222222", linewidth=1)
        ax.set_yticks(range(len(rows)), [_wrap(f"{x.workload}: {x.a}/{x.b}", 24) for x in rows])
        ax.set_ylim(n - 0.5, -0.7)
        # Ticks a reader can place: 1 and the usual steps around it, as far as the data go.
        steps = [t for t in (0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 1.0, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0)
                 if lo / pad <= t <= hi * pad * 1.15]
        ax.xaxis.set_major_locator(FixedLocator(steps))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("ratio a/b on a log scale; < 1: a takes less (lower is better)")
        # Over the whole figure, not the axes: the workload labels take the left part, and a
        # title centred over the rest would run past the right edge.
        fig.suptitle("Why: time ratio = instruction ratio × time-per-instruction ratio\n"
                     "diamond: time ratio, whiskers: its 95% CI", fontsize=9.5)
        fig.legend(handles=[Patch(color=INSN_COLOUR, label="instruction-count ratio (from 1)"),
                            Patch(color=TPI_COLOUR, label="× time-per-instruction ratio")],
                   fontsize=8, loc="outside lower center", ncols=2, frameon=False)
        if not rows:
            ax.text(1.0, 0, " no comparison has instruction counts", va="center",
                    color=GREY, fontsize=8.5)
        return _to_svg(fig, "why: instruction-count ratio and time-per-instruction ratio per "
                       "workload; lower is better")


def curve_svg(curves: Sequence[Series], title: str, quantity: str, colours: dict[str, str],
              salt: str, small: bool = False) -> str:
    """One footprint quantity against N (log axis), one line with markers per ABI, y from zero.

    ``quantity`` is "bytes" (median peak RSS per element, solid, with the net figure, resident
    size before building taken off, dashed where measured) or "ns" (time per element). Lower is
    better for both.
    """
    words = better_words("lower")
    with matplotlib.rc_context(_rc(salt)):
        fig = Figure(figsize=(3.7, 2.5 if small else 3.0), layout="constrained")
        ax = fig.add_subplot()
        top = 0.0
        drawn = False
        for c in curves:
            colour_ = colours.get(c.abi, GREY)
            lines: list[tuple[str, list[float | None], str]] = []
            if quantity == "bytes":
                lines.append((c.abi, [p.bytes_per_element for p in c.points], "-"))
                lines.append((f"{c.abi} net", [p.net_bytes_per_element for p in c.points], "--"))
            else:
                lines.append((c.abi, [p.ns_per_element for p in c.points], "-"))
            for label, values, style in lines:
                pts = [(float(p.n), v) for p, v in zip(c.points, values, strict=True)
                       if v is not None and _drawable(v) and _drawable(float(p.n))]
                if not pts:
                    continue
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, ys, style, marker="o" if style == "-" else "s",
                        markersize=4 if style == "-" else 3, color=colour_,
                        linewidth=1.5 if style == "-" else 1.0, label=_wrap(label, 24))
                top = max(top, *ys)
                drawn = True
        if not drawn:
            ax.text(0.5, 0.5, "no samples", ha="center", va="center", color=GREY,
                    transform=ax.transAxes)
        else:
            ax.set_xscale("log")
            # Plain text ticks: mathtext is off, so the default 10^k labels would show as $...$.
            ax.xaxis.set_major_formatter(FuncFormatter(_tick))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.legend(fontsize=7.5, loc="best", frameon=False)
        ax.set_ylim(0, top * 1.15 if top > 0 else 1.0)
        ax.yaxis.set_major_formatter(FuncFormatter(_tick))
        ax.set_xlabel("N elements (log scale)")
        what = "peak RSS bytes / element" if quantity == "bytes" else "ns / element"
        ax.set_ylabel(f"{what}\n({words})")
        ax.tick_params(labelsize=8.5)
        sub = "median; dashed: net" if quantity == "bytes" else "median"
        ax.set_title(f"{_wrap(title, 40)}\n{words} · {sub}", fontsize=9.5)
        return _to_svg(fig, f"{title}: {what}, {words}")


def shape_svg(shapes: Sequence[Shape], title: str, colours: dict[str, str], salt: str) -> str:
    """Every sample of each target whose samples have a slow tail or two modes, as dots on one
    axis: how much worse than the target's typical sample each was, in sample order from bottom
    to top of its band; a dashed line marks the tail's edge (TAIL_FACTOR)."""
    with matplotlib.rc_context(_rc(salt)):
        fig = Figure(figsize=(7.0, 0.9 + 0.55 * len(shapes)))
        ax = fig.add_subplot()
        for row, shape in enumerate(shapes):
            pts = [p * 100 for p in shape.points if _drawable(p)]
            n = max(1, len(pts))
            ys = [row - 0.3 + 0.6 * i / n for i in range(len(pts))]
            ax.scatter(pts, ys, s=12, color=colours.get(shape.target, GREY), alpha=0.8,
                       linewidths=0)
        ax.axvline((TAIL_FACTOR - 1) * 100, color=GREY, linestyle="--", linewidth=0.8)
        ax.set_yticks(range(len(shapes)))
        ax.set_yticklabels([_wrap(f"{s.target}: {s.kind}", 28) for s in shapes])
        ax.set_xlabel("% worse than the target's typical sample (its fastest quarter); "
                      "dashed: the tail's edge")
        ax.set_title(_wrap(title, 90))
        fig.tight_layout()
        return _to_svg(fig, title)
