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
from .charts import check_svg
from .htmlkit import CSP, STYLE, Html, h, join, table

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
             f'viewBox="0 0 {width} {height}" class="chart" role="img" '
             'aria-label="memory per combination">']
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


def _num_cells(r: ComboResult) -> list[str]:
    return [_est(r.figures.get(f)) for f in FIGURES]


def _top_units(a: SystemAnalysis) -> list[str]:
    """The services (systemd units) with the most PSS in any combination, biggest first."""
    most: dict[str, float] = {}
    for r in a.results:
        for u, e in r.units.items():
            if math.isfinite(e.median):
                most[u] = max(most.get(u, 0.0), e.median)
    return sorted(most, key=lambda u: (-most[u], u))[:TOP_UNITS * 2]


def _chart(a: SystemAnalysis, phase: str) -> Html:
    svg = stacked_svg(a, phase)
    check_svg(svg)  # only drawing elements, nothing it could run or fetch
    return h("figure", Html(svg), h("figcaption", f"{phase}: kernel, userspace and page cache "
                                    "per combination (medians of boots, MiB)"), class_="wide")


def _html_sections(a: SystemAnalysis) -> list[Html]:
    phases = list(dict.fromkeys(r.phase for r in a.results))
    labels = [f"{r.combination.label} ({r.phase})" for r in a.results]
    units = _top_units(a)
    wheres = [f"{r.combination.label} ({r.phase}): {w}" for r in a.results
              if (w := breakdown_line(r)) is not None]
    facts = [[f"kernel {f}", k] for f, k in a.kernels.items()] + [
        [k, v] for k, v in a.provenance.items()]
    problems = h("ul", *[h("li", p) for p in a.problems], class_="warnings") \
        if a.problems else None
    notes = h("ul", *[h("li", f"note: {n}") for n in a.notes], class_="notes") \
        if a.notes else None
    return [
        h("section", h("h2", "Summary"),
          h("p", f"{a.description}; {a.memory_mb} MB of memory for every combination, booted "
                 f"under QEMU TCG. MiB, median of boots [95% interval; below 6 boots, the "
                 f"range]; {EMULATED}."),
          h("ul", *[h("li", h("span", c.sentence, class_="badge sig" if c.significant
                              else "badge none")) for c in a.comparisons], class_="verdicts"),
          problems, notes, id="summary"),
        h("section", h("h2", "Memory"), *[_chart(a, ph) for ph in phases],
          table(["combination", "phase", "boots", *FIGURES],
                [[r.combination.label, r.phase, f"{r.ok}/{r.boots}", *_num_cells(r)]
                 for r in a.results], num=set(range(3, 3 + len(FIGURES)))),
          h("p", "; ".join(f"{f}: {FIGURE_WORDS[f].partition(' (')[2].rstrip(')')}"
                           for f in FIGURES), class_="muted"), id="memory"),
        h("section", h("h2", "Services"),
          h("p", "PSS per systemd unit (median of boots, MiB), the biggest first.",
            class_="muted"),
          table(["unit", *labels], [[u, *(_est(r.units.get(u)) for r in a.results)]
                                    for u in units], num=set(range(1, 1 + len(labels)))),
          h("ul", *[h("li", w) for w in wheres]) if wheres else None, id="services"),
        h("section", h("h2", "Published figures"),
          h("p", "Measured by others on their own hardware: shown beside ours, never mixed "
                 "into a comparison.", class_="muted"),
          h("ul", *[h("li", line) for line in _published_lines(a)]) if a.published
          else h("p", "none named by this profile"), id="published"),
        h("section", h("h2", "Provenance"), table(["", "value"], facts), id="provenance")]


def to_html(a: SystemAnalysis) -> str:
    """A page of its own, with the run reports' look (report/htmlkit.py: their stylesheet,
    header, in-page navigation and Content-Security-Policy): the stacked bars, the figures'
    table, the services, the verdicts, the published figures. Every text escaped by `h`."""
    title = f"System {a.profile}: what each combination costs in memory"
    nav = h("nav", *[h("a", word, href=f"#{anchor}") for anchor, word in (
        ("summary", "Summary"), ("memory", "Memory"), ("services", "Services"),
        ("published", "Published"), ("provenance", "Provenance"))])
    head = join([h("meta", charset="utf-8"),
                 h("meta", name="viewport", content="width=device-width, initial-scale=1"),
                 h("meta", http_equiv="Content-Security-Policy", content=CSP),
                 h("meta", name="referrer", content="no-referrer"),
                 h("title", f"abibench system {a.profile}"), h("style", Html(STYLE))])
    boots = sum(r.boots for r in a.results if r.phase == "idle")
    combos = len({r.combination for r in a.results})
    body = join([h("header", h("h1", title),
                   h("p", f"abibench system run · {boots} boots of {combos} combinations · "
                          "emulated: memory is the systems', time is QEMU's"), nav),
                 h("main", *_html_sections(a),
                   h("footer", "Self-contained report: no scripts, no external resources. "
                               "Bars start at zero."))])
    return "<!DOCTYPE html>\n" + h("html", h("head", head), h("body", body), lang="en") + "\n"
