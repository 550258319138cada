"""The terminal view: after every run, and from `abibench report` without a file option.

A single run gets one table per workload, the suite summary, the memory footprint, the size
table and the XBench-style index; a comparison of several result sets gets one table with a
column per series. Rendered with rich into a string: colours only when asked for.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..analyse.advise import Advice
from ..analyse.explain import Explanation
from ..analyse.report import MEMORY_NAMES, Cell, Report, SetInfo, WorkloadBlock
from ..analyse.results import PairVerdict, TargetRow
from ..analyse.xbench import GROUPS, Index
from ..text import one_line
from . import formatting as fmt
from . import sweepview, why

WIDTH = 140  # fixed width when not a terminal (CI, a pipe): logs stay readable
TONE = {"invalid": "red", "better": "green", "worse": "red", "unclear": "dim"}


def e(text: object) -> str:
    """Any text that is not abibench's own, ready for rich markup: one line, no control or escape
    sequence (text.one_line), and its square brackets escaped so that a unit like "ops[/bold]"
    or a name with "[link=...]" is shown as it is, never styled and never a markup error.

    The order matters: escaping first would let a removed control sequence join a backslash
    and a bracket into markup again."""
    return escape(one_line(str(text)))


def render(report: Report, *, color: bool = False, width: int | None = None) -> str:
    buf = io.StringIO()
    # emoji=False: a ":name:" in a workload's name or unit is text, not a picture.
    con = Console(file=buf, width=width or WIDTH, no_color=not color, force_terminal=color,
                  highlight=False, soft_wrap=False, emoji=False)
    if report.kind == "comparison":
        _comparison(report, con)
    else:
        _run(report, con)
    return buf.getvalue()


# --------------------------------------------------------------------------- a single run


def _ratio(c: PairVerdict) -> str:
    return fmt.ratio(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high)


def _instr_ratio(rows: Sequence[TargetRow]) -> str:
    parts = [f"{r.label}/{r.insn_reference} {fmt.number(r.insn_ratio, '.3f')}" for r in rows
             if r.insn_ratio is not None]
    return f" (ratios: {', '.join(parts)})" if parts else ""


def _counters(rows: list[tuple[str, str]]) -> str:
    """Which counter counted which targets: "valgrind: i386, x86_64; QEMU plugin: armhf"."""
    by: dict[str, list[str]] = {}
    for label, counter in rows:
        by.setdefault(counter, []).append(label)
    return "; ".join(f"{c}: {', '.join(labels)}" for c, labels in by.items())


def _legend(report: Report, con: Console) -> None:
    """Each target's short label and where its programs came from, once (analyse/legend.py)."""
    if report.legend:
        con.print("\n".join(["targets:", *(f"  {e(x.text)}" for x in report.legend)]))


def _run(report: Report, con: Console) -> None:
    con.print(e(report.heading))
    _legend(report, con)
    for w in report.warnings:
        con.print(f"[yellow]warning:[/] {e(w)}")
    for item in sweepview.sections(report):  # a sweep's instances are one curve
        if isinstance(item, WorkloadBlock):
            _workload(item, con, report.explanations_of(item.result.id))
        else:
            sweepview.terminal(item, con, e)
    if report.suites:
        con.print()
        for sm in report.suites:
            gm = sm.geomean
            con.print(f"[bold]suite[/] ({fmt.count(len(sm.workloads), 'workload')}): geometric "
                      f"mean of {e(sm.a)}/{e(sm.b)} cost ratios "
                      f"{fmt.ratio(gm.value, gm.ci_low, gm.ci_high)} → {e(sm.text)}")
            if sm.excluded:
                con.print(f"  [red]left out (outputs differ):[/] {e(', '.join(sm.excluded))}")
    _footprint(report, con)
    _sizes(report, con)
    _calibration(report, con)
    if report.index is not None:
        con.print()
        for line in index_lines(report.index):
            con.print(e(line))
    if report.advice is not None:
        con.print()
        _advice(report.advice, con)


def explanation_lines(x: Explanation, functions: int = 5) -> list[str]:
    """One explanation as plain lines: the words, the decomposition, the evidence, the top
    functions."""
    lines = [f"{x.a} vs {x.b}: {x.text}", f"  {why.decomposition(x)}"]
    if x.evidence:
        lines.append("  evidence: " + "; ".join(
            f"{row[0]} {row[1]} vs {row[2]} ({row[3]}, {row[4].split(' ')[0]})"
            for row in why.evidence_rows(x)))
    for row in why.function_rows(x)[:functions]:
        lines.append(f"  {row[0]}: {row[4]} of the difference ({row[3]} instructions; "
                     f"{x.a} {row[1]}, {x.b} {row[2]}; ratio {row[5]})")
    if x.simulation == "cache" and any(ev.simulated for ev in x.evidence):
        lines.append(f"  ({why.SIMULATED})")
    return lines


def render_explanations(report: Report, workload: str | None = None) -> str:
    """`abibench explain`: every workload's explanations (or one workload's)."""
    buf = io.StringIO()
    con = Console(file=buf, width=WIDTH, no_color=True, highlight=False, soft_wrap=True,
                  emoji=False)
    shown = [b for b in report.workloads if workload in (None, b.result.id)]
    for b in shown:
        con.print(f"{e(b.result.id)} ({e(b.result.primary)}, "
                  f"{fmt.better_words(b.result.better)})")
        xs = report.explanations_of(b.result.id)
        if not xs:
            con.print("  not compared: fewer than two measured targets")
        for x in xs:
            for line in explanation_lines(x, functions=10):
                con.print(f"  {e(line)}")
    return buf.getvalue()


def _advice(advice: Advice, con: Console) -> None:
    con.print("[bold]advice[/] for " + e(advice.deployment.describe()))
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for i, col in enumerate(why.advice_head()):
        table.add_column(col, justify="left" if i < 2 else "right")
    for row in why.advice_rows(advice):
        table.add_row(*map(e, row))
    con.print(table)
    for line in advice.lines:
        con.print(f"  {e(line.text)}")
    for note in advice.notes:
        con.print(f"  [yellow]note:[/] {e(note)}")
    con.print(f"  [dim]{e(why.advice_note(advice))}[/]")


def render_advice(report: Report) -> str:
    """`abibench advise`: the deployment table and one sentence per workload."""
    buf = io.StringIO()
    con = Console(file=buf, width=WIDTH, no_color=True, highlight=False, soft_wrap=True,
                  emoji=False)
    if report.advice is not None:
        _advice(report.advice, con)
    return buf.getvalue()


def _insn_cells(row: TargetRow) -> list[str]:
    if not row.instructions:
        return ["-", ""]
    ratio = "" if row.insn_ratio is None else fmt.number(row.insn_ratio, ".3f")
    return [f"{row.instructions:,}", ratio]


def _target_table(b: WorkloadBlock,
                  explanations: Sequence[Explanation]) -> tuple[Table, list[str]]:
    """One row per target: its primary metric, memory, sizes, instructions, explanation;
    and a note for each target that did not run to the end."""
    res = b.result
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    explained = {x.a: x for x in explanations}
    # A memory column for each memory metric of the registry some row has (peak RSS always).
    memory = [m for m in MEMORY_NAMES if any(m in row.memory for row in res.rows)]
    emulated = any(r.emulated for r in res.rows)
    # Instructions per ABI and each one's ratio to the LP64 ABI of its own machine (the
    # ILP32/LP64 ratio of every pair: sparc32plus/sparc64, i386/x86_64, ...).
    insns = {r.label: r.instructions for r in res.rows if r.instructions}
    for col in ("ABI", "n", "median", "min", "max", "outliers",
                *(MEMORY_NAMES[m] for m in memory), *(["net of emulator"] if emulated else []),
                "file size", "text", *(["instructions", "/ 64-bit"] if insns else []),
                "explanation"):
        # An ABI name is never cut ("mips64el-n…"): the numbers wrap instead.
        table.add_column(col, justify="left" if col in ("ABI", "explanation") else "right",
                         min_width=max((len(r.label) for r in res.rows), default=0)
                         if col == "ABI" else None)
    notes = []
    for row in res.rows:
        s = row.summary
        if row.state != "ok":
            notes.append(f"  [yellow]{e(row.label)}: {e(row.state)}[/] — {e(row.reason or '')}")
        name = row.label if row.state == "ok" else f"{row.label} ({row.state})"
        table.add_row(
            e(f"{name} (emulated)" if row.emulated else name),
            str(row.n) if row.n else "-",
            e(fmt.si(s.median, res.unit)) if s else "-",
            e(fmt.si(s.min, res.unit)) if s else "-",
            e(fmt.si(s.max, res.unit)) if s else "-",
            str(row.outliers) if s else "-",
            *(fmt.kib(row.memory.get(m)) for m in memory),
            *([fmt.kib(row.net_rss_kb) if row.emulated else "-"] if emulated else []),
            fmt.size(row.size), fmt.size(row.text),
            *(_insn_cells(row) if insns else []),
            e(explained[row.label].short) if row.label in explained else
            ("reference" if explained and row.label == b.reference else ""))
    return table, notes


def _workload(b: WorkloadBlock, con: Console, explanations: Sequence[Explanation] = ()) -> None:
    res = b.result
    con.print()
    con.print(f"[bold]{e(res.id)}[/] — {e(res.title)}")
    con.print(f"  {e(res.primary)} in {e(res.unit or 'units')}, {fmt.better_words(res.better)}")
    table, notes = _target_table(b, explanations)
    con.print(table)
    for note in notes:
        con.print(note)
    for line in res.provenance:
        con.print(f"  {e(line)}")
    for line in res.emulation:
        con.print(f"  [magenta]{e(line)}[/]")
    for c in res.comparisons:
        colour = "red" if res.validation == "miscompare" else (
            "green" if c.verdict.significant else "white")
        prefix = "INVALID (outputs differ) — " if res.validation == "miscompare" else ""
        con.print(f"  {e(c.a)}/{e(c.b)} {e(res.primary)} ratio {_ratio(c)}"
                  f" → [{colour}]{prefix}{e(c.verdict.text)}[/] "
                  f"(p={fmt.number(c.p_adjusted, '.3g')} Holm)")
    for c in res.memory:
        con.print(f"  {e(c.a)}/{e(c.b)} {MEMORY_NAMES.get(c.metric, c.metric)} ratio "
                  f"{_ratio(c)} → {e(c.verdict.text)}")
    for c in res.emulated_memory:
        con.print(f"  {e(c.a)}/{e(c.b)} peak RSS net of the emulator, ratio {_ratio(c)} → "
                  f"{e(c.verdict.text)}")
    counted = [(r.label, r.instructions) for r in res.rows if r.instructions]
    if counted:
        differed = [r.label for r in res.rows if r.instructions and not r.instructions_exact]
        how = ("exact" if not differed else
               f"not exact: repeated runs of {', '.join(differed)} differed")
        who = _counters([(r.label, r.counter) for r in res.rows if r.instructions])
        con.print(f"  instructions executed ({e(how)}; {e(who)}): " + e(", ".join(
            f"{lbl} {n:,}" for lbl, n in counted) + _instr_ratio(res.rows)))
    for cv in res.counts:
        con.print(f"  {e(cv.a)}/{e(cv.b)} instructions {fmt.number(cv.ratio, '.3f')} → "
                  f"[bold]{e(cv.text)}[/]")
    for x in explanations:
        for i, line in enumerate(explanation_lines(x, functions=3)):
            con.print(("  why: " if i == 0 else "  ") + e(line))
    parts = [fmt.size_change(r.size_reference, r.size_larger_pct, r.label)
             for r in res.rows if r.size_larger_pct is not None and r.size_reference]
    if parts:
        con.print(f"  file size: {e(', '.join(parts))}")
    if res.validation == "miscompare":
        con.print(f"  [red bold]MISCOMPARE:[/] {e(res.validation_detail)}")
    elif res.validation == "ok":
        con.print(f"  output check: {e(res.validation_detail)}")
    else:
        con.print(f"  output check: [yellow]{e(res.validation_detail)}[/]")
    if res.stop_reason:
        con.print(f"  stopped: {e(res.stop_reason)}")
    # The analysis's warnings, then those stored with the run (as every other format shows).
    for w in [*res.warnings, *b.notes]:
        con.print(f"  [yellow]warning:[/] {e(w)}")


def _footprint(report: Report, con: Console) -> None:
    """The peak RSS difference at the largest N of every footprint structure, when measured."""
    if not report.footprint_diffs:
        return
    con.print()
    con.print("[bold]memory footprint[/] at the largest N (peak RSS per element, lower is "
              "better, 95% CI):")
    for d in report.footprint_diffs:
        con.print(f"  {e(d.text)}")


def _sizes(report: Report, con: Console) -> None:
    """The size factor of seed 000: every artifact per ABI (built-but-not-run x32 included)."""
    rows = [r for s in report.sets for r in s.sizes]
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
            f"{fmt.number(r.file_larger_pct, '+.1f')}%/"
            + ("-" if r.stripped_larger_pct is None
               else f"{fmt.number(r.stripped_larger_pct, '+.1f')}%"))
        table.add_row(e(wl), e(r.artifact if head != last else ""),
                      e(r.target if r.state == "ok" else f"{r.target} ({r.state})"),
                      *(f"{v:,}" if v is not None else "-"
                        for v in (r.file, r.text, r.data, r.bss, r.stripped)),
                      larger)
        last = head
    con.print(table)
    for note in dict.fromkeys(n for s in report.sets for n in s.size_notes):
        con.print(f"  {e(note)}")


def _calibration(report: Report, con: Console) -> None:
    """The noise calibration: what it measured, and the design chosen per workload and why."""
    if not report.calibration:
        return
    con.print()
    con.print(f"[bold]noise calibration[/]: {fmt.CALIBRATION_NOTE}")
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold",
                  show_header=len(report.sets) > 1)
    table.add_column("")
    for s in report.sets:
        table.add_column(e(s.tag or "this run"))
    for row in report.calibration:
        table.add_row(e(row.label), *map(e, row.values))
    con.print(table)


def _index_score(score: float, lo: float, hi: float) -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{fmt.number(score, '6.1f')} (no CI)"
    return f"{fmt.number(score, '6.1f')} [{fmt.number(lo)}, {fmt.number(hi)}]"


def index_lines(index: Index) -> list[str]:
    """XBench-style text: total, then each group and its tests, one block per target."""
    if not index.tests:
        return [f"index: no test has samples of both {index.reference} and another ABI"]
    names = dict(GROUPS)
    lines = [f"XBench-style index ({index.reference} = 100, higher is better, 95% CI)"]
    for target in index.targets:
        lines.append(f"{target}:")
        total = next(t for t in index.totals if t.target == target)
        lines.append(f"  {'Results':34s} {_index_score(total.score, total.ci_low, total.ci_high)}"
                     f"  ({total.tests} tests)")
        for g in (g for g in index.groups if g.target == target):
            lines.append(f"  {names.get(g.group, g.group.title()) + ' Test':34s} "
                         f"{_index_score(g.score, g.ci_low, g.ci_high)}")
            mine = [t for t in index.tests if t.target == target and t.group == g.group]
            for t in mine:
                several = sum(1 for x in mine if x.workload == t.workload) > 1
                name = f"{t.workload} {t.metric}" if several else t.workload
                lines.append(f"    {name:32s} {_index_score(t.score, t.ci_low, t.ci_high)}  "
                             f"{fmt.number(t.value, '.4g')} vs "
                             f"{fmt.number(t.reference_value, '.4g')} {t.unit}")
    if index.excluded:
        lines.append(f"left out (outputs differ between ABIs): {', '.join(index.excluded)}")
    return lines


# --------------------------------------------------------------------------- a comparison


def _cell(c: Cell, unit: str) -> str:
    """Median of the primary metric, and below it the difference to the reference."""
    if c.row is None:
        return ""
    if c.median is None:
        return f"[dim]{e(c.row.shown_state)}[/]"
    value = e(fmt.si(c.median, unit))
    if c.reference:
        return value + "\n[dim]reference[/]"
    d = c.diff
    if d is None or not math.isfinite(d.percent):
        return value
    return value + f"\n[{TONE[d.tone]}]{e(d.phrase)}[/]"


def _set_line(s: SetInfo) -> str:
    h = s.host
    return (f"  {e(s.tag)}: {e(s.source)} — {e(str(h.cpu_model or '?'))}, kernel "
            f"{e(str(h.kernel_release or '?'))} ({e(str(h.kernel_bits))}-bit), started "
            f"{e(str(s.run.started))}")


def _comparison(report: Report, con: Console) -> None:
    con.print("\n".join([f"[bold]{e(report.title)}[/]", *map(_set_line, report.sets),
                         *(f"[yellow]warning:[/] {e(w)}" for w in report.warnings)]))
    _legend(report, con)
    labels = [s.label for s in report.series]
    table = Table(show_edge=False, pad_edge=False, header_style="bold", show_lines=True)
    table.add_column("workload")
    for lbl in labels:
        table.add_column(e(lbl), justify="right")
    for b in report.workloads:
        res = b.result
        cells = [f"{e(res.id)}\n[dim]{e(res.primary)}, {fmt.better_words(res.better)}[/]"]
        cells += [_cell(c, res.unit) for c in b.cells(labels)]
        table.add_row(*cells)
    con.print(table)
    con.print(f"[dim]median of the primary metric; below it {fmt.DIFFERENCE_NOTE}; colour: "
              "significant after Holm correction[/]")
    for b in report.workloads:
        if b.result.validation == "miscompare":
            con.print(f"[red bold]MISCOMPARE[/] {e(b.result.id)}: "
                      f"{e(b.result.validation_detail)}")
        for w in [*b.result.warnings, *b.notes]:
            con.print(f"[yellow]warning:[/] {e(b.result.id)}: {e(w)}")
    _calibration(report, con)
    for sm in report.suites:
        gm = sm.geomean
        con.print(f"[bold]suite[/] {e(sm.a)} vs {e(sm.b)} "
                  f"({fmt.count(len(sm.workloads), 'workload')}): geometric mean of cost ratios "
                  f"{fmt.ratio(gm.value, gm.ci_low, gm.ci_high)} → {e(sm.text)}")
