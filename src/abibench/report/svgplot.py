"""A small SVG chart writer: one figure with one pair of axes, for the HTML report's charts.

Written for abibench's charts only (report/charts.py, historyhtml.py, sweepview.py): a figure of
a given size in points, a linear or log scale on each axis with "nice" ticks or ticks the chart
gives, rectangles (bars, from where the chart says), error whiskers with caps, markers, lines,
dashed reference lines, text anchored at a point of the data or of the axes, wrapped labels, a
legend inside the axes or under them. Marks are given in data coordinates and placed when the
figure is written, once the margins the text needs are known.

Safe by construction: every piece of text reaches the SVG through :func:`esc` (the one
sanitiser, then XML escaping), the only place text is written; every number written is a finite
coordinate (:func:`_n`: a mark with a coordinate that is not finite is left out); each element
kind always carries the same attributes, so no string from a run can change the markup's shape.
The SVG is text as text (the browser's fonts, nothing embedded or fetched) and scales in the
page (viewBox).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

from ..text import one_line

FONT = "DejaVu Sans, Bitstream Vera Sans, Verdana, sans-serif"
INCH = 72.0  # the figure sizes of the charts are in inches, as they were; SVG user units are pt
PAD = 4.0
TICK = 3.5
LINE = 1.22  # line height, in font sizes
BLACK = "#000000"
_LIMIT = 1e6  # no coordinate lies further out than this (marks are inside a figure of ~500 pt)


def shown(text: str) -> str:
    """Text as a chart shows it: text.one_line (no controls, no bidi overrides, no line
    breaks, U+FFFD for a lone surrogate or a noncharacter XML cannot hold)."""
    return one_line(text)


def esc(text: str) -> str:
    """The one way text reaches the SVG: :func:`shown`, then escaped for XML text and
    attributes alike."""
    return escape(shown(text), quote=True)


def _n(value: float) -> str:
    """A coordinate as written: finite by the callers' check (:func:`_finite`), short."""
    return f"{min(max(value, -_LIMIT), _LIMIT):.2f}".rstrip("0").rstrip(".")


def _finite(*values: float) -> bool:
    return all(math.isfinite(v) for v in values)


def text_width(text: str, size: float) -> float:
    """An estimate of a line's width for the layout (the browser's font draws it): wide East
    Asian characters a full em, others about 0.6 of one."""
    wide = sum(1 for c in text if unicodedata.east_asian_width(c) in "WF")
    return (0.6 * (len(text) - wide) + 1.0 * wide) * size


def _lines(text: str) -> list[str]:
    return text.split("\n") if text else []


def _block_width(text: str, size: float) -> float:
    return max((text_width(line, size) for line in _lines(text)), default=0.0)


def _block_height(text: str, size: float) -> float:
    return len(_lines(text)) * size * LINE


# --------------------------------------------------------------------------- scales and ticks


@dataclass
class Scale:
    lo: float
    hi: float
    log: bool = False

    def frac(self, v: float) -> float:
        """Where v lies from lo (0) to hi (1); not finite for v outside a log scale's domain."""
        if self.log:
            if v <= 0 or self.lo <= 0 or self.hi <= 0:
                return math.nan
            span = math.log(self.hi) - math.log(self.lo)
            return (math.log(v) - math.log(self.lo)) / span if span else 0.5
        span = self.hi - self.lo
        return (v - self.lo) / span if span and math.isfinite(span) else 0.5


def nice_ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    """About n round numbers (1, 2, 2.5, 5 times a power of ten) from lo to hi."""
    if not _finite(lo, hi) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / max(n, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next((m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw), 10 * power)
    first = math.ceil(lo / step - 1e-9)
    ticks = [(first + i) * step for i in range(0, 50)]
    return [0.0 if abs(t) < step * 1e-9 else t for t in ticks if t <= hi + step * 1e-9]


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[float]]:
    """(major, minor) ticks of a log scale: powers of ten, their 2..9 multiples as minor."""
    if not _finite(lo, hi) or lo <= 0 or hi <= lo:
        return [], []
    major: list[float] = []
    minor: list[float] = []
    for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in range(1, 10):
            t = m * 10.0 ** k
            if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9):
                (major if m == 1 else minor).append(t)
    return major, minor


def plain(ticks: Sequence[float]) -> Callable[[float], str]:
    """A tick formatter with the fewest decimals (up to 6) that write every tick exactly, the
    same for all: 0.8, 0.9, 1.0; 0, 50, 100."""
    finite = [t for t in ticks if math.isfinite(t)]
    decimals = next((d for d in range(7) if all(abs(round(t, d) - t) <= 1e-9 * max(1.0, abs(t))
                                                 for t in finite)), 6)
    return lambda v: f"{0.0 if v == 0 else v:.{decimals}f}"


@dataclass
class Axis:
    """One axis: its scale, its label (lines split on newlines), and either the ticks the chart
    gives as (value, text) pairs or a formatter for nice ticks."""
    scale: Scale
    label: str = ""
    ticks: Sequence[tuple[float, str]] | None = None
    fmt: Callable[[float], str] | None = None
    inverted: bool = False
    tick_size: float = 9.5
    label_size: float = 9.5

    def marks(self) -> tuple[list[tuple[float, str]], list[float]]:
        """(labelled ticks inside the scale, minor ticks)."""
        s = self.scale
        lo, hi = min(s.lo, s.hi), max(s.lo, s.hi)
        minor: list[float] = []
        if self.ticks is not None:
            given = list(self.ticks)
        else:
            values = nice_ticks(lo, hi) if not s.log else []
            if s.log:
                values, minor = log_ticks(lo, hi)
            form = self.fmt or plain(values)
            given = [(v, form(v)) for v in values]
        inside = [(v, t) for v, t in given if _finite(s.frac(v)) and -1e-9 <= s.frac(v) <= 1 + 1e-9]
        return inside, minor


# --------------------------------------------------------------------------- the figure


@dataclass
class Entry:
    """A legend entry: a label and how its mark looks (patch, line, dashed, ring)."""
    label: str
    colour: str
    kind: str = "patch"
    marker: str = ""


@dataclass
class _Text:
    x: float
    y: float
    text: str
    size: float
    colour: str
    anchor: str  # start | middle | end
    valign: str  # top | middle | bottom (of the block of lines)
    rotate: float = 0.0


@dataclass
class Figure:
    """A figure of width x height inches with one pair of axes; add marks, then :meth:`svg`."""
    width: float
    height: float
    x: Axis
    y: Axis
    title: str = ""
    title_size: float = 9.5
    title_over_figure: bool = False  # centred on the figure, not on the axes
    legend: list[Entry] = field(default_factory=list)
    legend_size: float = 8.0
    legend_below: bool = False
    legend_columns: int = 1
    _marks: list[Callable[[_Frame], list[str]]] = field(default_factory=list)
    _points: list[tuple[float, float]] = field(default_factory=list)  # for the legend's place
    # Texts written beside a point (a bar's value): (x, how far right of it the text ends, in
    # pt) for those anchored at their start, (x, -how far left it starts) for those at their end.
    _ends: list[tuple[float, float]] = field(default_factory=list)
    _hatch: bool = False

    # ---- marks, in data coordinates
    def rect(self, x0: float, x1: float, y0: float, y1: float, fill: str,
             opacity: float = 1.0, hatch: bool = False) -> None:
        if not _finite(x0, x1, y0, y1):
            return
        self._hatch = self._hatch or hatch
        self._points += [(x0, y0), (x1, y1), (x0, y1), (x1, y0), ((x0 + x1) / 2, (y0 + y1) / 2)]
        self._marks.append(lambda f: f.rect(x0, x1, y0, y1, fill, opacity, hatch))

    def whisker(self, at: float, low: float, high: float, horizontal: bool, cap: float,
                colour: str = "#222222", width: float = 1.0) -> None:
        """An error bar from low to high at `at` on the other axis, caps `cap` pt each side."""
        if not _finite(at, low, high):
            return
        self._marks.append(lambda f: f.whisker(at, low, high, horizontal, cap, colour, width))

    def line(self, xs: Sequence[float], ys: Sequence[float], colour: str, width: float = 1.5,
             dash: str = "none", marker: str = "", size: float = 4.0,
             face: str | None = None) -> None:
        """A polyline through the points (width 0: markers only), a marker at each point."""
        pts = [(x, y) for x, y in zip(xs, ys, strict=True) if _finite(x, y)]
        self._points += pts
        self._marks.append(lambda f: f.line(pts, colour, width, dash, marker, size, face))

    def rule(self, along: str, value: float, colour: str, width: float = 1.0,
             dash: str = "none") -> None:
        """A line across the axes at `value`: along="x" a vertical one at x=value, "y" horizontal."""
        if math.isfinite(value):
            self._marks.append(lambda f: f.rule(along, value, colour, width, dash))

    def text(self, x: float, y: float, text: str, *, dx: float = 0.0, dy: float = 0.0,
             anchor: str = "start", valign: str = "middle", colour: str = BLACK,
             size: float = 8.5, rotate: float = 0.0, in_axes: bool = False) -> None:
        """Text at a point of the data (or, in_axes, of the axes: 0..1 each way), moved by
        (dx, dy) points; dy counts up, as in the data."""
        if _finite(x, y):
            self._points.append((x, y))
            if anchor in ("start", "end") and not rotate and not in_axes:
                width = _block_width(text, size)
                self._ends.append((x, dx + width) if anchor == "start" else (x, dx - width))
            self._marks.append(lambda f: [f.text(_Text(
                *f.at(x, y, in_axes, dx, dy), text, size, colour, anchor, valign, rotate))])

    # ---- writing
    def svg(self, label: str, salt: str, classes: str = "chart") -> str:
        """The SVG document: role img, the label (sanitised, escaped) as its accessible name."""
        frame = _Frame.layout(self)
        key = f"{salt}\0{label}".encode("utf-8", "surrogatepass")  # a lone surrogate hashes too
        uid = "h" + hashlib.sha1(key).hexdigest()[:12]
        frame.hatch_id = uid
        w, h = frame.width, frame.height
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{esc(label)}" '
               f'class="{classes}" width="{_n(w)}pt" height="{_n(h)}pt" '
               f'viewBox="0 0 {_n(w)} {_n(h)}" font-family="{FONT}">']
        if self._hatch:
            out.append(f'<defs><pattern id="{uid}" patternUnits="userSpaceOnUse" width="6" '
                       'height="6"><path d="M-1 7L7 -1M-1 1L1 -1M5 7L7 5" stroke="#ffffff" '
                       'stroke-width="1.2" fill="none"/></pattern></defs>')
        out.append(f'<rect x="0" y="0" width="{_n(w)}" height="{_n(h)}" fill="#ffffff" '
                   'fill-opacity="1"/>')
        out += frame.axes()
        for mark in self._marks:
            out += mark(frame)
        out += frame.labels()
        out += frame.legend()
        out.append("</svg>")
        return "".join(out)


class _Frame:
    """The figure laid out: where the axes are, in points, and how data map onto them."""

    def __init__(self, fig: Figure, width: float, height: float, box: tuple[float, float,
                 float, float]) -> None:
        self.fig, self.width, self.height = fig, width, height
        self.left, self.top, self.right, self.bottom = box
        self.hatch_id = ""

    @classmethod
    def layout(cls, fig: Figure) -> _Frame:
        """Margins from the text around the axes; the figure grows where wrapped tick labels
        need more room than the size given allows."""
        xt, _ = fig.x.marks()
        yt, _ = fig.y.marks()
        ytw = max((_block_width(t, fig.y.tick_size) for _, t in yt), default=0.0)
        xth = max((_block_height(t, fig.x.tick_size) for _, t in xt), default=0.0)
        left = PAD + _block_height(fig.y.label, fig.y.label_size) + ytw + TICK + 6
        legend_h = _legend_size(fig)[1] + 4 if fig.legend_below and fig.legend else 0.0
        bottom = PAD + xth + TICK + 4 + _block_height(fig.x.label, fig.x.label_size) + 4 + legend_h
        top = PAD + _block_height(fig.title, fig.title_size) + 6
        last = max((_block_width(t, fig.x.tick_size) / 2 for _, t in xt[-1:]), default=0.0)
        right = PAD + max(6.0, last)
        width, height = fig.width * INCH, fig.height * INCH
        width = max(width, left + right + 60,
                    PAD * 2 + _block_width(fig.title, fig.title_size),
                    PAD * 2 + _block_width(fig.x.label, fig.x.label_size))
        height = max(height, top + bottom + 40)
        need_h = _room(fig.y, yt, lambda t: _block_height(t, fig.y.tick_size) + 4)
        need_w = _room(fig.x, xt, lambda t: _block_width(t, fig.x.tick_size) + 6)
        height = max(height, top + bottom + need_h)
        # Room for a value left of a bar, but a figure at most half again as wide as asked:
        # a wider one is drawn smaller in the page, every text with it.
        width = max(width, left + right + need_w,
                    min(left + right + _room_left(fig), 1.5 * fig.width * INCH),
                    left + PAD + max((e for f, e in _placed_ends(fig) if f <= 0.05), default=0))
        return cls(fig, width, height, (left, top, width - _room_right(fig, width, left, right),
                                        height - bottom))

    def at(self, x: float, y: float, in_axes: bool = False, dx: float = 0.0,
           dy: float = 0.0) -> tuple[float, float]:
        fx = x if in_axes else self.fig.x.scale.frac(x)
        fy = y if in_axes else self.fig.y.scale.frac(y)
        if not in_axes and self.fig.x.inverted:
            fx = 1 - fx
        if not in_axes and self.fig.y.inverted:
            fy = 1 - fy
        return (self.left + fx * (self.right - self.left) + dx,
                self.bottom - fy * (self.bottom - self.top) - dy)

    def rect(self, x0: float, x1: float, y0: float, y1: float, fill: str, opacity: float,
             hatch: bool) -> list[str]:
        (ax, ay), (bx, by) = self.at(x0, y0), self.at(x1, y1)
        if not _finite(ax, ay, bx, by):
            return []
        box = (f'x="{_n(min(ax, bx))}" y="{_n(min(ay, by))}" width="{_n(abs(bx - ax))}" '
               f'height="{_n(abs(by - ay))}"')
        out = [f'<rect {box} fill="{fill}" fill-opacity="{opacity:g}"/>']
        if hatch:
            out.append(f'<rect {box} fill="url(#{self.hatch_id})" fill-opacity="1"/>')
        return out

    def segment(self, a: tuple[float, float], b: tuple[float, float], colour: str,
                width: float, dash: str = "none") -> str:
        if not _finite(*a, *b):
            return ""
        return (f'<line x1="{_n(a[0])}" y1="{_n(a[1])}" x2="{_n(b[0])}" y2="{_n(b[1])}" '
                f'stroke="{colour}" stroke-width="{width:g}" stroke-dasharray="{dash}"/>')

    def whisker(self, at: float, low: float, high: float, horizontal: bool, cap: float,
                colour: str, width: float) -> list[str]:
        a = self.at(low, at) if horizontal else self.at(at, low)
        b = self.at(high, at) if horizontal else self.at(at, high)
        out = [self.segment(a, b, colour, width)]
        for x, y in (a, b):
            ends = ((x, y - cap), (x, y + cap)) if horizontal else ((x - cap, y), (x + cap, y))
            out.append(self.segment(*ends, colour, width))
        return out

    def line(self, pts: list[tuple[float, float]], colour: str, width: float, dash: str,
             marker: str, size: float, face: str | None) -> list[str]:
        placed = [p for p in (self.at(x, y) for x, y in pts) if _finite(*p)]
        out = []
        if width > 0 and len(placed) > 1:
            out.append(f'<polyline points="{" ".join(f"{_n(x)},{_n(y)}" for x, y in placed)}" '
                       f'fill="none" stroke="{colour}" stroke-width="{width:g}" '
                       f'stroke-dasharray="{dash}"/>')
        if marker:
            out += [_marker(marker, x, y, size, colour, face) for x, y in placed]
        return out

    def rule(self, along: str, value: float, colour: str, width: float, dash: str) -> list[str]:
        if along == "x":
            x = self.at(value, self.fig.y.scale.lo)[0]
            return [self.segment((x, self.top), (x, self.bottom), colour, width, dash)]
        y = self.at(self.fig.x.scale.lo, value)[1]
        return [self.segment((self.left, y), (self.right, y), colour, width, dash)]

    def text(self, t: _Text) -> str:
        """The one place text is written: every line escaped by :func:`esc`; each <text> and
        <tspan> with the same attributes whatever it holds."""
        lines = _lines(t.text) or [""]
        step = t.size * LINE
        if t.valign == "top":
            first = t.y + 0.8 * t.size
        elif t.valign == "bottom":
            first = t.y - (len(lines) - 1) * step - 0.25 * t.size
        else:
            first = t.y - (len(lines) - 1) * step / 2 + 0.35 * t.size
        if not _finite(t.x, t.y, first):
            return ""
        spans = "".join(f'<tspan x="{_n(t.x)}" dy="{_n(0 if i == 0 else step)}">{esc(line)}'
                        "</tspan>" for i, line in enumerate(lines))
        return (f'<text x="{_n(t.x)}" y="{_n(first)}" font-size="{t.size:g}" fill="{t.colour}" '
                f'text-anchor="{t.anchor}" transform="rotate({t.rotate:g} {_n(t.x)} {_n(t.y)})">'
                f"{spans}</text>")

    def axes(self) -> list[str]:
        """The left and bottom spines, ticks and tick labels."""
        fig, out = self.fig, []
        out.append(self.segment((self.left, self.top), (self.left, self.bottom), BLACK, 0.8))
        out.append(self.segment((self.left, self.bottom), (self.right, self.bottom), BLACK, 0.8))
        xt, xminor = fig.x.marks()
        for v, label in xt:
            x = self.at(v, fig.y.scale.lo)[0]
            out.append(self.segment((x, self.bottom), (x, self.bottom + TICK), BLACK, 0.8))
            out.append(self.text(_Text(x, self.bottom + TICK + 2, label, fig.x.tick_size,
                                       BLACK, "middle", "top")))
        for v in xminor:
            x = self.at(v, fig.y.scale.lo)[0]
            out.append(self.segment((x, self.bottom), (x, self.bottom + 2), BLACK, 0.6))
        yt, yminor = fig.y.marks()
        for v, label in yt:
            y = self.at(fig.x.scale.lo, v)[1]
            out.append(self.segment((self.left - TICK, y), (self.left, y), BLACK, 0.8))
            out.append(self.text(_Text(self.left - TICK - 2, y, label, fig.y.tick_size, BLACK,
                                       "end", "middle")))
        for v in yminor:
            y = self.at(fig.x.scale.lo, v)[1]
            out.append(self.segment((self.left - 2, y), (self.left, y), BLACK, 0.6))
        return out

    def labels(self) -> list[str]:
        """The axis labels and the title."""
        fig, out = self.fig, []
        xt, _ = fig.x.marks()
        xth = max((_block_height(t, fig.x.tick_size) for _, t in xt), default=0.0)
        if fig.x.label:
            out.append(self.text(_Text((self.left + self.right) / 2, self.bottom + TICK + 4 + xth,
                                       fig.x.label, fig.x.label_size, BLACK, "middle", "top")))
        if fig.y.label:
            x = PAD + _block_height(fig.y.label, fig.y.label_size) / 2
            y = (self.top + self.bottom) / 2
            out.append(self.text(_Text(x, y, fig.y.label, fig.y.label_size, BLACK, "middle",
                                       "middle", -90)))
        if fig.title:
            cx = self.width / 2 if fig.title_over_figure else (self.left + self.right) / 2
            half = _block_width(fig.title, fig.title_size) / 2  # a title wider than the axes
            cx = min(max(cx, PAD + half), self.width - PAD - half)  # stays in the figure
            out.append(self.text(_Text(cx, PAD, fig.title, fig.title_size, BLACK, "middle",
                                       "top")))
        return out

    def legend(self) -> list[str]:
        fig = self.fig
        if not fig.legend:
            return []
        w, h = _legend_size(fig)
        if fig.legend_below:
            x0, y0 = (self.width - w) / 2, self.height - PAD - h
        else:
            x0, y0 = self._best_corner(w, h)
        return _legend(fig, x0, y0)

    def _best_corner(self, w: float, h: float) -> tuple[float, float]:
        """The corner of the axes (upper right, upper left, lower left, lower right, as tried)
        whose legend box covers the fewest points of the data."""
        m = 4.0
        corners = [(self.right - w - m, self.top + m), (self.left + m, self.top + m),
                   (self.left + m, self.bottom - h - m), (self.right - w - m, self.bottom - h - m)]
        placed = [p for p in (self.at(x, y) for x, y in self.fig._points) if _finite(*p)]

        def covered(c: tuple[float, float]) -> int:
            return sum(c[0] <= x <= c[0] + w and c[1] <= y <= c[1] + h for x, y in placed)

        return min(corners, key=covered)


def _room_right(fig: Figure, width: float, left: float, right: float) -> float:
    """The right margin that keeps text written right of a point (a bar's value) inside the
    figure: the axes are narrowed until the longest such text ends at the edge."""
    span = width - left - right
    for f, extent in _placed_ends(fig):
        if extent > 0 and f > 0.05:
            span = min(span, (width - PAD - left - extent) / f)
    return width - left - max(span, 40.0)


def _room_left(fig: Figure) -> float:
    """The width the axes need so that text written left of a point (a negative bar's value)
    starts inside them, clear of the tick labels."""
    return max((-extent / f for f, extent in _placed_ends(fig) if extent < 0 and f > 0.05),
               default=0.0)


def _placed_ends(fig: Figure) -> list[tuple[float, float]]:
    out = []
    for x, extent in fig._ends:
        f = fig.x.scale.frac(x)
        if _finite(f):
            out.append((1 - f if fig.x.inverted else f, extent))
    return out


def _room(axis: Axis, ticks: list[tuple[float, str]], need: Callable[[str], float]) -> float:
    """The length the axis must have so that neighbouring tick labels do not overlap."""
    placed = sorted((axis.scale.frac(v), t) for v, t in ticks if _finite(axis.scale.frac(v)))
    out = 0.0
    for (fa, ta), (fb, tb) in itertools.pairwise(placed):
        if fb - fa > 1e-9:
            out = max(out, (need(ta) + need(tb)) / 2 / (fb - fa))
    return out


def _marker(kind: str, x: float, y: float, size: float, colour: str, face: str | None) -> str:
    """A marker `size` points across: o circle, s square, D diamond, ring (no fill)."""
    r = size / 2
    fill = colour if face is None else face
    if kind == "s":
        d = f"M{_n(x - r)} {_n(y - r)}h{_n(size)}v{_n(size)}h{_n(-size)}z"
    elif kind == "D":
        d = f"M{_n(x)} {_n(y - r)}L{_n(x + r)} {_n(y)}L{_n(x)} {_n(y + r)}L{_n(x - r)} {_n(y)}z"
    else:
        return (f'<circle cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}" fill="{fill}" '
                f'stroke="{colour}" stroke-width="{1.0 if face == "none" else 0.5:g}"/>')
    return f'<path d="{d}" fill="{fill}" stroke="{colour}" stroke-width="0.5"/>'


def _legend_size(fig: Figure) -> tuple[float, float]:
    cols = max(1, fig.legend_columns)
    rows = math.ceil(len(fig.legend) / cols)
    cell = max((_block_width(e.label, fig.legend_size) for e in fig.legend), default=0.0) + 24
    heights = [_block_height(e.label, fig.legend_size) for e in fig.legend] or [0.0]
    return cell * min(cols, len(fig.legend)), rows * (max(heights) + 3)


def _legend(fig: Figure, x0: float, y0: float) -> list[str]:
    cols = max(1, fig.legend_columns)
    w, _ = _legend_size(fig)
    cell = w / min(cols, len(fig.legend))
    row_h = max(_block_height(e.label, fig.legend_size) for e in fig.legend) + 3
    frame = _Frame(fig, 0, 0, (0, 0, 0, 0))
    out = []
    for i, e in enumerate(fig.legend):
        x, y = x0 + (i % cols) * cell, y0 + (i // cols) * row_h + row_h / 2
        if e.kind == "patch":
            out.append(f'<rect x="{_n(x)}" y="{_n(y - 4)}" width="14" height="8" fill="{e.colour}" '
                       'fill-opacity="1"/>')
        else:
            out.append(frame.segment((x, y), (x + 14, y), e.colour, 1.5 if e.kind == "line"
                                     else 1.0, "4 2" if e.kind == "dashed" else "none")
                       if e.kind != "ring" else "")
        if e.marker:
            face = "none" if e.kind == "ring" else None
            out.append(_marker(e.marker, x + 7, y, 4 if e.kind != "ring" else 8, e.colour, face))
        out.append(frame.text(_Text(x + 18, y, e.label, fig.legend_size, BLACK, "start",
                                    "middle")))
    return out
