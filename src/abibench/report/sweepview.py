"""The sweep view: one section per swept workload, its ratios against the swept value.

analyse/sweeps.py makes the curves; this module only lays them out, for the terminal (rich
markup, every untrusted string escaped and sanitised by the caller's `e`) and for Markdown
(`esc` and `code` of report/markdown.py). The states and warnings of the instances are said
once: a build shared by every value that failed is one reason, not one per value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.table import Table

from ..analyse.report import MEMORY_NAMES, Report, WorkloadBlock
from ..analyse.sweepids import number
from ..analyse.sweeps import Axis, Curve, curves, instance_of
from . import formatting as fmt


def sections(report: Report) -> list[WorkloadBlock | Curve]:
    """The report's workloads in order, each sweep's instances replaced by its curve, placed
    where its first instance was."""
    by_base = {c.base: c for c in curves(report)}
    out: list[WorkloadBlock | Curve] = []
    placed: set[str] = set()
    for b in report.workloads:
        inst = instance_of(b.result.id)
        curve = by_base.get(inst.base) if inst is not None else None
        if curve is None or inst is None or inst.param != curve.param:
            out.append(b)
        elif curve.base not in placed:
            placed.add(curve.base)
            out.append(curve)
    return out


def headline_crossovers(curve: Curve) -> list[str]:
    """The primary metric's crossovers where the winner changes along the curve: what a
    one-line summary of the sweep must say beside its value at the largest size."""
    first = curve.blocks[0].result
    return [f"{a.label}/{a.reference} {a.crossover(curve.param, curve.values)}"
            for a in curve.axes if a.metric == first.primary
            and len({p.side(a.better) for p in a.points if p is not None}) > 1]


CHART_WIDTH = 41  # characters of the terminal chart's ratio axis
_CLAMP = (1e-3, 1e3)  # ratios beyond are drawn at the edge (the table has the numbers)


def text_chart(a: Axis, values: Sequence[str], width: int = CHART_WIDTH) -> list[str]:
    """One ratio against the swept value as rows of text, a log axis: `|` is 1 (no
    difference), `o` the ratio, `[---]` its 95% CI; the axis spans every CI and 1. Values
    are raw (the caller escapes them); nothing but the values comes from outside."""
    pts = [(v, p) for v, p in zip(values, a.points, strict=True) if p is not None
           and all(math.isfinite(x) and x > 0 for x in (p.ratio, p.low, p.high))]
    if not pts:
        return []

    def clamp(x: float) -> float:
        return min(max(x, _CLAMP[0]), _CLAMP[1])

    lo = min([1.0, *[clamp(p.low) for _, p in pts]])
    hi = max([1.0, *[clamp(p.high) for _, p in pts]])
    span = math.log(hi / lo) or 1.0

    def pos(x: float) -> int:
        return round(math.log(clamp(x) / lo) / span * (width - 1))

    label_w = max(len(v) for v, _ in pts)
    rows = [f"{'':>{label_w}}  {fmt.number(lo, '.3g'):<{width // 2}}"
            f"{fmt.number(hi, '.3g'):>{width - width // 2}}"]
    for v, p in pts:
        cells = [" "] * width
        for i in range(pos(p.low), pos(p.high) + 1):
            cells[i] = "-"
        cells[pos(1.0)] = "|"
        if pos(p.high) - pos(p.low) >= 2:  # else the CI is narrower than the ratio's mark
            cells[pos(p.low)], cells[pos(p.high)] = "[", "]"
        cells[pos(p.ratio)] = "o"
        rows.append(f"{v:>{label_w}}  {''.join(cells)}  {fmt.number(p.ratio, '.3f')}")
    return rows


def _axis_head(a: Axis) -> str:
    return f"{a.label}/{a.reference} {MEMORY_NAMES.get(a.metric, a.metric)}"


def _cell(a: Axis, i: int) -> str:
    p = a.points[i]
    return "-" if p is None else fmt.ratio(p.ratio, p.low, p.high)


def once(curve: Curve) -> tuple[list[str], list[str]]:
    """(target states that are not ok, warnings), each distinct one once, in order."""
    states: list[str] = []
    warnings: list[str] = []
    for v, b in zip(curve.values, curve.blocks, strict=True):
        for row in b.result.rows:
            if row.state != "ok":
                line = f"{row.label}: {row.state} — {row.reason or ''}"
                # Another value's copy of a shared build's failure (run/suite.py words it).
                shared = (row.reason or "").startswith("not built: the same ")
                if not shared and line not in states:
                    states.append(line)
        for w in [*b.result.warnings, *b.notes]:
            if f"{curve.param}={v}: {w}" not in warnings:
                warnings.append(f"{curve.param}={v}: {w}")
    return states, warnings


def checks(curve: Curve) -> list[str]:
    """The output check of every value: one line when all agree, else one per value that
    does not (a miscompare is never hidden in a curve)."""
    results = [b.result for b in curve.blocks]
    if all(r.validation == "ok" for r in results):
        return [f"output check: identical at every {curve.param}"]
    return [f"{curve.param}={v}: {'MISCOMPARE' if r.validation == 'miscompare' else 'output check'}"
            f": {r.validation_detail}"
            for v, r in zip(curve.values, results, strict=True) if r.validation != "ok"]


def _medians(curve: Curve) -> tuple[list[str], list[list[str]]]:
    first = curve.blocks[0].result
    labels = [r.label for r in first.rows]
    rows = []
    for b in curve.blocks:
        by = {r.label: r for r in b.result.rows}
        sums = [by[lbl].summary if lbl in by else None for lbl in labels]
        rows.append([fmt.si(s.median, first.unit) if s is not None else "-" for s in sums])
    return labels, rows


def terminal(curve: Curve, con: Console, e: Callable[[object], str]) -> None:
    first = curve.blocks[0].result
    con.print()
    con.print(f"[bold]{e(curve.base)}[/] — {e(first.title)}; swept over {e(curve.param)} "
              f"({len(curve.values)} values)")
    con.print(f"  {e(first.primary)} in {e(first.unit or 'units')}, "
              f"{fmt.better_words(first.better)}; ratios with 95% CI")
    labels, medians = _medians(curve)
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for col in (curve.param, *[f"{lbl} median" for lbl in labels],
                *[_axis_head(a) for a in curve.axes]):
        table.add_column(e(col), justify="right")
    for i, v in enumerate(curve.values):
        table.add_row(e(v), *[e(m) for m in medians[i]], *[_cell(a, i) for a in curve.axes])
    con.print(table)
    for a in curve.axes:
        rows = text_chart(a, curve.values)
        if rows:
            con.print(f"  {e(_axis_head(a))} against {e(curve.param)} (log axis; | is 1, "
                      "o the ratio, [-] its 95% CI)")
            for row in rows:
                con.print(f"    {e(row)}", highlight=False)
    for line in curve.crossovers():
        con.print(f"  [bold]{e(line)}[/]")
    for line in checks(curve):
        con.print(f"  [red bold]{e(line)}[/]" if "MISCOMPARE" in line else f"  {e(line)}")
    states, warnings = once(curve)
    for s in states:
        con.print(f"  [yellow]{e(s)}[/]")
    for w in warnings:
        con.print(f"  [yellow]warning:[/] {e(w)}")


def markdown(curve: Curve, esc: Callable[[object], str],
             table: Callable[[list[str], list[list[str]], set[int]], list[str]]) -> list[str]:
    first = curve.blocks[0].result
    out = [f"### {esc(curve.base)}: {esc(first.title)}", "",
           f"Swept over {esc(curve.param)} ({len(curve.values)} values). Primary metric "
           f"{esc(first.primary)} ({esc(first.unit)}, {fmt.better_words(first.better)}); "
           "ratios with their 95% CI.", ""]
    labels, medians = _medians(curve)
    heads = [esc(curve.param), *[esc(f"{lbl} median") for lbl in labels],
             *[esc(_axis_head(a)) for a in curve.axes]]
    rows = [[esc(v), *[esc(m) for m in medians[i]], *[_cell(a, i) for a in curve.axes]]
            for i, v in enumerate(curve.values)]
    out += table(heads, rows, set(range(len(heads))))
    out += [f"- **{esc(line)}**" for line in curve.crossovers()]
    out += [f"- {esc(line)}" for line in checks(curve)]
    states, warnings = once(curve)
    out += [f"- {esc(s)}" for s in states] + [f"- ⚠ {esc(w)}" for w in warnings] + [""]
    return out



def _sweep_x(curve: Curve) -> tuple[list[float], bool]:
    """The values' places on the x axis: the numbers when every value is a positive number
    (log when they span a factor of ten or more), else their order."""
    nums = [number(v) for v in curve.values]
    numeric = all(n is not None and n > 0 for n in nums)
    xs = [float(n) if numeric and n is not None else float(i) for i, n in enumerate(nums)]
    return xs, numeric and max(xs) / min(xs) >= 10


def chart_svg(curve: Curve, salt: str) -> str:
    """The curve's ratios against the swept value: one line per ratio column, its 95% CI as
    whiskers, a dashed line at 1 (no difference); a log axis when the values are positive
    numbers spanning a factor of ten or more."""
    from . import charts
    from .svgplot import Axis, Entry, Figure, Scale, nice_ticks, plain

    xs, log = _sweep_x(curve)
    lines = []
    for i, a in enumerate(curve.axes):
        pts = [(x, p) for x, p in zip(xs, a.points, strict=True) if p is not None
               and all(charts._drawable(v) and v > 0 for v in (p.ratio, p.low, p.high))]
        if pts:
            lines.append((charts.colour(i), _axis_head(a), pts))
    ys = [1.0, *[v for *_, pts in lines for _, p in pts for v in (p.low, p.high)]]
    lo, hi = charts._margin(min(ys), max(ys))
    x = Axis(Scale(*charts._margin(min(xs), max(xs), log=log), log=log),
             charts._wrap(curve.param, 40),
             ticks=[(x, charts._wrap(v, 12)) for x, v in zip(xs, curve.values, strict=True)])
    y = Axis(Scale(lo, hi), "ratio (95% CI)", fmt=plain(nice_ticks(lo, hi)))
    fig = Figure(5.2, 3.0, x, y, title=charts._wrap(f"{curve.base}: ratios against {curve.param}",
                                                    60))
    fig.rule("y", 1.0, "#888888", 0.8, "4 2")
    for colour, label, pts in lines:
        for x_, p in pts:
            fig.whisker(x_, p.low, p.high, False, 3, colour, 1.5)
        fig.line([x_ for x_, _ in pts], [p.ratio for _, p in pts], colour, marker="o", size=6)
        fig.legend.append(Entry(label, colour, "line", "o"))
    return fig.svg(f"{curve.base}: ratios against {curve.param}", salt)
