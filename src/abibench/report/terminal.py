"""The table printed after every run, and by `abibench report` without a file option."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.markup import escape as e
from rich.table import Table

from ..analyse import REFERENCE_ORDER, Comparison, WorkloadResult, suite_summary
from . import formatting as fmt


def console(stream: Any = None) -> Console:
    out = stream or sys.stdout
    tty = out.isatty()
    # Not a terminal (CI, a pipe): fixed width, no colour codes in logs.
    return Console(file=out, width=None if tty else 140, no_color=not tty, highlight=False,
                   soft_wrap=False)


def _ratio(c: Comparison) -> str:
    return fmt.ratio(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high)


def _is_64(label: str) -> bool:
    """The 64-bit reference, from any provenance: x86_64, x86_64/debian, aarch64 ..."""
    return label.split("/", 1)[0] in REFERENCE_ORDER


def _instr_ratio(counted: list[tuple[str, int]]) -> str:
    ref = next((n for lbl, n in counted if _is_64(lbl)), None)
    if ref is None:
        return ""
    parts = [f"{lbl}/64-bit {n / ref:.3f}" for lbl, n in counted if n != ref]
    return f" ({', '.join(parts)})" if parts else ""


def render(results: list[WorkloadResult], header: str, warnings: list[str],
           con: Console) -> None:
    _render_workloads(results, header, warnings, con)
    suites = suite_summary(results)
    if suites:
        con.print()
        for sm in suites:
            gm = sm.geomean
            con.print(f"[bold]suite[/] ({fmt.count(len(sm.workloads), 'workload')}): geometric mean of "
                      f"{sm.a}/{sm.b} cost ratios {fmt.ratio(gm.value, gm.ci_low, gm.ci_high)}"
                      f" → {sm.text}")
            if sm.excluded:
                con.print(f"  [red]left out (outputs differ):[/] {e(', '.join(sm.excluded))}")


def _render_workloads(results: list[WorkloadResult], header: str, warnings: list[str],
                      con: Console) -> None:
    con.print(e(header))
    for w in warnings:
        con.print(f"[yellow]warning:[/] {e(w)}")
    for res in results:
        con.print()
        con.print(f"[bold]{e(res.id)}[/] — {e(res.title)}")
        direction = "higher is better" if res.better == "higher" else "lower is better"
        con.print(f"  {e(res.primary)} in {e(res.unit or 'units')}, {direction}")
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        for col in ("ABI", "n", "median", "min", "max", "outliers", "peak RSS", "file size",
                    "text"):
            table.add_column(col, justify="left" if col == "ABI" else "right")
        notes = []
        for row in res.rows:
            s = row.summary
            if row.state != "ok":
                notes.append(f"  [yellow]{e(row.label)}: {row.state}[/] — {e(row.reason or '')}")
            table.add_row(
                e(row.label if row.state == "ok" else f"{row.label} ({row.state})"),
                str(row.n) if row.n else "-",
                fmt.si(s.median, res.unit) if s else "-",
                fmt.si(s.min, res.unit) if s else "-",
                fmt.si(s.max, res.unit) if s else "-",
                str(row.outliers) if s else "-",
                fmt.kib(row.rss_kb), fmt.size(row.size), fmt.size(row.text))
        con.print(table)
        for note in notes:
            con.print(note)
        for line in res.provenance:
            con.print(f"  {e(line)}")
        for c in res.comparisons:
            colour = "red" if res.validation == "miscompare" else (
                "green" if c.verdict.significant else "white")
            prefix = "INVALID (outputs differ) — " if res.validation == "miscompare" else ""
            con.print(f"  {e(c.a)}/{e(c.b)} {e(res.primary)} ratio {_ratio(c)}"
                      f" → [{colour}]{prefix}{e(c.verdict.text)}[/] (p={c.p_adjusted:.3g} Holm)")
        for c in res.memory:
            con.print(f"  {e(c.a)}/{e(c.b)} peak RSS ratio {_ratio(c)} → {e(c.verdict.text)}")
        counted = [(r.label, r.instructions) for r in res.rows if r.instructions]
        if counted:
            con.print("  instructions (valgrind, exact): " + e(", ".join(
                f"{lbl} {n:,}" for lbl, n in counted) + _instr_ratio(counted)))
        big = [(r.label, r.size) for r in res.rows if r.size]
        if len(big) >= 2:
            ref = next((sz for lbl, sz in big if _is_64(lbl)), None)
            if ref:
                parts = [f"{lbl} {100 * (sz / ref - 1):+.1f}%" for lbl, sz in big
                         if sz != ref and not _is_64(lbl)]
                if parts:
                    con.print(f"  file size vs 64-bit: {e(', '.join(parts))}")
        if res.validation == "miscompare":
            con.print(f"  [red bold]MISCOMPARE:[/] {e(res.validation_detail)}")
        elif res.validation == "ok":
            con.print(f"  output check: {e(res.validation_detail)}")
        else:
            con.print(f"  output check: [yellow]{e(res.validation_detail)}[/]")
        if res.stop_reason:
            con.print(f"  stopped: {e(res.stop_reason)}")
        for w in res.warnings:
            con.print(f"  [yellow]warning:[/] {e(w)}")


def render_sizes(doc: dict[str, Any], con: Console) -> None:
    """The size factor of seed 000: every artifact per ABI (built-but-not-run x32 included).

    First the footprint differences at the largest N, when the run has footprint workloads:
    the CLI prints this after the summary of every run and `abibench report`.
    """
    from .sizes import size_rows

    render_footprint(doc, con)  # here so that every caller of the summary prints it too
    rows = size_rows(doc)
    if not rows:
        return
    con.print()
    con.print("[bold]sizes[/] of every artifact in bytes; 64-bit larger: how much bigger the "
              "64-bit build is than this one (file / stripped)")
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for col in ("workload", "artifact", "ABI", "file", "text", "data", "bss", "stripped",
                "64-bit larger"):
        table.add_column(col, justify="left" if col in ("workload", "artifact", "ABI")
                         else "right")
    last = None
    for r in rows:
        head = (r.workloads, r.artifact)
        wl = ", ".join(r.workloads) if head != last else ""
        larger = "-" if r.file_larger_pct is None else (
            f"{r.file_larger_pct:+.1f}%/"
            + ("-" if r.stripped_larger_pct is None else f"{r.stripped_larger_pct:+.1f}%"))
        table.add_row(e(wl), e(r.artifact if head != last else ""),
                      e(r.target if r.state == "ok" else f"{r.target} ({r.state})"),
                      *(f"{v:,}" if v is not None else "-"
                        for v in (r.file, r.text, r.data, r.bss, r.stripped)),
                      larger)
        last = head
    con.print(table)


def render_footprint(doc: dict[str, Any], con: Console) -> None:
    """The peak RSS difference at the largest N of every footprint structure, when measured."""
    from ..footprint import series
    from .content import footprint_differences

    diffs = footprint_differences(series(doc))
    if not diffs:
        return
    con.print()
    con.print("[bold]memory footprint[/] at the largest N (peak RSS per element, lower is "
              "better, 95% CI):")
    for d in diffs:
        con.print(f"  {e(d.text)}")
