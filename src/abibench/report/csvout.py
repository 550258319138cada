"""CSV exports: the report's results (one row per workload, metric and target) and raw samples.

Cells that hold text from results are guarded against spreadsheet formula injection: a string
starting with = + - @ or a control character that is not simply a number gets a leading '
(OWASP's advice), so `=HYPERLINK(...)` in a workload name stays text in a spreadsheet.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import operator
from collections.abc import Iterator, Sequence
from typing import Any

from ..analyse.report import CleanRows, Report, SampleRow, metric_names
from ..records import MEMORY_METRICS
from ..store.rowstream import FIELD_NAMES, Columns, make_sample
from ..text import needs_clean
from . import samplerows
from .samplerows import Group, cleaned_row

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
assert all(len(p) == 1 for p in _RISKY)  # _cells tests a column's first characters


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
    return "".join(samples_chunks(report))




def samples_chunks(report: Report) -> Iterator[str]:
    """`render_samples` in pieces, for a file written as it is made (10^6 rows are 250 MB)."""
    rows = report.samples
    groups = rows.uncleaned_parts() if isinstance(rows, CleanRows) else None
    metrics = metric_names(rows) if groups is None else samplerows.metric_names(groups)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*SAMPLE_COLUMNS, *(f"metric:{m}" for m in metrics)])
    yield buf.getvalue()
    if groups is not None:  # a report's own rows: written by columns, cleaned where needed
        yield from csv_batches(groups, metrics)
        return
    for start in range(0, len(rows), samplerows.BATCH):
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        for r in rows[start:start + samplerows.BATCH]:  # each row cleaned as it is read (CleanRows)
            w.writerow(_fast_cells(r, metrics))
        yield buf.getvalue()


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
    return [_fast_cell(v) for v in (*values, *(got.get(m) for m in metrics))]


def _fast_cell(v: object) -> object:
    return v if type(v) in _PASS else cell(v)


_INTS = frozenset({int, type(None)})
_TEXTS = frozenset({str, type(None)})
_FLOATS = frozenset({float, type(None)})
_first = operator.itemgetter(slice(0, 1))  # a text's first character ("" for "")
_BOOLS = {True: "true", False: "false"}  # cell() of a boolean


def _cells(col: Sequence[Any]) -> Sequence[Any] | Iterator[Any]:
    """`map(_fast_cell, col)`, a column passed as it is when the csv module writes each of its
    values as `cell` does: whole numbers and None, texts that cannot start a formula (each
    prefix in _RISKY is one character), finite floats (csv writes a float's repr)."""
    kinds = set(map(type, col))
    if kinds <= _INTS:
        return col
    if kinds <= _TEXTS and set(map(_first, filter(None, col))).isdisjoint(_RISKY):
        return col
    if kinds <= _FLOATS and all(map(math.isfinite, filter(None, col))):
        return col
    if kinds == {bool}:
        return map(_BOOLS.__getitem__, col)
    return map(_fast_cell, col)


# Where each CSV column comes from: the row's own values (0-3) or the sample's field (4 + i).
_CSV_FROM = [(_OWN.index(c), -1) if c in _OWN else (-1, FIELD_NAMES.index(c))
             for c in SAMPLE_COLUMNS]


def _cell_columns(group: Group, cols: Columns, metrics: list[str]) -> list[Any]:
    """The batch's CSV columns as cells (`_fast_cells`' values, column by column)."""
    tag, _, host, bits, labels, _ = group
    own = (_fast_cell(tag), _fast_cell(host), _fast_cell(bits))
    targets = cols[samplerows.TARGET]
    series = {t: _fast_cell(labels.get(t, t)) for t in set(targets)}
    n = len(targets)
    out: list[Any] = []
    for mine, field in _CSV_FROM:
        if mine == 3:
            out.append(tuple(map(series.__getitem__, targets)))
        elif mine >= 0:
            out.append((own[mine],) * n)
        else:
            out.append(_cells(cols[field]))
    got = cols[samplerows.METRICS]
    return out + [_cells(tuple(map(dict.get, got, itertools.repeat(m)))) for m in metrics]


def _odd_rows(cols: Columns, names: frozenset[str]) -> list[int]:
    """The rows with a metric name that cleaning changes (not a column): the general way."""
    got = cols[samplerows.METRICS]
    if all(map(names.issuperset, got)):
        return []
    return [i for i, d in enumerate(got) if not names.issuperset(d)]


def _csv_rows(group: Group, cols: Columns, metrics: list[str],
              names: frozenset[str]) -> list[Any]:
    """The batch's rows as cells (`_fast_cells`'), uncleaned; a row whose metric names
    cleaning changes, the general way."""
    rows: list[Any] = list(zip(*_cell_columns(group, cols, metrics), strict=True))
    for i in _odd_rows(cols, names):
        rows[i] = _general_cells(group, cols, i, metrics)
    return rows


# A cell's text as the csv module writes it (a float by its repr, None as nothing), when it
# needs no quotes: no delimiter, quote or line break in it.
_TEXT_OF: dict[type, Any] = {str: str, int: int.__repr__, float: float.__repr__,
                             type(None): {None: ""}.__getitem__}
_QUOTED = (",", '"', "\r", "\n")


def _csv_column(col: Sequence[Any]) -> str | Iterator[str] | None:
    """A column of cells as the csv module writes each, or the one text of all when they are
    equal; None: a cell it would quote, or a value of another type (the csv module writes it)."""
    kinds = set(map(type, col))
    if not kinds <= _TEXT_OF.keys():
        return None
    if str in kinds:
        texts = "".join(col if len(kinds) == 1 else [v for v in col if type(v) is str])
        if any(map(texts.__contains__, _QUOTED)):
            return None
    if len(kinds) == 1:
        kind = kinds.pop()
        if kind is not float and len(set(col)) == 1:  # (floats: -0.0 == 0.0, written apart)
            return str(_TEXT_OF[kind](col[0]))
        return map(_TEXT_OF[kind], col)
    return map(operator.call, map(_TEXT_OF.__getitem__, map(type, col)), col)


def _csv_lines(group: Group, cols: Columns, metrics: list[str],
               names: frozenset[str]) -> str | None:
    """`_csv_text(_csv_rows(...))` without the csv module: a template holding the columns
    that are the same in every row and a `%s` for each other, filled from the columns zipped;
    None when a cell needs quotes (the csv module writes that batch)."""
    parts: list[str] = []
    args: list[Iterator[str]] = []
    for col in _cell_columns(group, cols, metrics):
        text = _csv_column(col if isinstance(col, tuple | list) else tuple(col))
        if text is None:
            return None
        if isinstance(text, str):
            parts.append(text.replace("%", "%%"))
        else:
            parts.append("%s")
            args.append(text)
    template = ",".join(parts)
    lines = (list(map(template.__mod__, zip(*args, strict=True))) if args
             else [template % ()] * len(cols[0]))
    for i in _odd_rows(cols, names):
        lines[i] = _csv_text([_general_cells(group, cols, i, metrics)])[:-1]
    return "\n".join(lines) + "\n"


def _general_cells(group: Group, cols: Columns, i: int, metrics: list[str]) -> list[object]:
    return _fast_cells(cleaned_row(group, make_sample(samplerows.row_values(cols, i))), metrics)


def csv_batches(groups: Sequence[Group], metrics: list[str]) -> Iterator[str]:
    """Each batch of the samples CSV's rows as the cleaned rows' would read (`metrics`: the
    cleaned metric names, the CSV's columns)."""
    names = frozenset(metrics)
    for group in groups:
        for cols in samplerows.columns_of(group[5], samplerows.BATCH):
            text = _csv_lines(group, cols, metrics, names)
            if text is None:
                text = _csv_text(_csv_rows(group, cols, metrics, names))
            if needs_clean(text):  # something to clean: the batch the general way
                text = _csv_text([_general_cells(group, cols, i, metrics)
                                  for i in range(len(cols[0]))])
            yield text


def _csv_text(rows: list[Any]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()
