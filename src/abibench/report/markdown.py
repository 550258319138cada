"""Markdown report: for READMEs and issue threads; the same content as the HTML report, as tables.

Every string from results is escaped so that it stays text: Markdown punctuation gets a
backslash, ``&`` becomes ``&amp;`` (so no entity or HTML tag can form) and line breaks become
spaces (so a table row cannot be split). Code spans pick a fence longer than any backtick run in
their content, and pipes are escaped even there, as GitHub's tables require.
"""

from __future__ import annotations

import math
import re

from ..analyse.report import MEMORY_NAMES, Cell, Diff, Report, WorkloadBlock
from . import formatting as fmt
from . import sweepview, why
from .formatting import better_words, footprint_percent, index_rows

_SPECIAL = re.compile(r"([\\`*_\[\]{}<>()#+!|~])")


def _esc(text: object) -> str:
    t = str(text).replace("&", "&amp;").replace("\r", " ").replace("\n", " ")
    return _SPECIAL.sub(r"\\\1", t)


def _code(text: object) -> str:
    t = str(text).replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", t)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if t.startswith("`") or t.endswith("`") or not t.strip() else ""
    return f"{fence}{pad}{t}{pad}{fence}"




def _pct(d: Diff) -> str:
    return _esc(d.phrase)


def _glance_cell(c: Cell, unit: str) -> str:
    if c.row is None:
        return ""
    if c.median is None:
        return _esc(c.row.shown_state)
    extra = " (reference)" if c.reference else (f" ({_pct(c.diff)})" if c.diff else "")
    return _esc(fmt.si(c.median, unit)) + extra


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c if c else " " for c in cells) + " |"


def _table(head: list[str], rows: list[list[str]], right: set[int] | None = None) -> list[str]:
    right = right or set()
    align = ["--:" if i in right else "---" for i in range(len(head))]
    return [_row(head), _row(align), *[_row(r) for r in rows], ""]


def render(report: Report) -> str:
    r = report
    sources = "; ".join(f"{s.tag + ': ' if s.tag else ''}{s.source}" for s in r.sets)
    out = [f"# {_esc(r.title)}", "",
           f"_{_esc(sources)} · generated {_esc(r.generated)} by abibench "
           f"{_esc(r.tool_version)}_", "", *_legend(r), "## Summary", ""]
    out += _summary(r)
    out += _host(r)
    out += _workloads(r)
    out += _advice(r)
    out += _diffs(r)
    out += _memory(r)
    out += _index(r)
    out += _footprint(r)
    out += _sizes(r)
    out += _provenance(r)
    return "\n".join(out)


def _legend(r: Report) -> list[str]:
    """Each target's short label and its provenance, once (analyse/legend.py)."""
    if not r.legend:
        return []
    return ["Targets:", "", *(f"- {_code(x.label)}: {_esc(x.provenance)}" for x in r.legend), ""]


def _summary(r: Report) -> list[str]:
    """The summary: the suite's mean, one verdict per workload, the results at a glance, warnings."""
    out: list[str] = []
    for sm in r.suites:
        gm = sm.geomean
        out.append(f"- **suite** ({fmt.count(len(sm.workloads), 'workload')}): geometric mean of "
                   f"{_esc(sm.a)}/{_esc(sm.b)} cost ratios {fmt.ratio(gm.value, gm.ci_low, gm.ci_high)}"
                   f" → **{_esc(sm.text)}**"
                   + (f"; left out (outputs differ): {_esc(', '.join(sm.excluded))}"
                      if sm.excluded else ""))
    if r.suites:
        out.append("")
    rows = []
    for b in r.workloads:
        res = b.result
        if res.comparisons:
            texts = []
            for c in res.comparisons:
                t = _esc(c.verdict.text)
                if res.validation == "miscompare":
                    t = f"**INVALID (outputs differ)** — {t}"
                elif c.verdict.significant:
                    t = f"**{t}**"
                texts.append(t)
            verdict = "; ".join(texts)
        else:
            verdict = "not compared: " + _esc(", ".join(
                f"{row.label}: {row.state}" for row in res.rows if row.n < 2))
        rows.append([_esc(res.id), f"{_code(res.primary)} ({_esc(better_words(res.better))})",
                     verdict])
    out += _table(["workload", "primary metric", "verdict"], rows)
    labels = [s.label for s in r.series]
    glance = []
    for b in r.workloads:
        glance.append([_esc(b.result.id),
                       *[_glance_cell(c, b.result.unit) for c in b.cells(labels)]])
    out += ["### Results at a glance", "",
            f"Median of each workload's primary metric; in brackets {fmt.DIFFERENCE_NOTE}.",
            ""]
    out += _table(["workload", *[_esc(lbl) for lbl in labels]], glance,
                  right=set(range(1, len(labels) + 1)))
    warnings = list(r.warnings)
    for b in r.workloads:
        warnings += [f"{b.result.id}: {w}" for w in [*b.result.warnings, *b.notes]]
    if warnings:
        out += ["### Warnings", ""] + [f"- ⚠ {_esc(w)}" for w in warnings] + [""]
    return out


def _host(r: Report) -> list[str]:
    """The host context and the noise calibration, one column per result set."""
    out: list[str] = []
    heads = ["", *[_esc(s.tag or "this run") for s in r.sets]]
    out += ["## Host context", ""]
    out += _table(heads, [[f"**{_esc(c.label)}**", *[_esc(v) for v in c.values]]
                          for c in r.context])
    if r.calibration:
        out += ["### Noise calibration", "", fmt.CALIBRATION_NOTE, ""]
        out += _table(heads, [[f"**{_esc(c.label)}**", *[_esc(v) for v in c.values]]
                              for c in r.calibration])
    return out


def _workloads(r: Report) -> list[str]:
    """Every workload's section (a sweep's instances as one curve), then why one ABI wins."""
    out: list[str] = []
    out += ["## Workloads", ""]
    for item in sweepview.sections(r):  # a sweep's instances are one curve
        out += _workload(item) if isinstance(item, WorkloadBlock) else \
            sweepview.markdown(item, _esc, _table)

    out += _why(r)
    return out


def _advice(r: Report) -> list[str]:
    """A deployment's memory budget, when one was given."""
    out: list[str] = []
    if r.advice is not None:
        adv = r.advice
        out += ["## Advice", "", _esc(why.advice_note(adv)), ""]
        out += _table([_esc(c) for c in why.advice_head()],
                      [[_esc(c) for c in row] for row in why.advice_rows(adv)],
                      right={2, 3, 4, 5, 6, 7, 8})
        out += [f"- {_esc(ln.text)}" for ln in adv.lines]
        out += [f"- ⚠ {_esc(n)}" for n in adv.notes] + [""]
    return out


def _diffs(r: Report) -> list[str]:
    """Every test of every target against the reference."""
    out: list[str] = []
    diffs = [d for b in r.workloads for d in b.diffs if math.isfinite(d.percent)]
    if diffs:
        out += ["## Every test relative to the reference", "",
                f"Each target against the reference: {fmt.DIFFERENCE_NOTE}; primary metrics "
                "with Holm-corrected p-values, the others uncorrected.", ""]
        out += _table(["workload", "metric", "target", "reference", "difference [95% CI]",
                       "verdict"],
                      [[_esc(d.workload), _code(d.metric) + (" (primary)" if d.primary else ""),
                        _esc(d.label), _esc(d.reference), _pct(d),
                        ("**INVALID** — " if not d.valid else "") + _esc(d.verdict)]
                       for d in diffs], right={4})
    return out


def _memory(r: Report) -> list[str]:
    """Peak memory: every memory metric of the registry each target has."""
    out: list[str] = []
    mem = []
    for b in r.workloads:
        for metric, name in MEMORY_NAMES.items():
            comps = {c.a: c for c in b.result.memory if c.metric == metric}
            for row in b.result.rows:
                if metric not in row.memory:
                    continue
                value = row.memory[metric]
                mc = comps.get(row.label)
                mem.append([_esc(b.result.id), name, _esc(row.label), fmt.kib(value),
                            "reference" if row.label == b.reference and comps else
                            (fmt.ratio(mc.ratio.ratio, mc.ratio.ci_low, mc.ratio.ci_high)
                             if mc else "-"), _esc(mc.verdict.text) if mc else ""])
    out += ["## Peak memory", "", "Median peak RSS of the measured process (lower is better); "
            "for workloads that measure their whole process tree, also the tree's peak.", ""]
    out += _table(["workload", "memory", "target", "median", "ratio [95% CI]", "verdict"], mem,
                  right={3, 4})
    return out


def _index(r: Report) -> list[str]:
    """The XBench-style index of the micro tests."""
    out: list[str] = []
    if r.index is not None:
        out += ["## XBench-style index", "",
                f"Every micro test scored against {_esc(r.index.reference)} of the same run "
                f"({_esc(r.index.reference)} = 100, higher is better), with 95% CIs; group "
                "scores and the total are geometric means of the test scores.", ""]
        out += _table(["group / test", *[_esc(t) for t in r.index.targets],
                       f"{_esc(r.index.reference)} (reference)"],
                      [[f"**{_esc(name)}**" if kind != "test" else f"  {_esc(name)}",
                        *cells, "100"] for kind, name, cells in index_rows(r.index)],
                      right=set(range(1, len(r.index.targets) + 2)))
        if r.index.excluded:
            out += [f"Left out (outputs differ between ABIs): "
                    f"{_esc(', '.join(r.index.excluded))}", ""]
    return out


def _footprint(r: Report) -> list[str]:
    """The memory footprint of the data-structure workloads."""
    out: list[str] = []
    if r.footprint_diffs:
        out += ["## Memory footprint", "",
                "Median peak RSS per element at the largest N both ABIs measured (lower is "
                "better); negative: the ABI needs less memory than the reference. The curves "
                "over N are in the HTML report.", ""]
        out += _table(["structure", "N", "ABI", "B/element", "reference", "B/element",
                       "peak RSS ratio [95% CI]", "change [95% CI]"],
                      [[_esc(d.structure), f"{d.n:,}", _esc(d.a), fmt.number(d.a_bytes_per_element),
                        _esc(d.b), fmt.number(d.b_bytes_per_element),
                        fmt.ratio(d.ratio.ratio, d.ratio.ci_low, d.ratio.ci_high),
                        footprint_percent(d)] for d in r.footprint_diffs],
                      right={1, 3, 5, 6, 7})
    return out


def _sizes(r: Report) -> list[str]:
    """Every target's file and section sizes."""
    out: list[str] = []
    sizes = []
    for b in r.workloads:
        for row in b.result.rows:
            sizes.append([_esc(b.result.id), _esc(row.label), fmt.size(row.size),
                          fmt.size(row.text), fmt.size(row.data), fmt.size(row.bss),
                          fmt.size(row.stripped)])
    out += ["## Sizes", ""]
    out += _table(["workload", "target", "file", "text", "data", "bss", "stripped"], sizes,
                  right={2, 3, 4, 5, 6})
    out += [f"- {_esc(n)}" for n in dict.fromkeys(n for s in r.sets for n in s.size_notes)]
    return out


def _provenance(r: Report) -> list[str]:
    """How each target was obtained; where the raw samples are."""
    out: list[str] = []
    prov = []
    for entry in r.provenance:
        rows_ = dict(entry.rows)
        prov.append([_esc(entry.workload), _esc(entry.series),
                     _esc(rows_.get("source") or next(
                         (v for k, v in rows_.items() if k.startswith("Debian packages")),
                         rows_.get("provenance", "-"))),
                     _esc(rows_.get("compiler", "-")), _code(rows_.get("flags", "-")),
                     _code(rows_.get("effective target options", "-"))])
    if prov:
        out += ["## Provenance", ""]
        out += _table(["workload", "target", "source", "compiler", "flags",
                       "effective target options"], prov)
    out += ["## Raw samples", "",
            f"{r.counts.total} samples ({r.counts.counted} counted). Every value of every sample: "
            f"`abibench report … --samples-csv FILE`; the HTML report embeds them.", ""]
    return out


def _why(r: Report) -> list[str]:
    out = ["## Why", "",
           "Each comparison's time ratio is the instruction-count ratio times the "
           "time-per-instruction ratio (instructions from the counted runs under valgrind, time "
           "and its 95% CI from the timed samples); the words follow the rules of "
           "docs/explain.md. The stacked chart is in the HTML report.", ""]
    if not r.explanations:
        return [*out, "No comparison to explain.", ""]
    for x in r.explanations:
        out += [f"### {_esc(x.workload)}: {_esc(x.a)} vs {_esc(x.b)}", "",
                f"**{_esc(x.text)}** (rule: {_esc(x.rule)})", "", _code(why.decomposition(x)), ""]
        if x.evidence:
            out += _table([_esc(c) for c in why.evidence_head(x)],
                          [[_esc(c) for c in row] for row in why.evidence_rows(x)],
                          right={1, 2, 3})
        if x.functions:
            out += _table([_esc(c) for c in why.function_head(x)],
                          [[_esc(c) for c in row] for row in why.function_rows(x)],
                          right={1, 2, 3, 4, 5})
        if any(e.simulated for e in x.evidence):
            out += [_esc(why.SIMULATED) + ".", ""]
    return out


def _workload(b: WorkloadBlock) -> list[str]:
    res = b.result
    out = [f"### {_esc(res.id)}: {_esc(res.title)}", "",
           f"Primary metric {_code(res.primary)} ({_esc(res.unit)}, "
           f"{better_words(res.better)})"
           + (f"; compared with {_esc(b.reference)}." if b.reference else "."), ""]
    if b.params:
        out += ["Parameters: " + _code(" ".join(f"{k}={v}" for k, v in b.params.items())), ""]
    rows = []
    for row in res.rows:
        s = row.summary
        state = row.shown_state if row.state == "ok" else \
            f"{row.state}: {row.reason or ''}"
        label = f"{row.label} (emulated)" if row.emulated else row.label
        rows.append([_esc(label), _esc(state), str(row.n or "-"),
                     _esc(fmt.si(s.median, res.unit)) if s else "-",
                     _esc(f"{fmt.si(s.min, res.unit)} – {fmt.si(s.max, res.unit)}") if s else "-",
                     f"{fmt.number(abs(s.cv) * 100)}%" if s and math.isfinite(s.cv) else "-",
                     fmt.kib(row.rss_kb) + (f" (net of emulator {fmt.kib(row.net_rss_kb)})"
                                            if row.emulated else ""),
                     fmt.size(row.size), fmt.size(row.text),
                     f"{row.instructions:,}" if row.instructions else "-"])
    out += _table(["target", "state", "n", "median", "min – max", "CV", "peak RSS", "file size",
                   "text", "instructions"], rows, right={2, 3, 4, 5, 6, 7, 8, 9})
    for line in res.emulation:
        out.append(f"- **{_esc(line)}**")
    for d in b.diffs:
        invalid = "**INVALID: outputs differ** — " if not d.valid else ""
        out.append(f"- {_code(d.metric)} {_esc(d.label)}/{_esc(d.reference)} ratio "
                   f"{fmt.ratio(d.ratio, d.ci_low, d.ci_high)}: {invalid}{_esc(d.verdict)}")
    for c in res.memory:
        out.append(f"- {MEMORY_NAMES.get(c.metric, c.metric)} {_esc(c.a)}/{_esc(c.b)} ratio "
                   f"{fmt.ratio(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high)}: "
                   f"{_esc(c.verdict.text)}")
    for c in res.emulated_memory:
        out.append(f"- peak RSS net of the emulator {_esc(c.a)}/{_esc(c.b)} ratio "
                   f"{fmt.ratio(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high)}: "
                   f"{_esc(c.verdict.text)}")
    for cv in res.counts:
        out.append(f"- instructions {_esc(cv.a)} {cv.count_a:,} / {_esc(cv.b)} {cv.count_b:,} "
                   f"= {fmt.number(cv.ratio, '.3f')}: {_esc(cv.text)}")
    check = "**MISCOMPARE**" if res.validation == "miscompare" else _esc(res.validation)
    out.append(f"- output check: {check} — {_esc(res.validation_detail)}")
    for tag, reason in b.stop:
        out.append(f"- stopped{' (' + _esc(tag) + ')' if tag else ''}: {_esc(reason)}")
    for note in res.provenance:
        out.append(f"- {_esc(note)}")
    for w in [*res.warnings, *b.notes]:
        out.append(f"- ⚠ {_esc(w)}")
    return [*out, ""]
