"""The distribution functions the default analysis needs, from scipy.special, not scipy.stats.

Every report, run and comparison computes Student-t quantiles and tail probabilities and the
sign test's order statistic; scipy.stats costs about 0.8 CPU s to import, scipy.special, which
holds the same functions, about 0.3. The values are scipy.stats' own (t.ppf, t.sf) or, for the
median's interval, the same integer rank: tests/invariants/test_distributions.py compares each
with scipy.stats on generated arguments, edge values included. What only other estimators use
(the Wilcoxon and binomial tests) still comes from scipy.stats, at its first use.
"""

from __future__ import annotations

import math

from .lazy import lazy_module

_sc = lazy_module("scipy.special")


def t_ppf(q: float, df: float) -> float:
    """scipy.stats.t.ppf(q, df): the Student-t quantile (nan where df <= 0 or q is outside
    [0, 1]; -inf at q = 0, which stdtrit alone gets wrong)."""
    if q == 0 and df > 0:
        return -math.inf
    return float(_sc.stdtrit(df, q))


def t_sf(x: float, df: float) -> float:
    """scipy.stats.t.sf(x, df): P(T > x) for Student's t with df degrees of freedom."""
    return float(_sc.stdtr(df, -x))


def _half_binom_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2); 0 below the support."""
    return 0.0 if k < 0 else float(_sc.bdtr(min(k, n), n, 0.5))


def sign_test_rank(n: int, tail: float) -> int:
    """What `int(binom.ppf(tail, n, 0.5))`, lowered by one where `binom.cdf(rank - 1) > tail`,
    gives for 0 < tail < 1 (stats.median_ci): the smallest k with P(X <= k) >= tail, found by
    bisection (O(log n) evaluations, also for a million samples)."""
    lo, hi = 0, n  # P(X <= n) = 1 >= tail
    while lo < hi:
        mid = (lo + hi) // 2
        if _half_binom_cdf(mid, n) >= tail:
            hi = mid
        else:
            lo = mid + 1
    if _half_binom_cdf(lo - 1, n) > tail:
        lo -= 1
    return lo
