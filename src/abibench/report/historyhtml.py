"""A workload's history as one self-contained HTML page: a chart per series (each run a point,
levels between change points as lines, new levels marked) and the table.

The page has the report's guarantees (report/html.py): no scripts, the same Content-Security-
Policy, every string escaped, charts drawn by report/svgplot.py and checked by
charts.check_svg.
"""

from __future__ import annotations

import math

from ..analyse.history import History, levels
from ..text import one_line
from . import charts
from .history import change_sentences, host_rows, rows
from .html import CSP, STYLE, Html, h, join
from .svgplot import Axis, Entry, Figure, Scale


def series_svg(hist: History, series: str, salt: str) -> str:
    """One series over the runs: points per run, each level a horizontal line, red rings where
    a level starts. A ratio gets a line at 1 (both ABIs alike)."""
    is_ratio = hist.is_ratio(series)
    pts = [(float(i), p.values[series]) for i, p in enumerate(hist.points)
           if series in p.values and 0 < p.values[series] < charts.DRAWABLE]
    top = max((y for _, y in pts), default=0.0)
    what = "ratio (other/reference)" if is_ratio else f"{hist.metric} {hist.unit}".strip()
    x = Axis(Scale(-0.5, len(hist.points) - 0.5), f"runs, oldest first, by {hist.by}",
             ticks=[(float(i), charts._wrap(one_line(p.axes.get(hist.by) or "-"), 14))
                    for i, p in enumerate(hist.points)], tick_size=7.5)
    y = Axis(Scale(0, top * 1.15 if top > 0 and math.isfinite(top) else 1.0),
             charts._wrap(one_line(what), 24), fmt=charts._tick, label_size=8)
    fig = Figure(6.4, 2.6, x, y, title=charts._wrap(one_line(f"{hist.workload}: {series}"), 60),
                 legend_size=7.5)
    if pts:
        fig.line([p[0] for p in pts], [p[1] for p in pts],
                 charts.colour(hist.series.index(series)), width=0, marker="o", size=4)
        for lo, hi, level in levels(hist, series):
            if 0 < level < charts.DRAWABLE:
                fig.line([lo - 0.3, hi + 0.3], [level, level], charts.GREY, width=1.2)
        starts = [c.run_index for c in hist.changes if c.series == series]
        marked = [(i, v) for i, v in pts if i in starts]
        if marked:
            fig.line([m[0] for m in marked], [m[1] for m in marked], charts.INVALID, width=0,
                     marker="o", size=10, face="none")
            fig.legend.append(Entry("new level", charts.INVALID, "ring", "o"))
        if is_ratio:
            fig.rule("y", 1.0, charts.GREY, 0.6, "1 1.5")
    else:
        fig.text(0.5, 0.5, "no values", anchor="middle", colour=charts.GREY, size=9.5,
                 in_axes=True)
    return fig.svg(f"{hist.workload}: {series} over {len(hist.points)} runs", salt)


def hosts_section(hist: History) -> Html | None:
    """The hosts compared (by host), a table of its own: levels that differ between hosts are
    not a change over time. None without hosts."""
    if not hist.hosts:
        return None
    head_row, body = host_rows(hist)
    return h("section", h("h2", "Hosts compared"),
             h("p", "Each build's level on each host, over the first host's: a host is a "
                    "blocking factor, its changes are searched over its own runs only."),
             h("table", h("thead", h("tr", *[h("th", one_line(c)) for c in head_row])),
               h("tbody", *[h("tr", *[h("td", one_line(c)) for c in r]) for r in body])))


def render(hist: History, csp: bool = True) -> str:
    head_row, body = rows(hist)
    title = f"abibench history: {hist.workload}"
    table = h("table", h("thead", h("tr", *[h("th", c) for c in head_row])),
              h("tbody", *[h("tr", *[h("td", c) for c in r]) for r in body]))
    figures = [Html(series_svg(hist, s, f"{hist.workload}-{i}"))
               for i, s in enumerate(hist.series)]
    head = join([
        h("meta", charset="utf-8"),
        h("meta", http_equiv="Content-Security-Policy", content=CSP) if csp else None,
        h("meta", name="referrer", content="no-referrer"),
        h("title", title), h("style", Html(STYLE))])
    said = change_sentences(hist) or ["no change point"]
    main = h("main", h("section", h("h2", "Changes"), h("ul", *[h("li", x) for x in said]),
                       *[h("p", n) for n in hist.notes]),
             h("section", h("h2", "Series"), *figures),
             h("section", h("h2", "Runs"), table),
             hosts_section(hist),
             h("footer", "Grey lines: each level's geometric mean; red rings: the first run of a "
                         "new level (docs/method.md, change points). No scripts, no external "
                         "resources."))
    body_html = join([h("header", h("h1", title)), main])
    return "<!DOCTYPE html>\n" + h("html", h("head", head), h("body", body_html), lang="en") + "\n"
