"""Intervals for the per-round log ratios of a paired comparison, each with its own p-value.

A paired comparison has one log ratio per round, d_r = log a_r - log b_r; every method below
estimates its centre, a confidence interval and the p-value of "no difference" from the SAME
statistic, so a CI that excludes 0 and a p-value below alpha always agree.

* ``t``: the mean of d and Student's t interval; the most efficient when d is close to normal.
* ``trimmed``: Yuen's 20% trimmed mean with its winsorized standard error and t interval;
  robust to the one slow round a neighbour causes, at a small cost in efficiency.
* ``hl``: the Hodges-Lehmann centre (median of the Walsh averages) with the Wilcoxon signed-rank
  interval and test (exact for small n). Robust and efficient, but coarse: with n rounds its
  smallest two-sided p is 2 / 2^n, so 5 rounds can never reach p < 0.05.
* ``median``: the median of d with a percentile bootstrap interval (abibench before this module);
  its p-value is the sign test of the same median, so the two agree.

`bench/estimators.py` measures the coverage and width of each on this machine's recorded rounds
and on synthetic data with outliers; `DEFAULT` is the method that study chose.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from abibench.distributions import t_ppf, t_sf
from abibench.lazy import lazy_module

_sps = lazy_module("scipy.stats")

FloatArray = npt.NDArray[np.float64]
TRIM = 0.2


@dataclass(frozen=True)
class Interval:
    """Centre, confidence interval and p-value of the log ratios (exp() gives ratios)."""

    centre: float
    low: float
    high: float
    p_value: float
    method: str


def _degenerate(d: FloatArray, method: str) -> Interval | None:
    """All rounds alike: no spread to estimate; as certain as data gets (or no CI at n<2)."""
    if d.size < 2:
        c = float(d[0]) if d.size else math.nan
        return Interval(c, math.nan, math.nan, math.nan, method)
    if np.all(d == d[0]):
        c = float(d[0])
        return Interval(c, c, c, 1.0 if c == 0.0 else 0.0, method)
    return None


def _student(centre: float, se: float, df: float, confidence: float, method: str) -> Interval:
    """A centre with its standard error: Student's interval and two-sided test, from one t."""
    if se == 0.0:
        return Interval(centre, centre, centre, 1.0 if centre == 0.0 else 0.0, method)
    q = t_ppf(0.5 + confidence / 2, df)
    p = 2 * t_sf(abs(centre / se), df)
    return Interval(centre, centre - q * se, centre + q * se, p, method)


def t_interval(d: FloatArray, confidence: float = 0.95, seed: int = 0) -> Interval:
    same = _degenerate(d, "t")
    if same:
        return same
    se = float(np.std(d, ddof=1)) / math.sqrt(d.size)
    return _student(float(np.mean(d)), se, d.size - 1, confidence, "t")


def trimmed_interval(d: FloatArray, confidence: float = 0.95, seed: int = 0) -> Interval:
    """Yuen's trimmed-mean t interval (20% trimmed from each end)."""
    same = _degenerate(d, "trimmed")
    if same:
        return same
    n = d.size
    g = math.floor(TRIM * n)
    s = np.sort(d)
    h = n - 2 * g
    if h < 2:
        return t_interval(d, confidence)
    centre = float(np.mean(s[g:n - g]))
    w = np.concatenate([np.full(g, s[g]), s[g:n - g], np.full(g, s[n - g - 1])])
    sw2 = float(np.var(w, ddof=1))
    se = math.sqrt(sw2) / ((1 - 2 * g / n) * math.sqrt(n)) if sw2 > 0 else 0.0
    return _student(centre, se, h - 1, confidence, "trimmed")


def hl_interval(d: FloatArray, confidence: float = 0.95, seed: int = 0) -> Interval:
    """Hodges-Lehmann centre, the signed-rank interval, and the signed-rank test."""
    same = _degenerate(d, "hl")
    if same:
        return same
    n = d.size
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2.0)
    centre = float(np.median(walsh))
    alpha = 1 - confidence
    # k: the largest count with P(T <= k-1) <= alpha/2 under the exact null distribution of the
    # signed-rank statistic (scipy's wilcoxon for the p-value; the quantile from its pmf).
    dist = _signed_rank_cdf(n)
    k = int(np.searchsorted(dist, alpha / 2, side="right"))
    m = walsh.size
    if k < 1 or k > m // 2:
        low, high = math.nan, math.nan  # too few rounds for any interval at this level
    else:
        low, high = float(walsh[k - 1]), float(walsh[m - k])
    p = float(_sps.wilcoxon(d, zero_method="wilcox", alternative="two-sided",
                            method="exact" if n <= 50 else "approx").pvalue)
    return Interval(centre, low, high, p, "hl")


def _signed_rank_cdf(n: int) -> FloatArray:
    """P(T <= t) for t = 0 .. n(n+1)/2 of the signed-rank statistic with n non-zero values."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    out: FloatArray = np.cumsum(counts) / 2.0 ** n
    return out


def median_interval(d: FloatArray, confidence: float = 0.95, seed: int = 0,
                    resamples: int = 4000) -> Interval:
    """Median with a percentile bootstrap interval; the sign test for p."""
    same = _degenerate(d, "median")
    if same:
        return same
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, d.size, size=(resamples, d.size))
    reps = np.median(d[idx], axis=1)
    tail = (1 - confidence) / 2
    low = float(np.quantile(reps, tail, method="lower"))
    high = float(np.quantile(reps, 1 - tail, method="higher"))
    pos, neg = int(np.sum(d > 0)), int(np.sum(d < 0))
    p = float(_sps.binomtest(pos, pos + neg).pvalue) if pos + neg else 1.0
    return Interval(float(np.median(d)), low, high, p, "median")


def covariate_interval(d: FloatArray, c: FloatArray, confidence: float = 0.95,
                       alpha: float = 0.05) -> Interval:
    """The t interval of d adjusted for a covariate: c_r is how much faster the machine ran
    during round r's first sample than during its second (the log ratio of a loop's speeds on
    another CPU). d is regressed on c and the estimate is the intercept, d where the machine
    ran both samples at one speed. Only when the slope is significant (p < alpha): a covariate
    that does not predict d costs a degree of freedom and buys nothing, so then it is plain t.
    """
    n = d.size
    ok = np.isfinite(c)
    if n < 4 or not bool(np.all(ok)) or float(np.std(c)) == 0.0:
        return t_interval(d, confidence)
    cm = float(np.mean(c))
    sxx = float(np.sum((c - cm) ** 2))
    slope = float(np.sum((c - cm) * (d - np.mean(d)))) / sxx
    icpt = float(np.mean(d)) - slope * cm
    resid = d - (icpt + slope * c)
    df = n - 2
    s2 = float(np.sum(resid * resid)) / df
    if s2 == 0.0:
        return Interval(icpt, icpt, icpt, 1.0 if icpt == 0.0 else 0.0, "t+covariate")
    se_slope = math.sqrt(s2 / sxx)
    if 2 * t_sf(abs(slope / se_slope), df) >= alpha:
        return t_interval(d, confidence)
    se = math.sqrt(s2 * (1.0 / n + cm * cm / sxx))
    return _student(icpt, se, df, confidence, "t+covariate")


def welch_interval(la: FloatArray, lb: FloatArray, confidence: float = 0.95) -> Interval:
    """Unpaired: the difference of the mean logs, Welch's interval and test (no equal-variance
    assumption: two ABIs' programs need not vary alike)."""
    if la.size < 2 or lb.size < 2:
        return Interval(float(np.mean(la) - np.mean(lb)), math.nan, math.nan, math.nan, "welch")
    centre = float(np.mean(la) - np.mean(lb))
    va, vb = float(np.var(la, ddof=1)) / la.size, float(np.var(lb, ddof=1)) / lb.size
    se = math.sqrt(va + vb)
    if se == 0.0:
        return _student(centre, 0.0, 1.0, confidence, "welch")
    df = (va + vb) ** 2 / ((va * va / (la.size - 1)) + (vb * vb / (lb.size - 1)))
    return _student(centre, se, df, confidence, "welch")


METHODS: dict[str, Callable[..., Interval]] = {
    "t": t_interval, "trimmed": trimmed_interval, "hl": hl_interval, "median": median_interval,
}

# Chosen by bench/estimators.py on this machine's recorded rounds and on synthetic data with
# outliers (docs/method.md): t held 94.2-96.5% on every synthetic set and was the narrowest on
# normal rounds; trimmed fell to 92.6-93.7% on several, the Wilcoxon (hl) interval does not
# exist at 5 rounds, and the bootstrap median fell below 94.5% on most. t also predicts the
# rounds still needed (its width shrinks as 1/sqrt(n)), which the budget allocation uses.
DEFAULT = "t"


def interval(d: FloatArray, method: str = DEFAULT, confidence: float = 0.95,
             seed: int = 0) -> Interval:
    return METHODS[method](d, confidence=confidence, seed=seed)
