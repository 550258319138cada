"""Everything a report says, computed once: the renderers in report/ only format it.

A report is built from one run (``from_run``) or from several result sets merged into one N-way
comparison (``from_sets``, see :mod:`abibench.analyse.merge`). Either way the per-workload
statistics come from :func:`abibench.analyse.results.analyse`; this module adds what the reports
show beyond them: every metric of a workload (not only the primary one) compared with the
reference, the per-target bars of the charts (median with its 95% CI from two order statistics), the suite
geometric mean, the footprint curves, the XBench-style index, sizes, host context and
provenance.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import overload

from .. import __version__, stats
from ..errors import UsageError
from ..records import (
    BUILTIN_METRICS,
    MEMORY_METRICS,
    MEMORY_NAMES,
    Artifact,
    Better,
    HostContext,
    JSONDict,
    Run,
    RunDoc,
    Sample,
    better_of,
    pick_reference,
    short_labels,
)
from ..text import clean, clean_all
from . import footprint, xbench
from .advise import Advice, Deployment, advise
from .context import ContextRow, calibration_rows, context_rows, provenance_rows
from .explain import Explanation, explain
from .foreign import withheld
from .legend import LegendEntry, legend, relabeled, targets_of
from .merge import ResultSet, Series, merge, single_series
from .results import (
    PRIMARY_WORDS,
    SuiteSummary,
    TargetRow,
    WorkloadResult,
    analyse,
    suite_summary,
)
from .sizes import SizeRow, size_notes, size_rows


@dataclass(frozen=True)
class SetInfo:
    tag: str
    source: str
    run: Run
    host: HostContext
    artifacts: tuple[Artifact, ...]
    sizes: tuple[SizeRow, ...]  # seed 000's size factor, per artifact and target
    size_notes: tuple[str, ...] = ()  # how to read them (e.g. aarch64's 64 KiB alignment)


@dataclass(frozen=True)
class Bar:
    """One target's median of one metric with the 95% CI of that median (stats.median_ci)."""

    label: str
    state: str
    n: int
    median: float
    low: float
    high: float


@dataclass(frozen=True)
class Panel:
    metric: str
    unit: str
    better: Better
    primary: bool
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Diff:
    """One metric of one series relative to the reference, in the metric's better direction.

    ``percent`` > 0 means ``label`` is better than the reference by that much: for "higher is
    better" (ratio - 1), for "lower is better" (1 / ratio - 1), both times 100; the CI bounds are
    transformed the same way. Primary metrics carry the Holm-adjusted p-value of the run; the
    other metrics their own p-value, unadjusted.
    """

    workload: str
    metric: str
    unit: str
    better: Better
    primary: bool
    label: str
    reference: str
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    percent: float
    pct_low: float
    pct_high: float
    significant: bool
    verdict: str
    valid: bool
    # The difference in words from ``label``'s side, the one way every report states it
    # (stats.difference): "31.6% slower [28.0%, 35.1%]", "15.9× faster [...]", "25.0% smaller".
    phrase: str = ""

    @property
    def headline(self) -> str:
        """The phrase without its CI: "31.6% slower", "15.9× faster" (a chart's bar label)."""
        return self.phrase.split(" [", 1)[0]

    @property
    def tone(self) -> str:
        """What a renderer's colour says: invalid, better, worse or unclear (not significant)."""
        if not self.valid:
            return "invalid"
        if not self.significant:
            return "unclear"
        return "better" if self.percent > 0 else "worse"


@dataclass(frozen=True)
class ProvenanceEntry:
    """How one artifact was made, as (label, text) rows, for one series."""

    workload: str
    series: str
    rows: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SampleRow:
    """One stored sample, tagged with its result set and series."""

    set: str
    run_id: str
    host: str | None
    kernel_bits: int | None
    series: str
    sample: Sample

    def to_dict(self) -> JSONDict:
        return {"set": self.set, "run_id": self.run_id, "host": self.host,
                "kernel_bits": self.kernel_bits, "series": self.series, **self.sample.to_dict()}


class CleanRows(Sequence[SampleRow]):
    """A report's samples, each cleaned (`text.clean_all`) as it is read. A run holds up to
    millions of them and most views (the terminal's, explain, advise, the results CSV) never
    read one: the walk of the Report passes this by (an object of its own kind) and every row a
    renderer reads is cleaned on the way out, by construction, as the rest of the report was."""

    def __init__(self, rows: Sequence[SampleRow]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> SampleRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[SampleRow]: ...

    def __getitem__(self, index: int | slice) -> SampleRow | list[SampleRow]:
        if isinstance(index, slice):
            return [clean_all(r) for r in self._rows[index]]
        return clean_all(self._rows[index])

    def __iter__(self) -> Iterator[SampleRow]:
        return map(clean_all, self._rows)

    def uncleaned_parts(self) -> list[tuple[str, str, str | None, int | None,
                                            dict[str, str], Sequence[Sample]]] | None:
        """Each result set's rows as (tag, run id, host, kernel bits, target -> series label,
        samples), not cleaned, or None when the rows are not a report's own. Only for a writer
        that cleans what it writes (report/samplerows.py: each batch searched once by
        text.needs_clean, and written again from cleaned rows when anything needs it)."""
        if not isinstance(self._rows, SetRows):
            return None
        return [(p.tag, p.run_id, p.host, p.kernel_bits, p.labels, p.samples)
                for p in self._rows.parts()]

    def metric_names(self) -> list[str]:
        """Every metric any sample holds, cleaned, sorted (without cleaning each row)."""
        samples = (self._rows.samples() if isinstance(self._rows, SetRows)
                   else (r.sample for r in self._rows))
        names: set[str] = set()
        for s in samples:  # each sample's names added in C; each name cleaned once, not 10^6 times
            names.update(s.metrics)
        return sorted({clean(m) for m in names})


@dataclass(frozen=True)
class _Part:
    """One result set's samples and what each of its rows says beside the sample."""

    tag: str
    run_id: str
    host: str | None
    kernel_bits: int | None
    labels: dict[str, str]  # stored target -> series label
    samples: Sequence[Sample]

    def row(self, s: Sample) -> SampleRow:
        return SampleRow(self.tag, self.run_id, self.host, self.kernel_bits,
                         self.labels.get(s.target, s.target), s)


class SetRows(Sequence[SampleRow]):
    """The sample rows of result sets, each made when it is read: a report of 10^6 samples
    that no view reads row by row (the terminal's, explain, advise, the summary formats) never
    makes one (they were 2 us each, a tenth of such a report)."""

    def __init__(self, parts: list[_Part]) -> None:
        self._parts = parts
        self._starts = list(itertools.accumulate((len(p.samples) for p in parts), initial=0))

    def __len__(self) -> int:
        return self._starts[-1]

    @overload
    def __getitem__(self, index: int) -> SampleRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[SampleRow]: ...

    def __getitem__(self, index: int | slice) -> SampleRow | list[SampleRow]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = index + len(self) if index < 0 else index
        if not 0 <= i < len(self):
            raise IndexError(index)
        k = bisect.bisect_right(self._starts, i) - 1
        part = self._parts[k]
        return part.row(part.samples[i - self._starts[k]])

    def __iter__(self) -> Iterator[SampleRow]:
        for part in self._parts:
            yield from map(part.row, part.samples)

    def parts(self) -> list[_Part]:
        return list(self._parts)

    def samples(self) -> Iterator[Sample]:
        for part in self._parts:
            yield from part.samples


def metric_names(rows: Sequence[SampleRow]) -> list[str]:
    """The metrics of a report's samples, sorted: the columns of the samples CSV."""
    if isinstance(rows, CleanRows):
        return rows.metric_names()
    return sorted({m for r in rows for m in r.sample.metrics})


@dataclass(frozen=True)
class SampleCounts:
    total: int
    counted: int
    warmup: int
    failed: int


@dataclass(frozen=True)
class Cell:
    """One series of one workload in the at-a-glance table."""

    label: str
    row: TargetRow | None  # None: this series did not take part in the workload
    diff: Diff | None  # the primary metric against the reference
    reference: bool

    @property
    def median(self) -> float | None:
        return self.row.summary.median if self.row and self.row.summary else None


@dataclass
class WorkloadBlock:
    result: WorkloadResult
    reference: str | None
    params: JSONDict
    panels: list[Panel]
    diffs: list[Diff]
    notes: list[str] = field(default_factory=list)  # stored warnings about this workload
    stop: list[tuple[str, str]] = field(default_factory=list)  # (set tag, stop reason)

    def primary_diff(self, label: str) -> Diff | None:
        return next((d for d in self.diffs if d.primary and d.label == label), None)

    def cells(self, labels: list[str]) -> list[Cell]:
        """One cell per series label, in that order."""
        rows = {r.label: r for r in self.result.rows}
        return [Cell(lbl, rows.get(lbl), self.primary_diff(lbl), lbl == self.reference)
                for lbl in labels]


@dataclass(frozen=True)
class Report:
    """Everything every renderer shows. Frozen, and cleaned as it is made (``__post_init__``):
    every string in it, however deep and whatever its source (profile titles, ids, units, metric
    names, labels, tags, program output, imported fields, host values, reasons, warnings), has
    passed :func:`abibench.text.clean`, so that a renderer only escapes for its own syntax."""

    kind: str  # run | comparison
    title: str
    heading: str  # the first line of the terminal view
    sets: list[SetInfo]
    series: list[Series]
    workloads: list[WorkloadBlock]
    suites: list[SuiteSummary]
    warnings: list[str]
    samples: Sequence[SampleRow]  # a CleanRows when made here
    counts: SampleCounts
    context: list[ContextRow]
    provenance: list[ProvenanceEntry]
    generated: str = ""
    tool_version: str = __version__
    # Footprint curves and the XBench-style index: a single run's only (empty in comparisons).
    footprint_series: list[footprint.Series] = field(default_factory=list)
    footprint_diffs: list[footprint.Difference] = field(default_factory=list)
    index: xbench.Index | None = None  # None unless at least two micro workloads were scored
    # Why each comparison came out as it did (analyse/explain.py), and the deployment advice
    # when a memory budget was given (analyse/advise.py).
    explanations: list[Explanation] = field(default_factory=list)
    advice: Advice | None = None
    # The noise calibration: what it measured, the design it chose per workload and why.
    calibration: list[ContextRow] = field(default_factory=list)
    # Each target's shown label and where its programs came from (analyse/legend.py).
    legend: list[LegendEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The one place untrusted text is cleaned for every format (issue 26): the walk covers
        # every field, so a field added later cannot reach a renderer raw.
        for f in fields(self):
            object.__setattr__(self, f.name, clean_all(getattr(self, f.name)))

    def explanations_of(self, workload: str) -> list[Explanation]:
        return [x for x in self.explanations if x.workload == workload]

    def series_index(self, label: str) -> int:
        for i, s in enumerate(self.series):
            if s.label == label:
                return i
        return len(self.series)

    @property
    def references(self) -> list[str]:
        refs: list[str] = []
        for b in self.workloads:
            if b.reference and b.reference not in refs:
                refs.append(b.reference)
        return refs


# --------------------------------------------------------------------------- verdict words


__all__ = ["MEMORY_NAMES"]  # how reports name the built-in memory metrics (records' registry)

MEMORY_UNITS = ("B", "bytes", "KiB", "MiB", "GiB", "kB", "KB", "MB", "GB")
TIME_UNITS = ("s", "ms", "us", "µs", "ns", "cycles")


def verdict_words(unit: str, better: str) -> tuple[str, str]:
    """How a verdict names the winner's advantage for a metric of this unit."""
    if unit in MEMORY_UNITS:
        return ("smaller", "larger") if better == "lower" else ("larger", "smaller")
    if unit in TIME_UNITS or (better == "higher" and "/s" in unit):
        return ("faster", "slower")
    return ("better", "worse")


def _secondary_diff(doc: RunDoc, wid: str, metric: str, unit: str, better: Better,
                    label: str, ref: str, valid: bool) -> Diff | str | None:
    """The comparison of one secondary metric; the reason as a string when it has no ratio."""
    pair = doc.paired(wid, metric, label, ref)
    if len(pair.a) < 2 or len(pair.b) < 2:
        return None
    try:
        r = stats.ratio_of(pair.a, pair.b, paired=pair.paired, name_a=label, name_b=ref,
                           covariate=pair.covariate)
    except ValueError as exc:
        return f"{metric}: {exc}"
    words = verdict_words(unit, better)
    reduction = words[0] == "smaller"
    v = stats.verdict(r, better=better, name_a=label, name_b=ref, words=words,
                      as_reduction=reduction)
    pct = stats.percent_better(r.ratio, r.ci_low, r.ci_high, better, reduction=reduction)
    return Diff(wid, metric, unit, better, False, label, ref, r.ratio, r.ci_low, r.ci_high,
                r.p_value, *pct, v.significant, v.text, valid,
                stats.difference(*pct, words, reduction))


# --------------------------------------------------------------------------- building


def _block(res: WorkloadResult, doc: RunDoc, reference: str | None) -> WorkloadBlock:
    meta = doc.workloads[res.id]
    valid = res.validation != "miscompare"
    order = [res.primary] + [m for m in meta.metrics
                             if m != res.primary and m not in BUILTIN_METRICS]
    panels: list[Panel] = []
    for metric in [*order, *doc.measured_memory(res.id)]:
        info = meta.metric(metric)
        better = better_of("lower" if metric in MEMORY_METRICS else info.better)
        bars = []
        for row in res.rows:
            vals = list(filter(math.isfinite, doc.values(res.id, row.label, metric)))
            if vals:
                lo, hi = stats.median_ci(vals)
                bars.append(Bar(row.label, row.state, len(vals), stats.median(vals), lo, hi))
            else:
                bars.append(Bar(row.label, row.shown_state, 0, math.nan, math.nan, math.nan))
        panels.append(Panel(metric, info.unit, better, metric == res.primary, tuple(bars)))

    diffs: list[Diff] = []
    for c in res.comparisons:
        pct = stats.percent_better(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high, res.better)
        diffs.append(Diff(res.id, res.primary, res.unit, res.better, True, c.a, c.b,
                          c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high, c.p_adjusted, *pct,
                          c.verdict.significant, c.verdict.text, valid,
                          stats.difference(*pct, PRIMARY_WORDS)))
    if reference is not None:
        for metric in order[1:]:
            info = meta.metrics[metric]
            for row in res.rows:
                # No emulated figure is compared: it measures the emulator (analyse()).
                if row.label == reference or row.emulated:
                    continue
                d = _secondary_diff(doc, res.id, metric, info.unit, info.better, row.label,
                                    reference, valid)
                if isinstance(d, str):
                    res.warnings.append(d)
                elif d is not None:
                    diffs.append(d)
    return WorkloadBlock(res, reference, dict(meta.params), panels, diffs)


def _reference_of(res: WorkloadResult) -> str | None:
    if res.comparisons:
        return res.comparisons[0].b
    measured = [r.label for r in res.rows if r.n >= 2 and not r.emulated]
    return pick_reference(measured) if measured else None


def _set_info(rs: ResultSet) -> SetInfo:
    doc = rs.doc
    foreign = {(wid, target) for wid in doc.workloads for target in withheld(doc, wid)}
    rows = size_rows(doc.artifacts, doc.statuses, foreign)
    return SetInfo(rs.tag, rs.source, doc.run, doc.host, doc.artifacts, tuple(rows),
                   tuple(size_notes(rows)))


def _sample_rows(sets: list[ResultSet], series: list[Series]) -> SetRows:
    labels = [{s.target: s.label for s in series if s.set_index == i} for i in range(len(sets))]
    return SetRows([_Part(rs.tag, rs.doc.run.id, rs.doc.host.hostname, rs.doc.host.kernel_bits,
                          labels[i], rs.doc.samples) for i, rs in enumerate(sets)])




def _counts(sets: list[ResultSet]) -> SampleCounts:
    """How many samples the sets hold, count, warm up and failed (each a pass in C)."""
    docs = [rs.doc for rs in sets]
    return SampleCounts(total=sum(len(d.samples) for d in docs),
                        counted=sum(d.n_counted() for d in docs),
                        warmup=sum(d.n_warmup() for d in docs),
                        failed=sum(d.n_failed() for d in docs))


def _provenance(sets: list[SetInfo], series: list[Series]) -> list[ProvenanceEntry]:
    label = {(s.set_index, s.target): s.label for s in series}
    return [ProvenanceEntry(a.workload, label.get((i, a.target), a.target),
                            tuple(provenance_rows(a)))
            for i, st in enumerate(sets) for a in st.artifacts]


def index_of(doc: RunDoc) -> xbench.Index | None:
    """The XBench-style index when it scores at least two workloads."""
    index = xbench.xbench_index(doc)
    return index if len({t.workload for t in index.tests}) >= 2 else None


def from_run(doc: RunDoc, source: str = "", heading: str | None = None,
             deployment: Deployment | None = None) -> Report:
    """The report of one run; with a deployment, its advice too."""
    # Short labels ("i386", not "i386/prebuilt"), their provenance said once in the legend.
    names = short_labels(targets_of(doc))
    entries = legend(doc, names)
    # Each series is shown by its short label and keeps its stored target (CSV's `target`).
    series = [replace(s, label=names.get(s.target, s.target)) for s in single_series(doc)]
    doc = relabeled(doc, names)
    results = analyse(doc)
    blocks = [_block(r, doc, _reference_of(r)) for r in results]
    for b in blocks:
        b.notes = doc.workload_warnings(b.result.id)
        o = doc.outcomes.get(b.result.id)
        if o:
            b.stop = [("", o.text())]
    rs = ResultSet(doc, source or f"run {doc.run.id}")
    curves = footprint.series(doc)
    sets = [_set_info(rs)]
    rows = _sample_rows([rs], series)
    return Report(
        kind="run", title=f"abibench run {doc.run.id}",
        heading=heading or f"run {doc.run.id} ({doc.run.status})", sets=sets,
        series=series, workloads=blocks, suites=suite_summary(results),
        warnings=doc.run_warnings(), samples=CleanRows(rows), counts=_counts([rs]),
        context=context_rows(sets), calibration=calibration_rows([doc]),
        provenance=_provenance(sets, series), generated=_now(),
        footprint_series=curves, footprint_diffs=footprint.differences(curves),
        index=index_of(doc), explanations=explain(doc, results),
        advice=advise(doc, results, deployment) if deployment is not None else None,
        legend=entries)


def from_sets(sets: list[ResultSet], baseline: str | None = None,
              tags: list[str] | None = None, deployment: Deployment | None = None) -> Report:
    """One report over several result sets (an N-way comparison), or of one run."""
    if len(sets) == 1:
        if baseline:
            raise UsageError("--baseline needs two or more result sets; a single run is "
                             "always compared with its 64-bit ABI")
        return from_run(sets[0].doc, sets[0].source, deployment=deployment)
    merged = merge(sets, baseline, tags)
    tagged = [ResultSet(rs.doc, rs.source, tag) for rs, tag in zip(sets, merged.tags, strict=True)]
    results = analyse(merged.doc, merged.references)
    order = {s.label: i for i, s in enumerate(merged.series)}
    blocks = []
    for res in results:
        res.rows.sort(key=lambda r: order.get(r.label, len(order)))
        blk = _block(res, merged.doc, merged.references.get(res.id))
        blk.notes = merged.doc.workload_warnings(res.id)
        for rs in tagged:
            o = rs.doc.outcomes.get(res.id)
            if o:
                blk.stop.append((rs.tag, o.text()))
        blocks.append(blk)
    infos = [_set_info(rs) for rs in tagged]
    rows = _sample_rows(tagged, merged.series)
    n = len(sets)
    return Report(
        kind="comparison", title=f"abibench comparison of {n} result sets",
        heading=f"abibench comparison of {n} result sets", sets=infos, series=merged.series,
        workloads=blocks, suites=suite_summary(results),
        warnings=merged.doc.run_warnings() + merged.warnings, samples=CleanRows(rows),
        counts=_counts(tagged), context=context_rows(infos),
        calibration=calibration_rows([rs.doc for rs in sets]),
        provenance=_provenance(infos, merged.series), generated=_now(),
        explanations=explain(merged.doc, results),
        advice=advise(merged.doc, results, deployment) if deployment is not None else None,
        legend=legend(merged.doc, {}))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
