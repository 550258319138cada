"""A run against its baseline (analyse/baseline.py), as terminal text, Markdown or JSON.

Every string from results (workload and target names, axis values such as tags and compiler
versions) is text abibench did not write: the terminal form is cleaned line by line
(text.one_line), Markdown escapes it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

from ..analyse.baseline import AbiChange, BaselineComparison, GapChange, differing_axes
from ..text import one_line
from .markdown import _esc as _md_escape


def _esc(text: object) -> str:
    """Cleaned by the one sanitiser, then escaped for Markdown: a Markdown file is shown on
    terminals too (cat, less), so no escape sequence may reach it."""
    return _md_escape(one_line(str(text)))


def _pct(v: float) -> str:
    return f"{v * 100:+.1f}%" if math.isfinite(v) else "-"


def abi_sentence(c: AbiChange) -> str:
    """'x86_64 3.1% slower than baseline [+1.2%, +5.0%]': the change in cost (time, or the
    inverse of a rate) with its CI. A speed-up is worded as every report words it (25% faster:
    the baseline took 1.25x as long), its change in cost given beside it."""
    ci = f"[{_pct(c.low)}, {_pct(c.high)}]" if math.isfinite(c.low) else "(no CI)"
    quiet = "" if c.significant else ", not significant"
    if c.slowdown >= 0:
        return f"{c.target} {c.slowdown * 100:.1f}% slower than baseline {ci}{quiet}"
    faster = 1 / (1 + c.slowdown) - 1
    return (f"{c.target} {faster * 100:.1f}% faster than baseline (cost {_pct(c.slowdown)} "
            f"{ci}){quiet}")


def gap_sentence(g: GapChange) -> str:
    """'i386/x86_64 gap 1.250 -> 1.190, change -4.8% [-7.9%, -1.6%]'."""
    return (f"{g.other}/{g.reference} gap {g.before:.3f} -> {g.after:.3f}, change "
            f"{_pct(g.change - 1)} [{_pct(g.low - 1)}, {_pct(g.high - 1)}]")


def heading(cmp: BaselineComparison) -> str:
    differ = ", ".join(f"{k} {a or '-'} -> {b or '-'}" for k, a, b in differing_axes(cmp)
                       if k not in ("tool",))
    return (f"run {cmp.now} against baseline {cmp.baseline}"
            + (f" (differs in: {differ})" if differ else " (same version, compiler, host)"))


def terminal(cmp: BaselineComparison) -> str:
    lines = [heading(cmp)]
    for w in cmp.workloads:
        said = [abi_sentence(c) for c in w.abis] + [gap_sentence(g) for g in w.gaps]
        lines.append(f"  {w.workload} ({w.metric}): " + ("; ".join(said) or "nothing to compare"))
        lines += [f"    warning: {x}" for x in w.warnings]
    lines += [f"  warning: {x}" for x in cmp.warnings]
    return "".join(one_line(x) + "\n" for x in lines)


def markdown(cmp: BaselineComparison) -> str:
    out = [f"## {_esc(heading(cmp))}", "",
           "| workload | metric | change against the baseline | ABI gap |",
           "|---|---|---|---|"]
    for w in cmp.workloads:
        abis = "; ".join(_esc(abi_sentence(c)) for c in w.abis) or "-"
        gaps = "; ".join(_esc(gap_sentence(g)) for g in w.gaps) or "-"
        out.append(f"| {_esc(w.workload)} | {_esc(w.metric)} | {abis} | {gaps} |")
    notes = [x for w in cmp.workloads for x in w.warnings] + list(cmp.warnings)
    if notes:
        out += ["", *[f"* {_esc(x)}" for x in notes]]
    return "\n".join(out) + "\n"


def _num(v: float) -> float | None:
    return v if math.isfinite(v) else None


def to_json(cmp: BaselineComparison) -> dict[str, object]:
    return {
        "format": "abibench-baseline", "version": 1,
        "run": cmp.now, "baseline": cmp.baseline, "confidence": cmp.confidence,
        "axes": {"run": cmp.now_axes, "baseline": cmp.baseline_axes},
        "workloads": [{
            "workload": w.workload, "metric": w.metric, "unit": w.unit, "better": w.better,
            "abis": [{"target": c.target, "ratio": _num(c.ratio.ratio),
                      "slowdown": _num(c.slowdown), "low": _num(c.low), "high": _num(c.high),
                      "p_value": _num(c.ratio.p_value), "significant": c.significant}
                     for c in w.abis],
            "gaps": [{"other": g.other, "reference": g.reference, "baseline": _num(g.before),
                      "now": _num(g.after), "change": _num(g.change), "low": _num(g.low),
                      "high": _num(g.high), "p_value": _num(g.p_value)} for g in w.gaps],
            "warnings": list(w.warnings)} for w in cmp.workloads],
        "warnings": list(cmp.warnings),
    }


def json_text(cmp: BaselineComparison) -> str:
    return json.dumps(to_json(cmp), indent=1) + "\n"


def gate_lines(cmp: BaselineComparison, threshold: float) -> list[str]:
    """One line per slowdown that fails `--fail-on-slowdown`: significant and past the limit."""
    return [f"{w} {abi_sentence(c)}, past the limit of {threshold:.1%}"
            for w, c in cmp.slowdowns(threshold)]


RENDERERS: dict[str, Callable[[BaselineComparison], str]] = {
    "terminal": terminal, "markdown": markdown, "json": json_text,
}
