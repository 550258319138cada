"""Terminal view of an N-way comparison: one table, one row per workload, one column per series."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import formatting as fmt
from .content import Report, better_words, primary_diff, state_of


def render(report: Report, con: Console) -> None:
    e = escape
    con.print(f"[bold]{e(report.title)}[/]")
    for s in report.sets:
        h = s.host
        con.print(f"  {e(s.tag)}: {e(s.source)} — {e(str(h.get('cpu_model') or '?'))}, kernel "
                  f"{e(str(h.get('kernel_release') or '?'))} ({e(str(h.get('kernel_bits')))}-bit)"
                  f", started {e(str(s.run.get('started')))}")
    for w in report.warnings:
        con.print(f"[yellow]warning:[/] {e(w)}")
    labels = [s.label for s in report.series]
    table = Table(show_edge=False, pad_edge=False, header_style="bold", show_lines=True)
    table.add_column("workload")
    for lbl in labels:
        table.add_column(e(lbl), justify="right")
    for b in report.workloads:
        res = b.result
        by = {r.label: r for r in res.rows}
        cells = [f"{e(res.id)}\n[dim]{e(res.primary)}, {better_words(res.better)}[/]"]
        for lbl in labels:
            row = by.get(lbl)
            if row is None:
                cells.append("")
                continue
            if row.summary is None:
                cells.append(f"[dim]{e(state_of(row))}[/]")
                continue
            value = e(fmt.si(row.summary.median, res.unit))
            d = primary_diff(b, lbl)
            if lbl == b.reference:
                value += "\n[dim]reference[/]"
            elif d is not None and math.isfinite(d.percent):
                colour = "red" if not d.valid else (
                    ("green" if d.percent > 0 else "red") if d.significant else "dim")
                ci = (f" [{d.pct_low:+.1f}, {d.pct_high:+.1f}]"
                      if math.isfinite(d.pct_low) and math.isfinite(d.pct_high) else "")
                value += f"\n[{colour}]{d.percent:+.1f}%{e(ci)}[/]"
            cells.append(value)
        table.add_row(*cells)
    con.print(table)
    con.print("[dim]median of the primary metric; below it the difference to the reference "
              "(+ means better) with its 95% CI; colour: significant after Holm correction[/]")
    for b in report.workloads:
        if b.result.validation == "miscompare":
            con.print(f"[red bold]MISCOMPARE[/] {e(b.result.id)}: "
                      f"{e(b.result.validation_detail)}")
        for w in [*b.result.warnings, *b.notes]:
            con.print(f"[yellow]warning:[/] {e(b.result.id)}: {e(w)}")
    for sm in report.suites:
        gm = sm.geomean
        con.print(f"[bold]suite[/] {e(sm.a)} vs {e(sm.b)} ({fmt.count(len(sm.workloads), 'workload')}): "
                  f"geometric mean of cost ratios "
                  f"{fmt.ratio(gm.value, gm.ci_low, gm.ci_high)} → {e(sm.text)}")
