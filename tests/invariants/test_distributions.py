"""abibench.distributions computes Student's t and the sign test's rank itself (no scipy at
run time); scipy is the reference, within the module's stated contract. The family: our own
evaluation of a mathematical function the analysis used to take from a library, which must
give the library's number (to 1e-12, the rank exactly). Generated arguments, edge values (q at
0 and 1, df at 0, below, tiny, infinite, nan; x huge) included; the longer run:
bench/distributions.py.

Where scipy.stats itself is off the mathematical function, the reference is scipy computed
another way (or the function's leading term), said at each: beyond x^2 / df = 1e13 the tail's
leading term through scipy's betaln (scipy squares x into overflow: its t.sf is 0 there and its
t.ppf saturates near 1e154); within 1e-3 of the median the quantile through scipy's inverse
incomplete beta function (t.ppf stops at an absolute error near 1e-17, 1e-10 relative there);
a subnormal tail by its round trip (t.ppf misses by up to 2%); below df = 1e-10 the leading
term df asinh(x / sqrt(df)) of P(|T| < x) (t.ppf(0.75, 1e-300) is 6704, the function's beyond
the largest float)."""

from __future__ import annotations

import math
import sys

import scipy.special as spc
import scipy.stats as sps
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.distributions import sign_test_rank, t_ppf, t_sf

DFS = st.one_of(st.floats(min_value=-2, max_value=1e6), st.sampled_from(
    [0.0, 1.0, 2.0, math.inf, math.nan, 1e300, 1e-3, 0.5]),
    st.integers(min_value=1, max_value=10_000), st.floats(min_value=1, max_value=1e6))
PROBS = st.one_of(st.floats(min_value=-0.5, max_value=1.5),
                  st.sampled_from([0.0, 1.0, 0.975, 0.5, 0.025, math.nan, 0.995, 1e-300]),
                  st.floats(min_value=0.4999, max_value=0.5001),
                  st.floats(min_value=1e-300, max_value=1e-3))
XS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0]),
               st.floats(min_value=-60, max_value=60))

# A relative error of 1e-12; values below 1e-300 to an absolute one.
REL, ABS = 1e-12, 1e-300
_LOG_MAX = math.log(1.7976931348623157e308)


def close(ours: float, ref: float, rel: float = REL) -> bool:
    if math.isnan(ref) or math.isnan(ours):
        return math.isnan(ref) and math.isnan(ours)
    if math.isinf(ref) or math.isinf(ours):
        return ours == ref
    return abs(ours - ref) <= max(rel * abs(ref), ABS)


def _log_far_tail(log_w: float, df: float) -> float:
    """log P(|T| > x) where w = df / (df + x^2) < 1e-13: I_w(df/2, 1/2) = w^a / (a B(a, 1/2))
    times 1 + O(w), through scipy's betaln."""
    a = 0.5 * df
    return a * log_w - math.log(a) - float(spc.betaln(a, 0.5))


def _log_w(x: float, df: float) -> float:
    r = abs(x) / math.sqrt(df)
    if r > 1e10:  # log1p(r^2) = 2 log r to 1e-20; r itself may overflow
        return -2.0 * (math.log(abs(x)) - 0.5 * math.log(df))
    return -math.log1p(r * r)


TINY = 1e-10  # below this df, scipy is not the function (its t.ppf(0.75, 1e-300) is 6704)


def _centre_s(x: float, df: float) -> float:
    """asinh(x / sqrt(df)): t = sqrt(df) sinh s, in which P(|T| < x) ~ df s for tiny df."""
    r = x / math.sqrt(df)
    return math.asinh(r) if r < 1e300 else math.log(2.0) + math.log(x) - 0.5 * math.log(df)


def reference_sf(x: float, df: float) -> float:
    """scipy.stats.t.sf; beyond x^2 / df = 1e13 (where scipy squares x into overflow, or has p
    below the normal floats) the tail's leading term, exact there to 1e-13."""
    if math.isfinite(x) and 0 < df < TINY:
        # P(|T| < x) = (2 / B(df/2, 1/2)) int_0^s cosh^-df = df s (1 + O(df s)): 1e-15 here.
        return 0.5 - math.copysign(0.5 * df * _centre_s(abs(x), df), x)
    if math.isfinite(x) and 0 < df <= 1e6 and _log_w(x, df) < -30:
        half = 0.5 * math.exp(_log_far_tail(_log_w(x, df), df))
        return half if x > 0 else 1.0 - half
    if 0 < abs(x) <= 1 and 0 < df <= 1e6:
        # 1/2 -+ P(|T| < |x|) / 2 through the incomplete beta function: t.sf itself is off
        # near 0 at df = 1 (t.sf(1e-9, 1) is 0.5, the function's 0.5 - atan(1e-9) / pi).
        inner = float(spc.betainc(0.5, 0.5 * df, x * x / (df + x * x)))
        return 0.5 - math.copysign(0.5 * inner, x)
    return float(sps.t.sf(x, df))


def reference_ppf(q: float, df: float) -> float:
    """scipy.stats.t.ppf; where its answer is x^2 / df > 1e13, the far tail's inverse; within
    1e-3 of the median, the inverse of the incomplete beta function."""
    ref = float(sps.t.ppf(q, df))
    if not (0 < q < 1 and 0 < df <= 1e6) or q == 0.5:
        return ref
    sign = 1.0 if q > 0.5 else -1.0
    if df < TINY:  # the inverse of df s above: x = sqrt(df) sinh(|2q - 1| / df)
        s = abs(2.0 * q - 1.0) / df
        log_x = 0.5 * math.log(df) + (math.log(math.sinh(s)) if s < 20 else s - math.log(2.0))
        return sign * (math.exp(log_x) if log_x < _LOG_MAX else math.inf)
    p = 1.0 - q if q > 0.5 else q  # exact for q > 1/2
    a = 0.5 * df
    log_w = (math.log(2.0 * p) + math.log(a) + float(spc.betaln(a, 0.5))) / a
    if log_w < -30:
        log_x = 0.5 * math.log(df) - 0.5 * log_w
        return sign * (math.exp(log_x) if log_x < _LOG_MAX else math.inf)
    if abs(q - 0.5) < 1e-3:
        y = float(spc.betaincinv(0.5, 0.5 * df, 2.0 * abs(q - 0.5)))  # x^2 / (df + x^2)
        return sign * math.sqrt(df * y / (1.0 - y))
    return ref


def ppf_tolerance(q: float, df: float) -> float:
    """The quantile's condition number, 1/df below df = 1 (P(|T| > x) ~ c x^-df); below TINY,
    the error of the reference itself, df (s^2 + 1)."""
    if not df > 0:
        return REL
    if df < TINY:
        s = abs(2.0 * q - 1.0) / df
        return REL / df + df * (s * s + 1.0)
    return REL / min(df, 1.0)


@given(q=PROBS, df=DFS)
@settings(max_examples=300)
def test_t_quantile_is_the_function_scipy_computes(q: float, df: float) -> None:
    p = min(q, 1.0 - q)
    if 0 < p < sys.float_info.min and TINY <= df <= 1e6 and reference_ppf(q, df) == float(
            sps.t.ppf(q, df)):
        # A subnormal tail, which scipy's t.ppf misses by up to a few per cent: our
        # quantile's tail is q to its few digits, beyond the smallest normal float's.
        x = abs(t_ppf(q, df))
        assert abs(t_sf(x, df) - p) <= 1e-9 * p + 4 * 5e-324, (q, df, x)
        assert x >= abs(t_ppf(sys.float_info.min, df)), (q, df, x)
        return
    assert close(t_ppf(q, df), reference_ppf(q, df), ppf_tolerance(q, df)), (
        q, df, t_ppf(q, df), reference_ppf(q, df))


@given(x=XS, df=DFS)
@settings(max_examples=300)
def test_t_tail_is_the_function_scipy_computes(x: float, df: float) -> None:
    assert close(t_sf(x, df), reference_sf(x, df)), (x, df, t_sf(x, df), reference_sf(x, df))


def test_edges_are_scipy_stats_own() -> None:
    for df in (0.0, -1.0, math.nan, -math.inf, 1.0, math.inf):
        for q in (0.0, 1.0, -0.1, 1.1, 0.5, math.nan, -math.inf):
            assert close(t_ppf(q, df), float(sps.t.ppf(q, df))), (q, df)
        for x in (math.inf, -math.inf, math.nan, 0.0, -0.0):
            assert close(t_sf(x, df), float(sps.t.sf(x, df))), (x, df)


def reference_rank(n: int, tail: float) -> int:
    """stats.median_ci's rank as it was computed with scipy.stats; where scipy's P(X <= k) at
    the rank or below it is within 1e-12 of the tail, the integer definition (scipy's rounding
    decided those: its rank of n = 193 at the tail 0.5 - 2^-54 was 97, the definition's 96, as
    P(X <= 96) = 1/2 exactly)."""
    lower = int(sps.binom.ppf(tail, n, 0.5))
    if sps.binom.cdf(lower - 1, n, 0.5) > tail:
        lower -= 1
    near = [abs(float(sps.binom.cdf(k, n, 0.5)) - tail) <= 1e-12 * tail
            for k in (lower - 1, lower)]
    return _exact_rank(n, tail) if any(near) else lower


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


def _exact_rank(n: int, tail: float) -> int:
    """The smallest k with sum_{i <= k} C(n, i) >= tail 2^n, in integers (the definition)."""
    num, den = tail.as_integer_ratio()
    total, coefficient = 0, 1
    for k in range(n + 1):
        total += coefficient  # C(n, k)
        if total * den >= num << n:
            return k
        coefficient = coefficient * (n - k) // (k + 1)
    return n


@given(n=st.integers(min_value=1001, max_value=4000), tail=TAILS)
@settings(max_examples=40, deadline=None)
def test_the_float_path_gives_the_exact_rank(n: int, tail: float) -> None:
    # Above 1000 samples the CDF is a float, the comparison integers only near a tie.
    assert sign_test_rank(n, tail) == _exact_rank(n, tail), (n, tail)


def test_a_tie_is_decided_in_integers() -> None:
    # P(X <= (n - 1) / 2) = 1/2 exactly for odd n, on both paths; the next float below is not.
    for n in (999, 1001, 4001):
        assert sign_test_rank(n, 0.5) == (n - 1) // 2
        assert sign_test_rank(n, math.nextafter(0.5, 1.0)) == (n + 1) // 2
