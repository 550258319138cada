"""The system section (abibench system run): terminal lines, Markdown, JSON and HTML.

Format only: every figure is analyse/system.py's. Published figures are printed beside ours,
each marked as someone else's hardware, and never enter a comparison. Time appears only as
emulation time. Guest-supplied text was cleaned when the report was parsed (run/sysboot.py);
here it is only escaped for each format's syntax.
"""

from __future__ import annotations

import html
import math

from ..analyse.system import EMULATED, FIGURE_WORDS, FIGURES, ComboResult, Estimate, SystemAnalysis

STACK = (("kernel", "#4e79a7"), ("userspace", "#f28e2b"), ("cache", "#9fc5a0"))
TOP_UNITS = 8
TOP_MAPPINGS = 8  # per combination: where its biggest processes' memory is


def _num(x: float, spec: str = ".1f") -> str:
    return format(x, spec) if math.isfinite(x) else "-"


def _est(e: Estimate | None) -> str:
    if e is None:
        return "-"
    ci = f" [{_num(e.low)}, {_num(e.high)}]" if math.isfinite(e.low) else ""
    return f"{_num(e.median)}{ci}"


def _published_lines(a: SystemAnalysis) -> list[str]:
    out = []
    for p in a.published:
        mb = f"{p.mb_32:g} vs {p.mb_64:g} MB, " if p.mb_32 and p.mb_64 else ""
        out.append(f"published (someone else's hardware: {p.hardware}): {p.what}: {mb}"
                   f"64-bit +{p.increase_pct:.0f}%")
    return out


def breakdown_line(r: ComboResult) -> str | None:
    """The biggest processes' PSS by mapping (medians, MiB) and their threads, or None."""
    top = sorted(r.breakdown.items(), key=lambda kv: -kv[1].median)[:TOP_MAPPINGS]
    if not top:
        return None
    threads = ", ".join(f"{c} {_num(e.median, '.0f')}" for c, e in r.threads.items())
    return ("biggest processes' PSS by mapping: " + ", ".join(f"{k} {_num(e.median)}"
                                                             for k, e in top)
            + (f"; threads: {threads}" if threads else ""))


def _provenance(a: SystemAnalysis) -> str:
    return "; ".join(f"{k} {v}" for k, v in a.provenance.items())


def text_lines(a: SystemAnalysis) -> list[str]:
    """The terminal's system section, one line each (the CLI prints them through _say)."""
    lines = [f"system {a.profile}: {a.description}; {a.memory_mb} MB of memory, booted under "
             "QEMU TCG", *(f"kernel {f}: {k}" for f, k in a.kernels.items()),
             *([_provenance(a)] if a.provenance else []),
             "MiB per combination, median of boots [95% distribution-free interval; below 6 "
             "boots, the range]:"]
    for r in a.results:
        lines.append(f"  {r.combination.label} ({r.phase}; {r.ok}/{r.boots} boots reported):")
        lines += [f"    {FIGURE_WORDS[f]}: {_est(r.figures.get(f))}" for f in FIGURES]
        top = sorted(r.units.items(), key=lambda kv: -kv[1].median)[:TOP_UNITS]
        if top:
            lines.append("    PSS by unit: " + ", ".join(f"{u} {_num(e.median)}"
                                                        for u, e in top))
        where = breakdown_line(r)
        if where is not None:
            lines.append(f"    {where}")
        if r.emulation_s is not None:
            lines.append(f"    measured at guest uptime {_est(r.emulation_s)} s ({EMULATED})")
    lines += [c.sentence for c in a.comparisons]
    lines += _published_lines(a)
    lines += [f"problem: {p}" for p in a.problems]
    lines += [f"note: {n}" for n in a.notes]
    return lines


def to_json(a: SystemAnalysis) -> dict[str, object]:
    def est(e: Estimate | None) -> object:
        if e is None:
            return None
        return {"median": e.median, "low": e.low if math.isfinite(e.low) else None,
                "high": e.high if math.isfinite(e.high) else None, "n": e.n}

    def result(r: ComboResult) -> dict[str, object]:
        return {"combination": r.combination.label, "kernel": r.combination.kernel,
                "userspace": r.combination.userspace, "phase": r.phase, "boots": r.boots,
                "boots_reported": r.ok, "states": list(r.states), "unit": "MiB",
                "figures": {f: est(e) for f, e in r.figures.items()},
                "units": {u: est(e) for u, e in r.units.items()},
                "used_per_boot": list(r.used), "emulation_uptime_s": est(r.emulation_s),
                "pss_by_mapping": {k: est(e) for k, e in r.breakdown.items()},
                "threads": {k: est(e) for k, e in r.threads.items()}}
    return {"kind": "system", "placement": "system: emulated", "profile": a.profile,
            "memory_mb": a.memory_mb, "kernels": a.kernels, "provenance": a.provenance,
            "results": [result(r) for r in a.results],
            "comparisons": [{"a": c.a, "b": c.b, "phase": c.phase, "percent": c.percent,
                             "low": c.low if math.isfinite(c.low) else None,
                             "high": c.high if math.isfinite(c.high) else None,
                             "significant": c.significant, "sentence": c.sentence}
                            for c in a.comparisons],
            "published": [{"what": p.what, "hardware": p.hardware, "mb_32": p.mb_32,
                           "mb_64": p.mb_64, "increase_pct": p.increase_pct,
                           "someone_elses_hardware": True} for p in a.published],
            "problems": list(a.problems), "notes": list(a.notes)}


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace("`", "'")


def to_markdown(a: SystemAnalysis) -> str:
    out = [f"## System {_md(a.profile)}: what each combination costs in memory", "",
           f"{_md(a.description)}; {a.memory_mb} MB, booted under QEMU TCG. MiB, median of boots "
           "[95% interval; below 6 boots, the range].", "",
           "| combination | phase | boots | used | kernel | kernel image | userspace | cache |",
           "|---|---|---|---|---|---|---|---|"]
    for r in a.results:
        cells = [_est(r.figures.get(f)) for f in FIGURES]
        out.append(f"| {_md(r.combination.label)} | {r.phase} | {r.ok}/{r.boots} | "
                   + " | ".join(cells) + " |")
    out.append("")
    wheres = [(r, w) for r in a.results if (w := breakdown_line(r)) is not None]
    out += [f"* {_md(r.combination.label)} ({r.phase}): {_md(w)}" for r, w in wheres]
    if a.provenance:
        out.append(f"* {_md(_provenance(a))}")
    out += [f"* {_md(c.sentence)}" for c in a.comparisons]
    out += [f"* {_md(line)}" for line in _published_lines(a)]
    out += [f"* problem: {_md(p)}" for p in a.problems]
    out += [f"* note: {_md(n)}" for n in a.notes]
    return "\n".join(out) + "\n"


def stacked_svg(a: SystemAnalysis, phase: str = "idle") -> str:
    """Stacked bars, one per combination: kernel, userspace and page cache (medians, MiB)."""
    rows = [r for r in a.results if r.phase == phase]
    totals = [sum(r.figures[k].median for k, _ in STACK if k in r.figures) for r in rows]
    top = max([t for t in totals if math.isfinite(t)] + [1.0])
    width, bar_h, left = 640, 26, 190
    height = 30 + len(rows) * (bar_h + 12) + 24
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="memory per combination">']
    y = 20
    for r, total in zip(rows, totals, strict=True):
        parts.append(f'<text x="0" y="{y + 17}" font-size="12">'
                     f'{html.escape(r.combination.label)}</text>')
        x = float(left)
        for key, colour in STACK:
            e = r.figures.get(key)
            if e is None or not math.isfinite(e.median):
                continue
            w = (width - left - 60) * e.median / top
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                         f'fill="{colour}"><title>{key}: {_num(e.median)} MiB</title></rect>')
            x += w
        parts.append(f'<text x="{x + 4:.1f}" y="{y + 17}" font-size="11">'
                     f'{_num(total)} MiB</text>')
        y += bar_h + 12
    lx = left
    for key, colour in STACK:
        parts.append(f'<rect x="{lx}" y="{y + 4}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{lx + 14}" y="{y + 13}" font-size="11">{key}</text>')
        lx += 110
    parts.append("</svg>")
    return "".join(parts)


def to_html(a: SystemAnalysis) -> str:
    """A page of its own: the stacked bars, the table, the verdicts, the published figures."""
    md_rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in
                         (r.combination.label, r.phase, f"{r.ok}/{r.boots}",
                          *(_est(r.figures.get(f)) for f in FIGURES))) + "</tr>"
        for r in a.results)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in
                   ("combination", "phase", "boots", *(FIGURE_WORDS[f] for f in FIGURES)))
    wheres = [f"{r.combination.label} ({r.phase}): {w}" for r in a.results
              if (w := breakdown_line(r)) is not None]
    items = "".join(f"<li>{html.escape(s)}</li>" for s in
                    wheres + ([_provenance(a)] if a.provenance else [])
                    + [c.sentence for c in a.comparisons] + _published_lines(a)
                    + [f"problem: {p}" for p in a.problems]
                    + [f"note: {n}" for n in a.notes])
    charts = "".join(f"<h2>{html.escape(ph)}</h2>{stacked_svg(a, ph)}"
                     for ph in dict.fromkeys(r.phase for r in a.results))
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>abibench system "
            f"{html.escape(a.profile)}</title></head><body><h1>System {html.escape(a.profile)}"
            f"</h1><p>{html.escape(a.description)}; {a.memory_mb} MB; MiB, median of boots "
            f"[95% interval]; {html.escape(EMULATED)}.</p>{charts}<table><tr>{head}</tr>"
            f"{md_rows}</table><ul>{items}</ul></body></html>\n")
