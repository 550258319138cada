"""A swept workload as one curve: its ratios against the swept value, not N workloads.

A profile's `[sweep] n = [...]` runs one instance per value, with ids like `list[n=10000]`
(workloads/profile.py `expand_sweep`; a profile's own id holds no brackets, and ids.py keeps
'[', ']', ',' and '=' out of sweep values, so such an id is always an instance).
Instances of a one-parameter sweep are
grouped by their profile's id here:

* reports show one section per sweep with one row per value: each ABI's ratio to the reference
  for the primary metric and for peak RSS, with confidence intervals, and where the winner
  changes, the crossover in words ("i386 is faster up to n=10000, x86_64 from n=1000000 on");
* the suite's geometric mean counts the sweep once, by its largest value (numerically largest
  when every value is a number, else the last one listed): the size the profile's author
  swept toward, and one program is one program however many sizes it was measured at.

A sweep over two parameters is a grid, not a curve: its instances stay separate workloads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .. import stats
from ..records import Sample, pair_by_round
from .report import MEMORY_NAMES, Report, WorkloadBlock, verdict_words
from .sweepids import Instance, instance_of, once_per_sweep, ordered

__all__ = ["Axis", "Curve", "Instance", "RatioPoint", "curves", "instance_of", "once_per_sweep",
           "ordered"]
@dataclass(frozen=True)
class RatioPoint:
    """One ABI's ratio to the reference at one swept value, with its confidence interval."""

    ratio: float
    low: float
    high: float

    def side(self, better: str) -> int:
        """+1: the ABI is significantly better here; -1: the reference is; 0: the CI holds 1."""
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return 0
        if self.low <= 1.0 <= self.high:
            return 0
        below = self.high < 1.0
        return 1 if below == (better == "lower") else -1


@dataclass(frozen=True)
class Axis:
    """One ratio drawn against the swept value: a metric of one ABI against the reference."""

    metric: str
    unit: str
    better: str
    label: str
    reference: str
    points: tuple[RatioPoint | None, ...]  # one per value; None where it has no ratio

    def crossover(self, param: str, values: Sequence[str]) -> str:
        """Who wins where, in words, one phrase per run of values with the same outcome: "i386
        is faster up to n=10000, no significant difference from n=100000 to n=1000000,
        x86_64 is faster from n=10000000 on"; a tie is where the ratio's CI holds 1."""
        good, _ = verdict_words(self.unit, self.better)
        what = MEMORY_NAMES.get(self.metric, self.metric)
        sides = [(v, p.side(self.better)) for v, p in zip(values, self.points, strict=True)
                 if p is not None]
        if not sides:
            return f"{what}: no ratio at any {param}"
        runs: list[tuple[int, str, str]] = []  # (side, first value, last value)
        for v, side in sides:
            if runs and runs[-1][0] == side:
                runs[-1] = (side, runs[-1][1], v)
            else:
                runs.append((side, v, v))

        def outcome(side: int) -> str:
            if side == 0:
                return "no significant difference"
            return f"{self.label if side > 0 else self.reference} is {good}"

        if len(runs) == 1:
            return f"{what}: {outcome(runs[0][0])} at every {param}"
        phrases = []
        for i, (side, lo, hi) in enumerate(runs):
            where = (f"up to {param}={hi}" if i == 0 else
                     f"from {param}={lo} on" if i == len(runs) - 1 else
                     f"at {param}={lo}" if lo == hi else f"from {param}={lo} to {param}={hi}")
            phrases.append(f"{outcome(side)} {where}")
        return f"{what}: {', '.join(phrases)}"


@dataclass(frozen=True)
class Curve:
    """A one-parameter sweep: its instances' blocks in value order and its ratio axes."""

    base: str
    param: str
    values: tuple[str, ...]
    blocks: tuple[WorkloadBlock, ...]
    axes: tuple[Axis, ...]

    def crossovers(self) -> list[str]:
        return [f"{a.label}/{a.reference} {a.crossover(self.param, self.values)}"
                for a in self.axes]


def _memory_point(samples: Sequence[tuple[str, Sample]], workload: str, label: str,
                  reference: str) -> RatioPoint | None:
    a = [s for lbl, s in samples if lbl == label and s.workload == workload and s.counted]
    b = [s for lbl, s in samples if lbl == reference and s.workload == workload and s.counted]
    pair = pair_by_round(a, b, "max_rss")
    if len(pair.a) < 2 or len(pair.b) < 2:
        return None
    try:
        r = stats.ratio_of(pair.a, pair.b, paired=pair.paired, name_a=label, name_b=reference)
    except ValueError:
        return None
    return RatioPoint(r.ratio, r.ci_low, r.ci_high)


def curves(report: Report) -> list[Curve]:
    """Every one-parameter sweep of the report with two or more values, as a curve."""
    groups: dict[tuple[str, str], dict[str, WorkloadBlock]] = {}
    for b in report.workloads:
        inst = instance_of(b.result.id)
        if inst is not None:
            groups.setdefault((inst.base, inst.param), {})[inst.value] = b
    out = []
    samples: list[tuple[str, Sample]] | None = None  # made only when a curve needs them
    for (base, param), by_value in groups.items():
        if len(by_value) < 2:
            continue
        if samples is None:
            samples = [(r.series, r.sample) for r in report.samples]
        values = tuple(ordered(list(by_value)))
        blocks = tuple(by_value[v] for v in values)
        out.append(Curve(base, param, values, blocks, tuple(_axes(blocks, samples))))
    return out


def _axes(blocks: Sequence[WorkloadBlock], samples: Sequence[tuple[str, Sample]]) -> list[Axis]:
    first = blocks[0].result
    pairs: list[tuple[str, str]] = []
    for b in blocks:
        for d in b.diffs:
            if d.primary and (d.label, d.reference) not in pairs:
                pairs.append((d.label, d.reference))
    axes = []
    for label, ref in pairs:
        prim: list[RatioPoint | None] = []
        for b in blocks:
            got = b.primary_diff(label)
            prim.append(RatioPoint(got.ratio, got.ci_low, got.ci_high)
                        if got is not None and got.reference == ref and got.valid else None)
        axes.append(Axis(first.primary, first.unit, first.better, label, ref, tuple(prim)))
        if first.primary != "max_rss":
            mem = tuple(_memory_point(samples, b.result.id, label, ref) for b in blocks)
            axes.append(Axis("max_rss", "KiB", "lower", label, ref, mem))
    return axes
