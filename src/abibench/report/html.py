"""One self-contained HTML file: inline CSS, inline SVG charts, the raw samples as a data: link.

Nothing is loaded from anywhere (no JavaScript at all, no external CSS, fonts or images), so the
file opens offline and can be mailed or attached as it is. A Content-Security-Policy in the file
forbids scripts and any fetch as a second line of defence; the first is that every string from
results (workload names, program output, host names, imported files) goes through
:func:`html.escape`: markup is built with :func:`h`, which escapes every child and attribute
that is not already :class:`Html`, and the only :class:`Html` that does not come from ``h``
is a chart's SVG (report/svgplot.py, every text through its one escaping function) after
:func:`abibench.report.charts.check_svg`.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Sequence

from ..analyse.footprint import Difference
from ..analyse.report import MEMORY_NAMES, Cell, Report, WorkloadBlock
from ..analyse.results import PairVerdict
from ..analyse.sweeps import Curve, curves
from . import charts, csvout, sweepview, why
from . import formatting as fmt
from .formatting import better_words, footprint_percent, index_rows
from .htmlkit import CSP, STYLE, Html, esc, h, join
from .htmlkit import table as _table

# Re-exported: the markup builder lives in report/htmlkit.py.
__all__ = ["CSP", "STYLE", "Html", "esc", "h", "join", "render"]

# Samples embedded in the page as a CSV download; past this many the page says how to get them.
EMBED_SAMPLES_MAX = 50_000

TONE = {"invalid": "bad", "better": "pos", "worse": "neg", "unclear": "muted"}



def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "w"


class _Page:
    def __init__(self, report: Report) -> None:
        self.r = report
        self.colours = {s.label: charts.colour(i) for i, s in enumerate(report.series)}
        self.ids = {b.result.id: f"w{i}-{_slug(b.result.id)}" for i, b in
                    enumerate(report.workloads)}
        self.curves = curves(report)
        self.curve_ids = {c.base: f"s{i}-{_slug(c.base)}" for i, c in enumerate(self.curves)}
        # The summary's rows: a workload, or a whole sweep in place of its instances.
        self.sections = sweepview.sections(report)

    def swatch(self, label: str) -> Html:
        return h("span", h("span", class_="swatch", style=f"background:{self.colours.get(label)}"),
                 label, class_="sw")

    # ----------------------------------------------------------------- summary
    def verdict_badge(self, block: WorkloadBlock, c: PairVerdict) -> Html:
        res = block.result
        if res.validation == "miscompare":
            return h("span", f"INVALID (outputs differ) — {c.verdict.text}",
                     class_="badge invalid")
        if c.verdict.significant and c.verdict.winner:
            return h("span", f"{c.verdict.text}", class_="badge sig",
                     style=f"border-left-color:{self.colours.get(c.verdict.winner, '#999')}")
        return h("span", f"{c.a} vs {c.b}: {c.verdict.text}", class_="badge none")

    def summary(self) -> Html:
        r = self.r
        parts: list[object] = [h("h2", "Summary")]
        if r.legend:  # each target's short label and its provenance, once (analyse/legend.py)
            parts.append(h("ul", *[h("li", h("code", x.label), f": {x.provenance}")
                                   for x in r.legend], class_="legend"))
        for sm in r.suites:
            gm = sm.geomean
            ci = fmt.ratio(gm.value, gm.ci_low, gm.ci_high)
            parts.append(h("p", h("strong", f"Suite ({fmt.count(len(sm.workloads), 'workload')}): "),
                           f"geometric mean of {sm.a}/{sm.b} cost ratios {ci} → ",
                           h("strong" if sm.significant else "span", sm.text),
                           h("span", f" — left out (outputs differ): {', '.join(sm.excluded)}",
                             class_="bad") if sm.excluded else None))
        if not r.suites:
            parts.append(h("p", "No suite summary: no workload had two measured targets.",
                           class_="muted"))
        items = [self.verdict_item(s) for s in self.sections]
        parts += [h("h3", "Verdict per workload"), h("ul", *items, class_="verdicts")]
        parts += [h("h3", "Results at a glance"), self.glance()]
        warnings = list(r.warnings)
        for sec in self.sections:
            if isinstance(sec, Curve):  # each distinct one once, named by its value
                warnings += [f"{sec.base}: {w}" for w in sweepview.once(sec)[1]]
            else:
                warnings += [f"{sec.result.id}: {w}" for w in [*sec.result.warnings, *sec.notes]]
        if warnings:
            parts += [h("h3", "Warnings"), h("ul", *[h("li", w) for w in warnings],
                                             class_="warnings")]
        else:
            parts.append(h("p", "No warnings.", class_="muted"))
        return h("section", *parts, id="summary")

    def section_link(self, sec: WorkloadBlock | Curve) -> Html:
        """A workload's id linked to its section; a sweep's base id linked to its curve."""
        if isinstance(sec, Curve):
            return h("a", f"{sec.base} (swept over {sec.param})",
                     href=f"#{self.curve_ids[sec.base]}")
        return h("a", sec.result.id, href=f"#{self.ids[sec.result.id]}")

    @staticmethod
    def curve_note(sec: WorkloadBlock | Curve) -> list[object]:
        """Under a sweep's name: which value its row shows, and where the winner changes."""
        if not isinstance(sec, Curve):
            return []
        return [h("br"), h("span", f"at {sec.param}={sec.values[-1]}, the largest of "
                           f"{len(sec.values)}", class_="muted"),
                *[join([h("br"), h("span", line, class_="muted")])
                  for line in sweepview.headline_crossovers(sec)]]

    def verdict_item(self, sec: WorkloadBlock | Curve) -> Html:
        """One workload's verdicts; one sweep's at its largest value, with its crossovers."""
        b = sec.blocks[-1] if isinstance(sec, Curve) else sec
        res = b.result
        badges: list[object] = [self.verdict_badge(b, c) for c in res.comparisons]
        if not badges:
            missing = ", ".join(f"{row.label}: {row.state}" for row in res.rows
                                if row.n < 2) or "fewer than two measured targets"
            badges.append(h("span", f"not compared ({missing})", class_="badge missing"))
        if isinstance(sec, Curve):  # a miscompare at another value is never hidden by this one
            badges += [h("span", f"INVALID at {sec.param}={v} (outputs differ)",
                         class_="badge invalid") for v, other in zip(sec.values, sec.blocks,
                                                                     strict=True)
                       if other is not b and other.result.validation == "miscompare"]
        return h("li", self.section_link(sec), " ",
                 h("span", f"{res.primary}, {better_words(res.better)}", class_="muted"),
                 *self.curve_note(sec), h("br"), *badges)

    def glance(self) -> Html:
        """The N-way table: one row per workload, one column per target or series."""
        labels = [s.label for s in self.r.series]
        rows = []
        for sec in self.sections:
            b = sec.blocks[-1] if isinstance(sec, Curve) else sec
            res = b.result
            cells: list[object] = [join([self.section_link(sec), h("br"),
                                         h("span", f"{res.primary} ({res.unit}, "
                                                   f"{better_words(res.better)})",
                                           class_="muted"), *self.curve_note(sec)])]
            cells += [self.glance_cell(c, res.unit) for c in b.cells(labels)]
            rows.append(cells)
        head: list[object] = ["workload", *[self.swatch(lbl) for lbl in labels]]
        note = h("p", f"Median of the primary metric; below it {fmt.DIFFERENCE_NOTE} "
                      "(coloured: significant after Holm correction; grey: no significant "
                      "difference).", class_="muted")
        return join([_table(head, rows, num=set(range(1, len(labels) + 1))), note])

    @staticmethod
    def glance_cell(c: Cell, unit: str) -> object:
        if c.row is None:
            return ""
        if c.median is None:
            return h("span", c.row.shown_state, class_="muted")
        note: object = h("span", "reference", class_="muted") if c.reference else None
        if c.diff is not None:
            note = h("span", c.diff.phrase, class_=TONE[c.diff.tone])
        return join([fmt.si(c.median, unit), h("br"), note])

    # ----------------------------------------------------------------- context
    def context(self) -> Html:
        r = self.r
        heads: list[object] = ["", *[s.tag or "this run" for s in r.sets]]
        parts: list[object] = [h("h2", "Host context")]
        if r.kind == "comparison":
            parts.append(h("p", "Each result set is tagged by host and kernel bitness (k64: "
                                "64-bit kernel); a series adds the userspace ABI, e.g. "
                                "“host k64 i386” is i386 userspace on a 64-bit kernel.",
                           class_="muted"))
            parts.append(_table(["set", "source", "run", "started"],
                                [[s.tag, s.source, s.run.id, s.run.started]
                                 for s in r.sets]))
        body = [h("tr", h("th", c.label), *[h("td", v, class_="wrap") for v in c.values])
                for c in r.context]
        parts.append(h("div", h("table", h("thead", h("tr", *[h("th", x) for x in heads])),
                                 h("tbody", *body)), class_="tablewrap"))
        if r.calibration:
            cal = [h("tr", h("th", c.label), *[h("td", v, class_="wrap") for v in c.values])
                   for c in r.calibration]
            parts += [h("h3", "Noise calibration"), h("p", fmt.CALIBRATION_NOTE, class_="muted"),
                      h("div", h("table", h("thead", h("tr", *[h("th", x) for x in heads])),
                                 h("tbody", *cal)), class_="tablewrap")]
        return h("section", *parts, id="context")

    # ----------------------------------------------------------------- workloads
    def workload(self, bi: int, b: WorkloadBlock) -> Html:
        res = b.result
        figs = []
        for pi, panel in enumerate(b.panels):
            name = MEMORY_NAMES.get(panel.metric, panel.metric)
            title = f"{res.id}: {name}" + (" (primary)" if panel.primary else "")
            svg = charts.bars_svg(panel, title, self.colours, salt=f"w{bi}p{pi}")
            figs.append(h("figure", Html(svg), h("figcaption", f"{name} in {panel.unit or 'units'}"
                                                 f", {better_words(panel.better)}; bars from zero"
                                                 ", whiskers: 95% CI of the median")))
        trows = []
        for row in res.rows:
            s = row.summary
            state = row.shown_state if row.state == "ok" else f"{row.state}: {row.reason or ''}"
            cv = f"{fmt.number(abs(s.cv) * 100)}%" if s and math.isfinite(s.cv) else "-"
            if row.emulated:
                state = f"{state} (emulated; peak RSS net of the emulator {fmt.kib(row.net_rss_kb)})"
            trows.append([self.swatch(row.label), h("span", state, class_="wrap"), row.n or "-",
                          fmt.si(s.median, res.unit) if s else "-",
                          fmt.si(s.min, res.unit) if s else "-", fmt.si(s.max, res.unit) if s else "-",
                          cv, row.outliers if s else "-", fmt.kib(row.rss_kb),
                          fmt.size(row.size), fmt.size(row.text),
                          f"{row.instructions:,}" if row.instructions else "-"])
        if res.shapes:
            svg = charts.shape_svg(res.shapes, f"{res.id}: the shape of the samples", self.colours,
                                   salt=f"w{bi}shape")
            figs.append(h("figure", Html(svg), h("figcaption", "one dot per counted sample; "
                                                 "a slow tail or two modes, said in words below")))
        table = _table(["target", "state", "n", "median", "min", "max", "CV", "outliers",
                        "peak RSS", "file size", "text", "instructions"], trows,
                       num={2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
        comps = []
        for d in b.diffs:
            cls = "bad" if not d.valid else ("ok" if d.significant else "muted")
            p = f"p={fmt.number(d.p_value, '.3g')}" + (" Holm" if d.primary else "") \
                if math.isfinite(d.p_value) else "no p-value"
            comps.append(h("li", h("code", d.metric), f" {d.label}/{d.reference} ratio "
                           f"{fmt.ratio(d.ratio, d.ci_low, d.ci_high)} → ",
                           h("span", ("INVALID (outputs differ) — " if not d.valid else "")
                             + d.verdict, class_=cls), f" ({p})"))
        for c in res.memory:
            comps.append(h("li", f"{MEMORY_NAMES.get(c.metric, c.metric)} ", f"{c.a}/{c.b} ratio "
                           f"{fmt.ratio(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high)} → "
                           f"{c.verdict.text}"))
        for c in res.emulated_memory:
            comps.append(h("li", "peak RSS net of the emulator ", f"{c.a}/{c.b} ratio "
                           f"{fmt.ratio(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high)} → "
                           f"{c.verdict.text}"))
        for count in res.counts:
            comps.append(h("li", "instructions ", f"{count.a} {count.count_a:,} / {count.b} "
                           f"{count.count_b:,} = {fmt.number(count.ratio, '.3f')} → ",
                           h("strong", count.text)))
        for line in res.emulation:
            comps.append(h("li", h("span", line, class_="bad")))
        check_cls = {"miscompare": "bad", "ok": "ok"}.get(res.validation, "muted")
        label = {"miscompare": "MISCOMPARE", "ok": "identical"}.get(res.validation, "unchecked")
        lines: list[object] = [
            h("p", h("strong", res.title)),
            h("p", "Primary metric ", h("code", res.primary), f" in {res.unit or 'units'}, ",
              h("strong", better_words(res.better)),
              f"; every other target is compared with {b.reference}." if b.reference else "",
              class_="muted"),
        ]
        if b.params:
            lines.append(h("p", "parameters: ", h("code", " ".join(
                f"{k}={v}" for k, v in b.params.items())), class_="muted"))
        lines += [h("div", *figs, class_="charts"), table,
                  h("ul", *comps) if comps else h("p", "No comparison: fewer than two targets "
                                                       "were measured.", class_="muted"),
                  h("p", "output check: ", h("span", label, class_=check_cls), " — ",
                    res.validation_detail)]
        for tag, reason in b.stop:
            lines.append(h("p", f"stopped ({tag}): " if tag else "stopped: ", reason,
                           class_="muted"))
        for note in res.provenance:
            lines.append(h("p", note, class_="muted"))
        ws = [*res.warnings, *b.notes]
        if ws:
            lines.append(h("ul", *[h("li", w) for w in ws], class_="warnings"))
        return h("article", h("h3", res.id), *lines, id=self.ids[res.id])

    def workloads(self) -> Html:
        return h("section", h("h2", "Workloads"), *self.sweeps(),
                 *[self.workload(i, b) for i, b in enumerate(self.r.workloads)], id="workloads")

    def sweeps(self) -> list[Html]:
        """Each one-parameter sweep as a curve (report/sweepview.py), before its values."""
        return [h("article", h("h3", f"{c.base}: swept over {c.param}"),
                  h("figure", Html(sweepview.chart_svg(c, salt=f"s{i}")),
                    h("figcaption", f"each ABI's value over the reference's against "
                      f"{c.param}, 95% CI; 1 is no difference"), class_="curve"),
                  h("ul", *[h("li", line) for line in [*c.crossovers(), *sweepview.checks(c)]]),
                  h("p", "each value's own section: ", *[
                      x for v, b in zip(c.values, c.blocks, strict=True)
                      for x in (" · " if v != c.values[0] else "",
                                h("a", f"{c.param}={v}", href=f"#{self.ids[b.result.id]}"))],
                    class_="muted"),
                  id=self.curve_ids[c.base])
                for i, c in enumerate(self.curves)]

    # ----------------------------------------------------------------- differences
    def differences(self) -> Html:
        diffs = [d for b in self.r.workloads for d in b.diffs if math.isfinite(d.percent)]
        parts: list[object] = [h("h2", "Every test relative to the reference")]
        refs = self.r.references
        if not diffs:
            parts.append(h("p", "Nothing to compare: no workload had two measured targets.",
                           class_="muted"))
            return h("section", *parts, id="differences")
        ref = refs[0] if len(refs) == 1 else "the reference of each test"
        svg = charts.diff_svg(diffs, self.colours, ref, salt="diff")
        parts.append(h("figure", Html(svg), h("figcaption", f"difference to {ref} for every "
                                              "metric of every workload, + meaning better: "
                                              f"{fmt.DIFFERENCE_NOTE}; hatched: no significant "
                                              "difference"), class_="wide"))
        rows = []
        for d in diffs:
            cls = TONE[d.tone]
            rows.append([d.workload, join([h("code", d.metric), " (primary)" if d.primary
                                           else ""]),
                         f"{d.unit}, {better_words(d.better)}", self.swatch(d.label),
                         d.reference, h("span", d.phrase, class_=cls),
                         h("span", ("INVALID — " if not d.valid else "") + d.verdict,
                           class_=cls)])
        parts.append(_table(["workload", "metric", "unit", "target", "reference",
                             "difference [95% CI]", "verdict"], rows, num={5}))
        parts.append(h("p", "Primary metrics carry Holm-corrected p-values across the run; the "
                            "other metrics are shown with their own CI and uncorrected "
                            "p-values.", class_="muted"))
        return h("section", *parts, id="differences")

    # ----------------------------------------------------------------- why and advice
    def why(self) -> Html:
        xs = self.r.explanations
        parts: list[object] = [
            h("h2", "Why"),
            h("p", "Each comparison's time ratio is the instruction-count ratio times the "
                   "time-per-instruction ratio. Instructions come from the counted runs under "
                   "valgrind (--counters), the time and its 95% CI from the timed samples; the "
                   "words follow the rules of docs/explain.md and use only these numbers.",
              class_="muted")]
        if not xs:
            parts.append(h("p", "No comparison to explain: no workload had two measured "
                                "targets.", class_="muted"))
            return h("section", *parts, id="why")
        if any(x.instructions is not None for x in xs):
            parts.append(h("figure", Html(charts.why_svg(xs, salt="why")),
                           h("figcaption", "Stacked from 1.0 on a log axis: blue the "
                                           "instruction-count ratio, orange the "
                                           "time-per-instruction ratio; they end at the time "
                                           "ratio (diamond, 95% CI). Lower is better: left of "
                                           "1.0 the first ABI takes less."), class_="wide"))
        for x in xs:
            cls = {"instructions": "ok", "memory": "ok", "noise": "muted"}.get(x.rule, "bad")
            items: list[object] = [
                h("h3", f"{x.workload}: {x.a} vs {x.b}"),
                h("p", h("strong", x.text), " ", h("span", f"(rule: {x.rule})", class_=cls)),
                h("p", why.decomposition(x), class_="mono")]
            if x.evidence:
                items.append(_table(why.evidence_head(x), why.evidence_rows(x), num={1, 2, 3}))
            if x.functions:
                items.append(_table(why.function_head(x), why.function_rows(x),
                                    num={1, 2, 3, 4, 5}))
            if any(e.simulated for e in x.evidence):
                items.append(h("p", why.SIMULATED + ".", class_="muted"))
            parts.append(h("article", *items, class_="why"))
        return h("section", *parts, id="why")

    def advice(self) -> Html | None:
        adv = self.r.advice
        if adv is None:
            return None
        parts: list[object] = [h("h2", "Advice"),
                               h("p", why.advice_note(adv), class_="muted"),
                               _table(why.advice_head(), why.advice_rows(adv),
                                      num={2, 3, 4, 5, 6, 7, 8})]
        parts.append(h("ul", *[h("li", ln.text) for ln in adv.lines], class_="advice")
                     if adv.lines else h("p", "No advice: no workload has two measured ABIs "
                                              "that fit.", class_="muted"))
        if adv.notes:
            parts.append(h("ul", *[h("li", n) for n in adv.notes], class_="warnings"))
        return h("section", *parts, id="advice")

    # ----------------------------------------------------------------- memory and sizes
    def memory(self) -> Html:
        rows = []
        for b in self.r.workloads:
            res = b.result
            for metric, name in MEMORY_NAMES.items():
                mem = {c.a: c for c in res.memory if c.metric == metric}
                for row in res.rows:
                    if metric not in row.memory:
                        continue
                    value = row.memory[metric]
                    c = mem.get(row.label)
                    pct = "-" if c is None else f"{fmt.number(c.change_percent, '+.1f')}%"
                    rows.append([res.id, name, self.swatch(row.label), row.n or "-",
                                 fmt.kib(value),
                                 "reference" if row.label == b.reference and mem else
                                 (fmt.ratio(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high)
                                  if c else "-"), pct, c.verdict.text if c else ""])
        return h("section", h("h2", "Peak memory"),
                 h("p", "Median peak resident set size of the measured process (lower is "
                        "better), and for workloads that measure their whole process tree the "
                        "tree's peak; ratio to the reference with its 95% CI.", class_="muted"),
                 _table(["workload", "memory", "target", "n", "median", "ratio [95% CI]",
                         "change", "verdict"], rows, num={3, 4, 5, 6}), id="memory")

    # ----------------------------------------------------------------- footprint and index
    def footprint(self) -> Html | None:
        curves = self.r.footprint_series
        if not curves:
            return None
        parts: list[object] = [
            h("h2", "Memory footprint curves"),
            h("p", "Each structure built with N elements: median peak resident set size per "
                   "element (lower is better; dashed: net of the program's size before it "
                   "built anything, which dominates at small N) and time per element (lower is "
                   "better), one line per ABI; N on a log axis, y axes from zero.",
              class_="muted")]
        for si, structure in enumerate(dict.fromkeys(c.structure for c in curves)):
            mine = [c for c in curves if c.structure == structure]
            figs = [h("figure", Html(charts.curve_svg(mine, f"{structure}: memory", "bytes",
                                                      self.colours, salt=f"f{si}b")),
                      h("figcaption", "peak RSS bytes per element, lower is better")),
                    h("figure", Html(charts.curve_svg(mine, f"{structure}: time", "ns",
                                                      self.colours, salt=f"f{si}t",
                                                      small=True)),
                      h("figcaption", "ns per element, lower is better"))]
            parts += [h("h3", structure), h("div", *figs, class_="charts")]
        rows = [[d.structure, f"{d.n:,}", self.swatch(d.a), fmt.number(d.a_bytes_per_element),
                 self.swatch(d.b), fmt.number(d.b_bytes_per_element),
                 fmt.ratio(d.ratio.ratio, d.ratio.ci_low, d.ratio.ci_high),
                 h("span", footprint_percent(d), class_=_footprint_class(d))]
                for d in self.r.footprint_diffs]
        if rows:
            parts += [h("h3", "Difference at the largest N"),
                      _table(["structure", "N", "ABI", "B/element", "reference", "B/element",
                              "peak RSS ratio [95% CI]", "change [95% CI]"], rows,
                             num={1, 3, 5, 6, 7}),
                      h("p", "Peak RSS at the largest N both ABIs measured (lower is better); "
                             "negative: the ABI needs less memory than the reference.",
                        class_="muted")]
        else:
            parts.append(h("p", "No difference: no N was measured for two ABIs.",
                           class_="muted"))
        return h("section", *parts, id="footprint")

    def xbench(self) -> Html | None:
        index = self.r.index
        if index is None:
            return None
        rows = []
        for kind, name, cells in index_rows(index):
            label: object = h("strong", name) if kind != "test" else h(
                "span", Html("&nbsp;&nbsp;&nbsp;&nbsp;"), name)
            rows.append([label, *cells, "100"])
        parts: list[object] = [
            h("h2", "XBench-style index"),
            h("p", f"Every micro test scored against {index.reference} of the same run "
                   f"({index.reference} = 100, higher is better), with 95% CIs; group scores "
                   "and the total are geometric means of the test scores.", class_="muted"),
            _table(["group / test", *[self.swatch(t) for t in index.targets],
                    f"{index.reference} (reference)"], rows,
                   num=set(range(1, len(index.targets) + 2)))]
        if index.excluded:
            parts.append(h("p", "left out (outputs differ between ABIs): "
                                + ", ".join(index.excluded), class_="bad"))
        return h("section", *parts, id="xbench")

    def sizes(self) -> Html:
        rows = []
        for b in self.r.workloads:
            res = b.result
            for row in res.rows:
                # against the 64-bit ABI of its own family: armhf against aarch64
                vs = (f"{row.size_reference} {fmt.number(row.size_larger_pct, '+.1f')}% larger"
                      if row.size_larger_pct is not None
                      else ("reference" if row.label == row.size_reference else "-"))
                rows.append([res.id, self.swatch(row.label), fmt.size(row.size),
                             fmt.size(row.text), fmt.size(row.data), fmt.size(row.bss),
                             fmt.size(row.stripped), vs])
        return h("section", h("h2", "Sizes"),
                 h("p", "Sizes of each workload's main binary (smaller is better): file, its "
                        "text/data/bss segments, and the file stripped.", class_="muted"),
                 _table(["workload", "target", "file", "text", "data", "bss", "stripped",
                         "64-bit larger"], rows, num={2, 3, 4, 5, 6, 7}),
                 *(h("p", n, class_="muted") for n in dict.fromkeys(
                     n for s in self.r.sets for n in s.size_notes)), id="sizes")

    # ----------------------------------------------------------------- provenance, samples
    def provenance(self) -> Html:
        parts: list[object] = [h("h2", "Provenance"),
                               h("p", "How every measured binary was obtained: source version, "
                                      "compiler, exact commands, effective target options, "
                                      "ELF facts and, for Debian binaries, the sysroot "
                                      "packages.", class_="muted")]
        for entry in self.r.provenance:
            summary = f"{entry.workload} · {entry.series}"
            first = next((v for k, v in entry.rows if k == "compiler"), "")
            parts.append(h("details", h("summary", h("strong", summary), " ",
                                        h("span", first, class_="muted")),
                           _table(["", ""], [[k, h("span", v, class_="mono")]
                                             for k, v in entry.rows])))
        if len(parts) == 2:
            parts.append(h("p", "No artifacts were recorded.", class_="muted"))
        return h("section", *parts, id="provenance")

    def samples(self) -> Html:
        r = self.r
        name = _slug(" ".join(s.run.id for s in r.sets)) + "-samples.csv"
        c = r.counts
        if len(r.samples) > EMBED_SAMPLES_MAX:
            # A page of a hundred megabytes opens in no browser: the samples stay in the store.
            ids = " ".join(s.run.id for s in r.sets)
            link = h("p", f"{c.total} samples are more than this page embeds "
                          f"({EMBED_SAMPLES_MAX:,}): `abibench report {ids} --samples-csv "
                          f"{name}` writes them all.", class_="muted")
        else:
            data = csvout.render_samples(r)
            href = ("data:text/csv;charset=utf-8;base64,"
                    + base64.b64encode(data.encode()).decode())
            link = h("p", h("a", f"download {name}", href=href, download=name,
                            class_="download"))
        preview_cols = ["series", "workload", "round", "position", "warmup", "status", "wall_s",
                        "max_rss_kb"]
        preview = [[_cell(row.to_dict().get(col)) for col in preview_cols]
                   for row in r.samples[:15]]
        return h("section", h("h2", "Raw samples"),
                 h("p", f"{c.total} samples: {c.counted} counted, {c.warmup} warm-up, {c.failed} "
                        "not ok. Every value of every sample, including warm-ups, as CSV:"),
                 link,
                 h("details", h("summary", "first rows"),
                   _table(preview_cols, [list(p) for p in preview], num={2, 3, 6, 7})),
                 id="samples")

    def render(self, csp: bool, extra: Sequence[Html] = ()) -> str:
        r = self.r
        sources = "; ".join(f"{s.tag + ': ' if s.tag else ''}{s.source}" for s in r.sets)
        index, curves, advice = self.xbench(), self.footprint(), self.advice()
        nav = h("nav", *[h("a", t, href=f"#{i}") for i, t, shown in (
            ("summary", "Summary", True), ("context", "Host", True),
            ("workloads", "Workloads", True), ("why", "Why", True),
            ("advice", "Advice", advice is not None), ("differences", "Differences", True),
            ("xbench", "Index", index is not None), ("memory", "Memory", True),
            ("footprint", "Footprint", curves is not None), ("sizes", "Sizes", True),
            ("provenance", "Provenance", True), ("samples", "Samples", True)) if shown])
        head = join([
            h("meta", charset="utf-8"),
            h("meta", name="viewport", content="width=device-width, initial-scale=1"),
            h("meta", http_equiv="Content-Security-Policy", content=CSP) if csp else None,
            h("meta", name="referrer", content="no-referrer"),
            h("meta", name="generator", content=f"abibench {r.tool_version}"),
            h("title", r.title), h("style", Html(STYLE))])
        body = join([
            h("header", h("h1", r.title),
              h("p", f"{sources} · generated {r.generated} by abibench {r.tool_version}"), nav),
            h("main", self.summary(), *extra, self.context(), self.workloads(), self.why(), advice,
              self.differences(),
              index, self.memory(), curves, self.sizes(), self.provenance(), self.samples(),
              h("footer", "Self-contained report: no scripts, no external resources. Bars "
                          "start at zero; whiskers are 95% bootstrap confidence intervals."))])
        return "<!DOCTYPE html>\n" + h("html", h("head", head), h("body", body), lang="en") + "\n"


def _footprint_class(d: Difference) -> str:
    """Coloured only when the CI excludes no change: green when the ABI needs less memory."""
    if not d.significant:
        return "muted"
    return "pos" if d.percent < 0 else "neg"


def _cell(value: object) -> str:
    if isinstance(value, float):
        return fmt.number(value, ".4g")
    return "" if value is None else str(value)


def render(report: Report, csp: bool = True, extra: Sequence[Html] = ()) -> str:
    """The whole report as one HTML document (``csp=False`` only for tests of the escaping);
    ``extra``: sections after the summary (report/baselinehtml.py: the run against a baseline)."""
    return _Page(report).render(csp, extra)
