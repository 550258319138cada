"""One workload over the stored runs: its ABI ratio and each ABI's metric, run after run, with
the change points where a level moved (analyse/changes.py)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..axes import axes_of
from ..records import RunDoc, pick_reference
from .changes import ChangePoint, detect


@dataclass(frozen=True)
class Point:
    """One run's figures for the workload."""

    run_id: str
    started: str
    axes: dict[str, str | None]
    values: dict[str, float]  # series name -> the run's level (geometric mean); absent: none
    n: dict[str, int]


@dataclass(frozen=True)
class Change:
    """A series moved to a new level at run ``run_index`` (the first run of the new level)."""

    series: str
    run_index: int
    run_id: str
    before: float
    after: float
    p_value: float

    @property
    def relative(self) -> float:
        return self.after / self.before - 1.0


@dataclass(frozen=True)
class History:
    workload: str
    metric: str
    unit: str
    better: str
    by: str
    reference: str | None
    series: tuple[str, ...]  # "i386/x86_64" (a ratio), then each target's metric by its name
    points: tuple[Point, ...]
    changes: tuple[Change, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    # Which series are ratios: said here, never read from a name (a target may hold a '/')
    ratios: tuple[str, ...] = field(default_factory=tuple)

    def is_ratio(self, series: str) -> bool:
        return series in self.ratios


def ratio_name(other: str, reference: str) -> str:
    return f"{other}/{reference}"


def _logs(values: Sequence[float]) -> list[float]:
    """Logs of the values a ratio can use: positive and finite (the rest never reach it)."""
    return [math.log(v) for v in values if math.isfinite(v) and v > 0]


def run_series(doc: RunDoc, workload: str, metric: str, targets: Sequence[str],
               reference: str | None) -> dict[str, list[float]]:
    """One run's log values per series: per round log(other/reference) for each ratio (rounds
    of one run pair), and each target's log metric values."""
    out: dict[str, list[float]] = {}
    if reference is not None:
        for other in targets:
            if other == reference:
                continue
            pair = doc.paired(workload, metric, other, reference)
            if pair.paired and pair.a:
                d = [math.log(a / b) for a, b in zip(pair.a, pair.b, strict=True)
                     if a > 0 and b > 0 and math.isfinite(a / b)]
                if d:
                    out[ratio_name(other, reference)] = d
    for t in targets:
        vals = _logs([v for s in doc.counted(workload, t) if (v := s.value(metric)) is not None])
        if vals:
            out[t] = vals
    return out


def select_runs(docs: Sequence[RunDoc], workload: str, by: str,
                host: str | None = None) -> tuple[list[RunDoc], list[str]]:
    """The runs that measured the workload, oldest first; unless ``by`` is "host", only those
    of one host (``host``, else the newest run's), since another machine is another level."""
    having = sorted((d for d in docs if d.counted(workload)),
                    key=lambda d: (d.run.started, d.id))
    notes: list[str] = []
    if by != "host" and having:
        want = host or axes_of(having[-1])["host"]
        kept = [d for d in having if axes_of(d)["host"] == want]
        if len(kept) < len(having):
            notes.append(f"{len(having) - len(kept)} runs of other hosts left out (host "
                         f"{want}; `--by host` shows every host)")
        having = kept
    return having, notes


def history(docs: Sequence[RunDoc], workload: str, by: str = "version", *,
            host: str | None = None, alpha: float = 0.05, min_change: float = 0.01,
            seed: int = 0) -> History:
    """The workload's history over ``docs`` (any order); ValueError when no run measured it."""
    runs, notes = select_runs(docs, workload, by, host)
    if not runs:
        raise ValueError(f"no stored run measured workload '{workload}'")
    meta = runs[-1].workloads[workload]
    metric = meta.primary_metric
    targets: list[str] = []
    for d in runs:
        for t in d.workloads[workload].targets:
            if t not in targets and t not in d.emulated_targets(workload):
                targets.append(t)
    measured = [t for t in targets if any(d.counted(workload, t) for d in runs)]
    reference = pick_reference(measured) if len(measured) >= 2 else None
    per_run = [run_series(d, workload, meta.primary, measured, reference) for d in runs]
    names = [ratio_name(t, reference) for t in measured if reference and t != reference]
    ratios = tuple(names)
    names += measured
    points = tuple(Point(d.id, d.run.started, axes_of(d, workload),
                         {s: math.exp(float(np.mean(v))) for s, v in got.items()},
                         {s: len(v) for s, v in got.items()})
                   for d, got in zip(runs, per_run, strict=True))
    changes: list[Change] = []
    for name in names:
        values: list[float] = []
        starts: list[tuple[int, int]] = []  # (index in values, run index)
        for i, got in enumerate(per_run):
            if name in got:
                starts.append((len(values), i))
                values += got[name]
        if len(starts) < 2:
            continue
        where = dict(starts)
        for cp in detect(values, [s for s, _ in starts[1:]], alpha=alpha,
                         min_change=min_change, seed=seed):
            run_index = where[cp.index]
            changes.append(_change(name, cp, run_index, runs[run_index].id))
    return History(workload, meta.primary, metric.unit, metric.better, by, reference,
                   tuple(names), points, tuple(changes), tuple(notes), ratios)


def _change(name: str, cp: ChangePoint, run_index: int, run_id: str) -> Change:
    return Change(name, run_index, run_id, math.exp(cp.before), math.exp(cp.after), cp.p_value)


def levels(h: History, series: str) -> list[tuple[int, int, float]]:
    """The runs of each level of one series: (first run index, last run index, level)."""
    cuts = sorted(c.run_index for c in h.changes if c.series == series)
    bounds = [0, *cuts, len(h.points)]
    out = []
    for lo, hi in itertools.pairwise(bounds):
        vals = [math.log(p.values[series]) for p in h.points[lo:hi] if series in p.values]
        if vals:
            out.append((lo, hi - 1, math.exp(float(np.mean(vals)))))
    return out
