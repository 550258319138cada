"""A run against its baseline (analyse/baseline.py) as a section of the run's HTML report: what
`run --against` and `compare RUN --against BASE --html F` add to the page.

The sentences are the terminal's and Markdown's (report/baseline.py); every string from the
runs passes the one sanitiser (`text.one_line`) and `html.h` escapes it.
"""

from __future__ import annotations

from ..analyse.baseline import BaselineComparison
from ..analyse.report import Report
from ..text import one_line
from .baseline import abi_sentence, gap_sentence, heading
from .html import Html, h, render


def section(cmp: BaselineComparison, limit: float | None = None) -> Html:
    """The section: a table per workload of each ABI's change and the gap's change, and, with
    ``limit`` (`--fail-on-slowdown`), which slowdowns fail the gate."""
    rows = []
    for w in cmp.workloads:
        changes = [h("li", one_line(abi_sentence(c)),
                     class_="neg" if c.significant and c.slowdown > 0 else None)
                   for c in w.abis]
        gaps = [h("li", one_line(gap_sentence(g))) for g in w.gaps]
        rows.append(h("tr", h("td", one_line(w.workload)), h("td", one_line(w.metric)),
                      h("td", h("ul", *changes) if changes else "-"),
                      h("td", h("ul", *gaps) if gaps else "-")))
    notes = [one_line(x) for w in cmp.workloads for x in w.warnings] + \
        [one_line(x) for x in cmp.warnings]
    gate = None
    if limit is not None:
        failed = cmp.slowdowns(limit)
        gate = h("p", f"--fail-on-slowdown {limit:.1%}: " + (
            "; ".join(one_line(f"{w} {abi_sentence(c)}") for w, c in failed) + " (exit 13)"
            if failed else "no significant slowdown past the limit"),
            class_="bad" if failed else "ok")
    return h("section", h("h2", "Against the baseline"), h("p", one_line(heading(cmp))),
             h("div", h("table", h("thead", h("tr", *[h("th", x) for x in (
                 "workload", "metric", "each ABI against the baseline (95% CI, unpaired)",
                 "the ABI gap")])), h("tbody", *rows)), class_="tablewrap"),
             gate, h("ul", *[h("li", x) for x in notes], class_="warnings") if notes else None,
             id="against")


def page(report: Report, cmp: BaselineComparison | None, limit: float | None = None) -> str:
    """The run's HTML report, with the section when there is a baseline."""
    return render(report, extra=() if cmp is None else (section(cmp, limit),))
