"""One workload over the stored runs: its ABI ratio and each ABI's metric, run after run, with
the change points where a level moved (analyse/changes.py)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..axes import axes_of
from ..records import RunDoc, pick_reference
from .changes import ChangePoint, Spread, pooled_spread, scan


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
    host: str | None = None  # the host whose runs moved (a host is compared with itself)

    @property
    def relative(self) -> float:
        return self.after / self.before - 1.0


@dataclass(frozen=True)
class HostLevel:
    """One build's level of one series on one host, beside the first host's level of the same
    build: hosts are compared with each other in their own table, like with like, never read
    as a change over time."""

    host: str
    series: str
    runs: int  # the host's runs of that build
    level: float  # their geometric mean
    relative: float | None  # over the first host's (None for the first host of the build)
    build: str | None = None  # the `version` axis: tag, else source version or build digest


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
    # Cuts the samples objected to that the runs could not decide: "cannot tell", not changes
    undecided: tuple[Change, ...] = field(default_factory=tuple)
    # By host: the index of the first run of each host's block after the first (points are
    # grouped by host, each oldest first); a level never spans two blocks
    blocks: tuple[int, ...] = field(default_factory=tuple)
    hosts: tuple[HostLevel, ...] = field(default_factory=tuple)  # hosts compared (by host)

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


def host_key(doc: RunDoc) -> str:
    return axes_of(doc)["host"] or "-"


def select_runs(docs: Sequence[RunDoc], workload: str, by: str,
                host: str | None = None) -> tuple[list[RunDoc], list[str]]:
    """The runs that measured the workload, oldest first; unless ``by`` is "host", only those
    of one host (``host``, else the newest run's), since another machine is another level. By
    host, grouped by host (each host's runs oldest first): a host is a blocking factor."""
    having = sorted((d for d in docs if d.counted(workload)),
                    key=lambda d: (d.run.started, d.id))
    notes: list[str] = []
    if by == "host":
        having.sort(key=lambda d: (host_key(d), d.run.started, d.id))
        if len({host_key(d) for d in having}) > 1:
            notes.append("each host's runs are searched for changes on their own (a host is "
                         "a blocking factor: levels that differ between hosts are not a "
                         "change over time); the hosts are compared in their own table")
    elif having:
        want = host or axes_of(having[-1])["host"]
        kept = [d for d in having if axes_of(d)["host"] == want]
        if len(kept) < len(having):
            notes.append(f"{len(having) - len(kept)} runs of other hosts left out (host "
                         f"{want}; `--by host` shows every host)")
        having = kept
    return having, notes


def _targets(runs: Sequence[RunDoc], workload: str) -> tuple[list[str], str | None]:
    """The natively measured targets of the workload over ``runs``, and the ratio's reference."""
    targets: list[str] = []
    for d in runs:
        for t in d.workloads[workload].targets:
            if t not in targets and t not in d.emulated_targets(workload):
                targets.append(t)
    measured = [t for t in targets if any(d.counted(workload, t) for d in runs)]
    return measured, pick_reference(measured) if len(measured) >= 2 else None


def spreads(docs: Sequence[RunDoc]) -> dict[str, Spread]:
    """The run-to-run spread of each series name (a ratio, a target's metric) on the hosts of
    ``docs`` (pass one host's), pooled over every workload from repeated runs of one build:
    runs of one host, workload and `version` axis (tag, else source version or build digest).
    What the change detector uses where a segment has too few runs of its own."""
    groups: dict[str, dict[tuple[str, str, str], list[float]]] = {}
    workloads = sorted({w for d in docs for w in d.workloads if d.counted(w)})
    for w in workloads:
        runs = [d for d in docs if d.counted(w)]
        measured, reference = _targets(runs, w)
        for d in runs:
            build = axes_of(d, w)["version"]
            if build is None:
                continue
            metric = d.workloads[w].primary
            for name, vals in run_series(d, w, metric, measured, reference).items():
                key = (host_key(d), w, build)
                groups.setdefault(name, {}).setdefault(key, []).append(float(np.mean(vals)))
    out = {}
    for name, by_build in groups.items():
        got = pooled_spread(by_build.values())
        if got is not None:
            out[name] = got
    return out


def history(docs: Sequence[RunDoc], workload: str, by: str = "version", *,
            host: str | None = None, alpha: float = 0.05, min_change: float = 0.01,
            seed: int = 0, priors: dict[str, dict[str, Spread]] | None = None) -> History:
    """The workload's history over ``docs`` (any order); ValueError when no run measured it.
    ``priors``: each host's `spreads` (computed from ``docs`` when not given)."""
    runs, notes = select_runs(docs, workload, by, host)
    if not runs:
        raise ValueError(f"no stored run measured workload '{workload}'")
    meta = runs[-1].workloads[workload]
    measured, reference = _targets(runs, workload)
    per_run = [run_series(d, workload, meta.primary, measured, reference) for d in runs]
    names = [ratio_name(t, reference) for t in measured if reference and t != reference]
    ratios = tuple(names)
    names += measured
    points = tuple(Point(d.id, d.run.started, axes_of(d, workload),
                         {s: math.exp(float(np.mean(v))) for s, v in got.items()},
                         {s: len(v) for s, v in got.items()})
                   for d, got in zip(runs, per_run, strict=True))
    hosts = [host_key(d) for d in runs]
    blocks = [i for i in range(1, len(runs)) if hosts[i] != hosts[i - 1]]
    if priors is None:
        priors = {x: spreads([d for d in docs if host_key(d) == x]) for x in set(hosts)}
    changes: list[Change] = []
    undecided: list[Change] = []
    for lo, hi in itertools.pairwise([0, *blocks, len(runs)]):
        prior = priors.get(hosts[lo], {})
        for name in names:
            found, unsure = _search(name, per_run, lo, hi, prior.get(name), alpha=alpha,
                                    min_change=min_change, seed=seed)
            changes += [_change(name, cp, i, runs[i].id, hosts[lo]) for cp, i in found]
            undecided += [_change(name, cp, i, runs[i].id, hosts[lo]) for cp, i in unsure]
    changes.sort(key=lambda c: (c.series, c.run_index))
    undecided.sort(key=lambda c: (c.series, c.run_index))
    metric = meta.primary_metric
    h = History(workload, meta.primary, metric.unit, metric.better, by, reference,
                tuple(names), points, tuple(changes), tuple(notes), ratios, tuple(undecided),
                tuple(blocks))
    return _with_hosts(h, hosts) if by == "host" else h


def _search(name: str, per_run: Sequence[dict[str, list[float]]], lo: int, hi: int,
            prior: Spread | None, **kw: float) -> tuple[list[tuple[ChangePoint, int]],
                                                        list[tuple[ChangePoint, int]]]:
    """One series over runs lo..hi-1 (one host's): its change points and undecided cuts, each
    with the run index it starts at."""
    values: list[float] = []
    starts: list[tuple[int, int]] = []  # (index in values, run index)
    for i in range(lo, hi):
        if name in per_run[i]:
            starts.append((len(values), i))
            values += per_run[i][name]
    if len(starts) < 2:
        return [], []
    where = dict(starts)
    got = scan(values, [s for s, _ in starts[1:]], alpha=kw["alpha"],
               min_change=kw["min_change"], seed=int(kw["seed"]), prior=prior)
    return ([(cp, where[cp.index]) for cp in got.changes],
            [(cp, where[cp.index]) for cp in got.undecided])


def _change(name: str, cp: ChangePoint, run_index: int, run_id: str,
            host: str | None = None) -> Change:
    return Change(name, run_index, run_id, math.exp(cp.before), math.exp(cp.after),
                  cp.p_value, host)


def _with_hosts(h: History, hosts: Sequence[str]) -> History:
    """The hosts compared: each build's level (the `version` axis) of each series on each host
    that measured it, over the first such host's. A host's levels of different builds are
    never averaged together."""
    table: list[HostLevel] = []
    for s in h.series:
        builds = list(dict.fromkeys(p.axes.get("version") for p in h.points if s in p.values))
        for b in builds:
            first: float | None = None
            for x in sorted(set(hosts)):
                vals = [math.log(p.values[s]) for p, at in zip(h.points, hosts, strict=True)
                        if at == x and p.axes.get("version") == b and s in p.values]
                if not vals:
                    continue
                level = math.exp(float(np.mean(vals)))
                table.append(HostLevel(x, s, len(vals), level,
                                       None if first is None else level / first, b))
                first = level if first is None else first
    return replace(h, hosts=tuple(table))


def levels(h: History, series: str) -> list[tuple[int, int, float]]:
    """The runs of each level of one series: (first run index, last run index, level). A
    level never spans two hosts' blocks (by host)."""
    cuts = {c.run_index for c in h.changes if c.series == series} | set(h.blocks)
    bounds = [0, *sorted(cuts), len(h.points)]
    out = []
    for lo, hi in itertools.pairwise(bounds):
        vals = [math.log(p.values[series]) for p in h.points[lo:hi] if series in p.values]
        if vals:
            out.append((lo, hi - 1, math.exp(float(np.mean(vals)))))
    return out
