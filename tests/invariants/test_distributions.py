"""abibench.distributions gives scipy.stats' own values from scipy.special (a third of the
import). The family: a cheaper route to a number the analysis already computed, which must not
change it. Generated arguments, edge values (q at 0 and 1, df at 0, below, infinite, nan)
included; the longer run: bench/distributions.py."""

from __future__ import annotations

import math

import scipy.stats as sps
from hypothesis import given
from hypothesis import strategies as st

from abibench.distributions import sign_test_rank, t_ppf, t_sf

DFS = st.one_of(st.floats(min_value=-2, max_value=1e6), st.sampled_from(
    [0.0, 1.0, 2.0, math.inf, math.nan, 1e300]), st.integers(min_value=1, max_value=10_000))
PROBS = st.one_of(st.floats(min_value=-0.5, max_value=1.5),
                  st.sampled_from([0.0, 1.0, 0.975, 0.5, 0.025, math.nan]))
XS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0]))


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@given(q=PROBS, df=DFS)
def test_t_quantile_is_scipy_stats_own(q: float, df: float) -> None:
    assert _same(t_ppf(q, df), float(sps.t.ppf(q, df))), (q, df)


@given(x=XS, df=DFS)
def test_t_tail_is_scipy_stats_own(x: float, df: float) -> None:
    assert _same(t_sf(x, df), float(sps.t.sf(x, df))), (x, df)


def reference_rank(n: int, tail: float) -> int:
    """stats.median_ci's rank as it was computed with scipy.stats."""
    lower = int(sps.binom.ppf(tail, n, 0.5))
    if sps.binom.cdf(lower - 1, n, 0.5) > tail:
        lower -= 1
    return lower


# Dyadic tails (1/16, 1/64 ...) are where P(X <= k) can equal the tail exactly.
TAILS = st.one_of(st.floats(min_value=1e-9, max_value=0.5, exclude_max=True),
                  st.sampled_from([0.025, 0.005, 0.05, 0.0625, 0.125, 0.25, 0.015625,
                                   0.0009765625]))


@given(n=st.integers(min_value=2, max_value=200_000), tail=TAILS)
def test_sign_test_rank_is_the_one_scipy_stats_gave(n: int, tail: float) -> None:
    assert sign_test_rank(n, tail) == reference_rank(n, tail), (n, tail)


def test_small_samples_every_confidence_step() -> None:
    # Every n a test run or a fleet stores (up to a few hundred rounds), on a grid of tails.
    for n in range(2, 400):
        for tail in (0.025, 0.05, 0.005, 0.0625, 0.125, 0.25, 0.5 - 1e-12):
            assert sign_test_rank(n, tail) == reference_rank(n, tail), (n, tail)
