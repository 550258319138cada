"""Statistics across a suite's workloads: Holm's correction of their p-values, and the
geometric mean of their ratios with its interval. `stats` re-exports every name."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from abibench.distributions import t_ppf

from .numeric import FloatArray, _as_array, _check_confidence, _positive
from .records import Better

# --------------------------------------------------------------------------- multiple testing


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in input order, capped at 1.

    nan entries (comparisons that could not be tested) stay nan and do not
    count towards the number of hypotheses.
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, math.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return [float(x) for x in out]
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = p[order] * (m - np.arange(m))
    # Holm's step-down: a hypothesis cannot be rejected more easily than one
    # with a smaller raw p, hence the running maximum.
    out[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return [float(x) for x in out]


# --------------------------------------------------------------------------- suite summary


@dataclass(frozen=True)
class GeoMean:
    """Geometric mean of per-workload ratios; ``n`` is the number of workloads."""

    value: float
    ci_low: float
    ci_high: float
    n: int


def geomean_ratio(
    groups: Sequence[tuple[Sequence[float], Sequence[float], bool]],
    *,
    better: Sequence[Better] | None = None,
    confidence: float = 0.95,
    resamples: int = 4000,
    seed: int = 0,
) -> GeoMean:
    """Suite summary: geometric mean over workloads of each workload's ratio.

    Each group is (a, b, paired) and its ratio is what :func:`ratio_of` gives (the mean log
    ratio per round, or the difference of mean logs unpaired). The CI is the t interval of the
    mean of those logs, its variance the sum of the groups' (they are independent samples),
    its degrees of freedom Welch-Satterthwaite's; workloads themselves are fixed, not sampled.

    With ``better`` given (one entry per group), ratios of "higher"-is-better
    groups are inverted, so every ratio reads as a's *cost* relative to b and
    the result is time-like: > 1 means b is better overall, < 1 means a is.
    Without ``better`` the ratios are used as they are, so do not mix
    directions. Every value must be positive, as for :func:`ratio_of`: a group
    with a value <= 0 raises ValueError. If any group has fewer than 2 samples
    on a side, the CI is nan.
    """
    if len(groups) == 0:
        raise ValueError("geomean_ratio needs at least one group")
    if better is not None and len(better) != len(groups):
        raise ValueError(f"better has {len(better)} entries for {len(groups)} groups")
    _check_confidence(confidence, resamples)
    logs, variances, dfs = [], [], []
    for i, (a_raw, b_raw, paired) in enumerate(groups):
        a = _positive(_as_array(a_raw, f"group {i} a"), f"group {i} a")
        b = _positive(_as_array(b_raw, f"group {i} b"), f"group {i} b")
        if paired and a.size != b.size:
            raise ValueError(f"group {i} is paired but has {a.size} and {b.size} samples")
        centre, var, df = _log_ratio_variance(np.log(a), np.log(b), paired)
        if not math.isfinite(centre) or abs(centre) > 709:
            raise ValueError(f"group {i} ratio is beyond floating point; a geometric mean needs "
                             "finite ratios > 0")
        sign = -1.0 if better is not None and better[i] == "higher" else 1.0
        logs.append(sign * centre)
        variances.append(var)
        dfs.append(df)
    k = len(groups)
    mean = float(np.mean(logs))
    value = float(np.exp(mean))  # between the smallest and largest ratio
    if any(math.isnan(v) for v in variances):
        return GeoMean(value=value, ci_low=math.nan, ci_high=math.nan, n=k)
    total = sum(variances)
    if total == 0.0:
        return GeoMean(value=value, ci_low=value, ci_high=value, n=k)
    df = total ** 2 / sum(v * v / d for v, d in zip(variances, dfs, strict=True) if v > 0)
    half = t_ppf(0.5 + confidence / 2, df) * math.sqrt(total) / k
    with np.errstate(over="ignore"):
        ci_low, ci_high = float(np.exp(mean - half)), float(np.exp(mean + half))
    if not (ci_low > 0.0 and math.isfinite(ci_high)):
        ci_low = ci_high = math.nan  # beyond floating point: no interval, not an infinite one
    return GeoMean(value=value, ci_low=ci_low, ci_high=ci_high, n=k)


def _log_ratio_variance(la: FloatArray, lb: FloatArray, paired: bool) -> tuple[float, float, float]:
    """(log ratio, its variance, degrees of freedom) as ratio_of estimates them; the variance
    is nan with fewer than 2 samples on a side."""
    if paired:
        d = la - lb
        if d.size < 2:
            return float(np.mean(d)), math.nan, math.nan
        return float(np.mean(d)), float(np.var(d, ddof=1)) / d.size, float(d.size - 1)
    centre = float(np.mean(la) - np.mean(lb))
    if la.size < 2 or lb.size < 2:
        return centre, math.nan, math.nan
    va, vb = float(np.var(la, ddof=1)) / la.size, float(np.var(lb, ddof=1)) / lb.size
    if va + vb == 0.0:
        return centre, 0.0, 1.0
    df = (va + vb) ** 2 / ((va * va / (la.size - 1)) + (vb * vb / (lb.size - 1)))
    return centre, va + vb, df
