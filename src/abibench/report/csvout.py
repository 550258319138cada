"""CSV exports: the report's results (one row per workload, metric and target) and raw samples.

Cells that hold text from results are guarded against spreadsheet formula injection: a string
starting with = + - @ or a control character that is not simply a number gets a leading '
(OWASP's advice), so `=HYPERLINK(...)` in a workload name stays text in a spreadsheet.
"""

from __future__ import annotations

import csv
import io
import math
import operator

from ..analyse.report import Report, SampleRow, metric_names
from ..records import MEMORY_METRICS

RESULT_COLUMNS = (
    "set", "host", "kernel_bits", "series", "target", "abi", "workload", "title", "metric",
    "unit", "better", "primary", "state", "n", "median", "median_ci_low", "median_ci_high",
    "mean", "stdev", "min", "max", "outliers", "reference", "ratio", "ratio_ci_low",
    "ratio_ci_high", "p_value", "p_adjustment", "percent_better", "percent_low", "percent_high",
    "significant", "verdict", "validation", "validation_detail", "peak_rss_kb", "file_bytes", "text_bytes",
    "data_bytes", "bss_bytes", "stripped_bytes")

SAMPLE_COLUMNS = (
    "set", "run_id", "host", "kernel_bits", "workload", "series", "target", "round", "position",
    "warmup", "kind", "status", "exit_code", "wall_s", "user_s", "sys_s", "max_rss_kb",
    "instructions", "env_pad", "started_at", "check", "stdout_digest", "error")

_RISKY = ("=", "+", "-", "@", "\t", "\r", "\n")


def cell(value: object) -> str:
    kind = type(value)
    if kind is str and not value.startswith(_RISKY):  # type: ignore[attr-defined]
        return value  # type: ignore[return-value]  # most cells: asked first
    if kind is int:
        return str(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if not math.isfinite(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if text.startswith(_RISKY):
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


def _write(columns: tuple[str, ...] | list[str], rows: list[dict[str, object]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow([cell(row.get(c)) for c in columns])
    return buf.getvalue()


def result_rows(report: Report) -> list[dict[str, object]]:
    series = {s.label: s for s in report.series}
    out: list[dict[str, object]] = []
    for b in report.workloads:
        res = b.result
        rows = {r.label: r for r in res.rows}
        for panel in b.panels:
            for bar in panel.bars:
                s = series.get(bar.label)
                r = rows.get(bar.label)
                row: dict[str, object] = {
                    "set": s.tag if s else "", "host": s.host if s else "",
                    "kernel_bits": s.kernel_bits if s else None, "series": bar.label,
                    "target": s.target if s else bar.label, "abi": s.abi if s else "",
                    "workload": res.id, "title": res.title, "metric": panel.metric,
                    "unit": panel.unit, "better": panel.better, "primary": panel.primary,
                    "state": bar.state, "n": bar.n, "median": bar.median,
                    "median_ci_low": bar.low, "median_ci_high": bar.high,
                    "reference": b.reference, "validation": res.validation,
                    "validation_detail": res.validation_detail}
                if r is not None:
                    row.update(peak_rss_kb=r.rss_kb, file_bytes=r.size, text_bytes=r.text,
                               data_bytes=r.data, bss_bytes=r.bss, stripped_bytes=r.stripped)
                    if panel.primary and r.summary is not None:
                        row.update(mean=r.summary.mean, stdev=r.summary.stdev,
                                   min=r.summary.min, max=r.summary.max, outliers=r.outliers)
                d = next((d for d in b.diffs if d.metric == panel.metric
                          and d.label == bar.label), None)
                if d is not None:
                    row.update(ratio=d.ratio, ratio_ci_low=d.ci_low, ratio_ci_high=d.ci_high,
                               p_value=d.p_value, p_adjustment="holm" if d.primary else "none",
                               percent_better=d.percent, percent_low=d.pct_low,
                               percent_high=d.pct_high, significant=d.significant,
                               verdict=d.verdict)
                if panel.metric in MEMORY_METRICS:
                    c = next((c for c in res.memory if c.a == bar.label
                              and c.metric == panel.metric), None)
                    if c is not None:
                        row.update(ratio=c.ratio.ratio, ratio_ci_low=c.ratio.ci_low,
                                   ratio_ci_high=c.ratio.ci_high, p_value=c.ratio.p_value,
                                   p_adjustment="none", significant=c.verdict.significant,
                                   verdict=c.verdict.text)
                out.append(row)
    return out


def render(report: Report) -> str:
    """The results: one row per workload, metric and target."""
    return _write(RESULT_COLUMNS, result_rows(report))


def render_samples(report: Report) -> str:
    """Every stored sample, one row each, with a column per metric."""
    metrics = metric_names(report.samples)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*SAMPLE_COLUMNS, *(f"metric:{m}" for m in metrics)])
    for r in report.samples:  # one row at a time from the records: 10^6 of them in a large run
        w.writerow(_fast_cells(r, metrics))
    return buf.getvalue()


# A samples row's own columns (its tag and series); the others, run_id too, are the sample's.
_OWN = ("set", "host", "kernel_bits", "series")
_FROM_SAMPLE = operator.attrgetter(*(c for c in SAMPLE_COLUMNS if c not in _OWN))


def _sample_cells(r: SampleRow, metrics: list[str]) -> list[str]:
    own = {"set": r.set, "host": r.host, "kernel_bits": r.kernel_bits, "series": r.series}
    theirs = iter(_FROM_SAMPLE(r.sample))
    values = [own[c] if c in own else next(theirs) for c in SAMPLE_COLUMNS]
    got = r.sample.metrics
    return [cell(v) for v in values] + [cell(got.get(m)) for m in metrics]



_PASS = (int, type(None))  # csv writes these as cell() does: str(int), and "" for None
_THEIRS = [c for c in SAMPLE_COLUMNS if c not in _OWN]
# the row's columns from its own values and then the sample's, in one call
_IN_ORDER = operator.itemgetter(*(_OWN.index(c) if c in _OWN else len(_OWN) + _THEIRS.index(c)
                                  for c in SAMPLE_COLUMNS))


def _fast_cells(r: SampleRow, metrics: list[str]) -> list[object]:
    """`_sample_cells(r, metrics)` with only the values that need it through `cell` (a text
    that may start a formula, a boolean, a float that may not be finite): a whole number or
    None is written by the csv module itself as `cell` writes it (a bool is an int, but its
    type is not in _PASS). tests/report/test_sample_lines.py holds the two equal on generated
    rows."""
    values = _IN_ORDER((r.set, r.host, r.kernel_bits, r.series, *_FROM_SAMPLE(r.sample)))
    got = r.sample.metrics
    return [v if type(v) in _PASS else cell(v)
            for v in (*values, *(got.get(m) for m in metrics))]
