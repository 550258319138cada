"""A run against a baseline run: each ABI's change, and the change of the gap between ABIs.

Rounds of two runs are never paired (they ran at different times, perhaps on different
builds): each ABI's change is the ratio of geometric means with Welch's interval on the logs
(stats.ratio_of, paired=False). The gap (the ABI ratio within a run) is estimated in each run
as that run's analysis does (paired by round when it can be), and its change is the difference
of the two log estimates, with the two variances added and Welch-Satterthwaite's degrees of
freedom.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from abibench.distributions import t_ppf, t_sf

from .. import stats
from ..axes import axes_of
from ..records import RunDoc, pick_reference


@dataclass(frozen=True)
class AbiChange:
    """One ABI's primary metric now against the baseline. ``slowdown`` is the change in cost:
    +0.031 means 3.1% slower (time up, or rate down), whatever the metric's direction."""

    target: str
    ratio: stats.Ratio  # now over baseline, in the metric's own terms
    slowdown: float
    low: float
    high: float

    @property
    def significant(self) -> bool:
        return not math.isnan(self.low) and (self.low > 0 or self.high < 0)


@dataclass(frozen=True)
class Estimate:
    """A log ratio with its standard error and degrees of freedom."""

    centre: float
    se: float
    df: float


@dataclass(frozen=True)
class GapChange:
    """The ratio other/reference at the baseline and now, and its change (now over then)."""

    other: str
    reference: str
    before: float
    after: float
    change: float
    low: float
    high: float
    p_value: float


@dataclass(frozen=True)
class WorkloadChange:
    workload: str
    metric: str
    unit: str
    better: str
    abis: tuple[AbiChange, ...]
    gaps: tuple[GapChange, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class BaselineComparison:
    now: str
    baseline: str
    now_axes: dict[str, str | None]
    baseline_axes: dict[str, str | None]
    workloads: tuple[WorkloadChange, ...]
    warnings: tuple[str, ...] = field(default_factory=tuple)
    confidence: float = 0.95

    def slowdowns(self, threshold: float) -> list[tuple[str, AbiChange]]:
        """(workload, change) of every significant slowdown larger than ``threshold``."""
        return [(w.workload, c) for w in self.workloads for c in w.abis
                if c.significant and c.slowdown > threshold]


def _values(doc: RunDoc, workload: str, target: str, metric: str) -> list[float]:
    return [v for s in doc.counted(workload, target) if (v := s.value(metric)) is not None]


def log_gap(doc: RunDoc, workload: str, metric: str, other: str, reference: str) -> Estimate | None:
    """log(other/reference) within one run: paired by round when the run pairs them (the
    per-round log ratios' mean), else the difference of mean logs (Welch); None without two
    usable values a side."""
    pair = doc.paired(workload, metric, other, reference)
    a, b = np.asarray(pair.a, dtype=float), np.asarray(pair.b, dtype=float)
    if a.size < 2 or b.size < 2 or np.any(a <= 0) or np.any(b <= 0) \
            or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return None
    la, lb = np.log(a), np.log(b)
    if pair.paired:
        d = la - lb
        return Estimate(float(d.mean()), float(d.std(ddof=1)) / math.sqrt(d.size), d.size - 1)
    va, vb = float(la.var(ddof=1)) / la.size, float(lb.var(ddof=1)) / lb.size
    se2 = va + vb
    df = se2 * se2 / (va * va / (la.size - 1) + vb * vb / (lb.size - 1)) if se2 > 0 else 1.0
    return Estimate(float(la.mean() - lb.mean()), math.sqrt(se2), df)


def difference(now: Estimate, then: Estimate, confidence: float = 0.95
               ) -> tuple[float, float, float, float]:
    """now - then as (centre, low, high, p) on the log scale: variances added, degrees of
    freedom by Welch-Satterthwaite (the two runs are independent)."""
    centre = now.centre - then.centre
    v1, v2 = now.se ** 2, then.se ** 2
    se = math.sqrt(v1 + v2)
    if se == 0.0:
        return centre, centre, centre, 1.0 if centre == 0.0 else 0.0
    df = (v1 + v2) ** 2 / (v1 * v1 / now.df + v2 * v2 / then.df) if v1 * v2 > 0 \
        else (now.df if v1 > 0 else then.df)
    q = t_ppf(0.5 + confidence / 2, df)
    p = 2 * t_sf(abs(centre / se), df)
    return centre, centre - q * se, centre + q * se, p


def _abi_change(target: str, now: list[float], then: list[float], better: str,
                confidence: float) -> AbiChange:
    r = stats.ratio_of(now, then, paired=False, name_a=f"{target} now",
                       name_b=f"{target} at the baseline", confidence=confidence)
    # cost now over cost then: time as it is, a rate inverted
    if better == "lower":
        cost, lo, hi = r.ratio, r.ci_low, r.ci_high
    else:
        cost, lo, hi = 1 / r.ratio, 1 / r.ci_high, 1 / r.ci_low
    return AbiChange(target, r, cost - 1, lo - 1, hi - 1)


def _common_targets(now: RunDoc, then: RunDoc, workload: str) -> list[str]:
    emulated = now.emulated_targets(workload) | then.emulated_targets(workload)
    return [t for t in now.workloads[workload].targets
            if t in then.workloads[workload].targets and t not in emulated]


def workload_change(now: RunDoc, then: RunDoc, workload: str,
                    confidence: float = 0.95) -> WorkloadChange:
    meta = now.workloads[workload]
    metric = meta.primary_metric
    warnings: list[str] = []
    old = then.workloads[workload]
    if old.primary != meta.primary:
        return WorkloadChange(workload, meta.primary, metric.unit, metric.better, (), (), (
            f"the baseline measured {old.primary}, this run {meta.primary}: not compared",))
    if old.params != meta.params:
        warnings.append(f"parameters differ: baseline {old.params}, now {meta.params}")
    abis: list[AbiChange] = []
    usable: list[str] = []
    for t in _common_targets(now, then, workload):
        a, b = _values(now, workload, t, meta.primary), _values(then, workload, t, meta.primary)
        if len(a) < 2 or len(b) < 2:
            continue
        try:
            abis.append(_abi_change(t, a, b, metric.better, confidence))
        except ValueError as exc:  # values <= 0, or beyond floating point: no change stated
            warnings.append(f"{meta.primary}: {exc}")
            continue
        usable.append(t)
    gaps: list[GapChange] = []
    if len(usable) >= 2:
        ref = pick_reference(usable)
        for other in usable:
            if other == ref:
                continue
            e_now = log_gap(now, workload, meta.primary, other, ref)
            e_then = log_gap(then, workload, meta.primary, other, ref)
            if e_now is None or e_then is None:
                continue
            c, lo, hi, p = difference(e_now, e_then, confidence)
            if not all(math.isfinite(v) and abs(v) < 700 for v in (c, lo, hi)):
                continue
            gaps.append(GapChange(other, ref, math.exp(e_then.centre), math.exp(e_now.centre),
                                  math.exp(c), math.exp(lo), math.exp(hi), p))
    return WorkloadChange(workload, meta.primary, metric.unit, metric.better, tuple(abis),
                          tuple(gaps), tuple(warnings))


def against(now: RunDoc, then: RunDoc, confidence: float = 0.95) -> BaselineComparison:
    """``now`` against the baseline ``then``, for every workload both measured."""
    shared = [w for w in now.workloads if w in then.workloads]
    warnings = []
    missing = sorted(set(now.workloads) - set(then.workloads))
    if missing:
        warnings.append(f"not in the baseline: {', '.join(missing)}")
    return BaselineComparison(now.id, then.id, axes_of(now), axes_of(then),
                              tuple(workload_change(now, then, w, confidence) for w in shared),
                              tuple(warnings), confidence)


def differing_axes(cmp: BaselineComparison) -> list[tuple[str, str | None, str | None]]:
    """The axes on which the two runs differ: (axis, baseline's, now's)."""
    return [(k, cmp.baseline_axes.get(k), v) for k, v in cmp.now_axes.items()
            if cmp.baseline_axes.get(k) != v]

