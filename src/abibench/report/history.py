"""A workload's history (analyse/history.py) as a terminal table, Markdown or JSON.

Axis values (tags, compiler versions, host names) and names come from stored runs, which may
be imported: the terminal form is cleaned line by line (text.one_line), Markdown escapes them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

from ..analyse.history import Change, History
from ..text import one_line
from .formatting import si
from .markdown import _esc as _md_escape


def _esc(text: object) -> str:
    """Cleaned by the one sanitiser, then escaped for Markdown: a Markdown file is shown on
    terminals too (cat, less), so no escape sequence may reach it."""
    return _md_escape(one_line(str(text)))


def _cell(v: float | None, ratio: bool) -> str:
    if v is None or not math.isfinite(v):
        return "-"
    return f"{v:.3f}" if ratio else si(v)


def rows(h: History) -> tuple[list[str], list[list[str]]]:
    """The table: one row per run (oldest first), a '*' after a value where a new level
    starts."""
    head = ["run", "started", h.by, *h.series]
    starts = {(c.series, c.run_index) for c in h.changes}
    body = []
    for i, p in enumerate(h.points):
        cells = [p.run_id, p.started[:19], p.axes.get(h.by) or "-"]
        for s in h.series:
            mark = " *" if (s, i) in starts else ""
            cells.append(_cell(p.values.get(s), h.is_ratio(s)) + mark)
        body.append(cells)
    return head, body


def _moved(h: History, c: Change) -> str:
    """Where a change is, and between what: 'run R (version v1 -> v2)', by host 'on host H,
    run R (started ...)' since the host is the block, not the step."""
    if h.by == "host":
        return f"on host {c.host or '-'} at run {c.run_id}"
    by = h.points[c.run_index].axes.get(h.by) or "-"
    prev = h.points[c.run_index - 1].axes.get(h.by) or "-" if c.run_index > 0 else "-"
    return f"at run {c.run_id} ({h.by} {prev} -> {by})"


def change_sentences(h: History) -> list[str]:
    out = []
    for c in h.changes:
        ratio = h.is_ratio(c.series)
        kind = "ratio" if ratio else h.metric
        out.append(f"change in {c.series} {kind} {_moved(h, c)}: "
                   f"{_cell(c.before, ratio)} -> {_cell(c.after, ratio)} "
                   f"({c.relative * 100:+.1f}%, permutation p = {c.p_value:.3f})")
    for c in h.undecided:
        ratio = h.is_ratio(c.series)
        out.append(f"cannot tell (too few runs) for {c.series} {_moved(h, c)}: "
                   f"{_cell(c.before, ratio)} -> {_cell(c.after, ratio)} "
                   f"({c.relative * 100:+.1f}%): the samples differ, but under four runs and "
                   "no repeated runs of one build on this host cannot say what a rerun moves; "
                   "measure each build twice or more")
    return out


def host_rows(h: History) -> tuple[list[str], list[list[str]]]:
    """The hosts compared (by host): each build's level per series on each host, over the
    first host's. Empty without hosts."""
    head = ["series", "build", "host", "runs", "level", "vs first host"]
    body = [[x.series, x.build or "-", x.host, str(x.runs),
             _cell(x.level, h.is_ratio(x.series)),
             "-" if x.relative is None else f"{x.relative:.3f}x"] for x in h.hosts]
    return head, body


def terminal(h: History) -> str:
    head, body = rows(h)
    widths = [max(len(one_line(r[i])) for r in [head, *body]) for i in range(len(head))]
    lines = [f"{h.workload}: {h.metric} ({h.unit or 'no unit'}, "
             f"{'higher' if h.better == 'higher' else 'lower'} is better) over "
             f"{len(h.points)} runs, by {h.by}; ratios are other/reference"]
    for r in [head, *body]:
        lines.append("  ".join(one_line(c).ljust(w) for c, w in zip(r, widths, strict=True)))
    said = change_sentences(h)
    lines += said or ["no change point (binary segmentation, permutation test, alpha 0.05)"]
    if h.hosts:
        lines.append("hosts compared (each build on each host; not a change over time):")
        hh, hb = host_rows(h)
        widths = [max(len(one_line(r[i])) for r in [hh, *hb]) for i in range(len(hh))]
        lines += ["  " + "  ".join(one_line(c).ljust(w) for c, w in zip(r, widths, strict=True))
                  for r in [hh, *hb]]
    lines += [f"note: {n}" for n in h.notes]
    return "".join(one_line(x).rstrip() + "\n" for x in lines)


def markdown(h: History) -> str:
    head, body = rows(h)
    out = [f"## {_esc(h.workload)}: {_esc(h.metric)} by {_esc(h.by)}", "",
           "| " + " | ".join(_esc(x) for x in head) + " |",
           "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_esc(x) for x in r) + " |" for r in body]
    out += ["", *[f"* {_esc(x)}" for x in change_sentences(h) + list(h.notes)]]
    if h.hosts:
        hh, hb = host_rows(h)
        out += ["", "Hosts compared (each build on each host; not a change over time):", "",
                "| " + " | ".join(_esc(x) for x in hh) + " |", "|" + "---|" * len(hh)]
        out += ["| " + " | ".join(_esc(x) for x in r) + " |" for r in hb]
    return "\n".join(out) + "\n"


def to_json(h: History) -> dict[str, object]:
    return {
        "format": "abibench-history", "version": 1, "workload": h.workload,
        "metric": h.metric, "unit": h.unit, "better": h.better, "by": h.by,
        "reference": h.reference, "series": list(h.series), "ratios": list(h.ratios),
        "runs": [{"run": p.run_id, "started": p.started, "axes": p.axes,
                  "values": {k: v for k, v in p.values.items() if math.isfinite(v)}, "n": p.n}
                 for p in h.points],
        "changes": [_change_json(c) for c in h.changes],
        "undecided": [_change_json(c) for c in h.undecided],
        "hosts": [{"host": x.host, "series": x.series, "build": x.build, "runs": x.runs,
                   "level": x.level, "relative": x.relative} for x in h.hosts],
        "notes": list(h.notes),
    }


def _change_json(c: Change) -> dict[str, object]:
    return {"series": c.series, "run": c.run_id, "run_index": c.run_index, "host": c.host,
            "before": c.before, "after": c.after, "relative": c.relative,
            "p_value": c.p_value}


def json_text(h: History) -> str:
    return json.dumps(to_json(h), indent=1) + "\n"


RENDERERS: dict[str, Callable[[History], str]] = {
    "terminal": terminal, "markdown": markdown, "json": json_text,
}
