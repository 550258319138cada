"""Student's t and the sign test's rank, in pure Python: the default analysis imports no scipy.

Every report, run and comparison computes Student-t quantiles and tail probabilities and the
sign test's order statistic for the median's interval. scipy.special, which has them, costs
0.3-0.4 CPU s to import in every such command; these functions are the mathematics itself
(math.lgamma, math.erfc, a continued fraction, Newton steps), a few hundred microseconds a call.

Accuracy contract (tests/invariants/test_distributions.py holds it against scipy, the reference,
on generated arguments, and says where scipy.stats is itself off the function and which other
route through scipy it takes there; bench/distributions.py runs longer):
- `t_sf` and `t_ppf` agree with scipy.stats' t.sf and t.ppf within a relative error of 1e-12
  (an absolute one of 1e-300 for values below that), for df up to 1e6 and infinite, x and q
  anywhere. Where the quantile itself is ill-conditioned (df below 1, where a relative change
  of the tail probability moves the quantile 1/df times as much), within 1e-12 / df. The
  values are continuous in their arguments but not scipy's bit for bit: a confidence interval
  may move in its 12th significant digit (docs/method.md section 10, round 8).
- Edge values are scipy.stats': nan where df <= 0, df or the argument is nan, or q is outside
  [0, 1]; t_ppf(0) = -inf, t_ppf(1) = +inf; df = inf is the normal distribution.
- `sign_test_rank` is exact: the smallest k with P(X <= k) >= tail for X ~ Binomial(n, 1/2),
  the comparison decided in integers (P(X <= k) * 2^n is a sum of binomial coefficients)
  wherever floating point could not tell the two apart, so the rank never depends on rounding.
"""

from __future__ import annotations

import math

_LOG_SQRT_PI = 0.5 * math.log(math.pi)
_LOG_MAX = math.log(1.7976931348623157e308)
_EPS = 3e-16
_TINY = 1e-300
_MAX_TERMS = 1_000_000
# Above this df/2 the upper tail is integrated (_upper_tail_integral); above _NORMAL_ABOVE, df
# is the normal distribution's, as scipy.stats has it (they differ by less than 1e-13 there).
_QUADRATURE_ABOVE = 50.0
_NORMAL_ABOVE = 1e20


# --- the t distribution: P(|T| > x) = I_w(df/2, 1/2), w = df / (df + x^2) -------------------

def _stirling_rest(z: float) -> float:
    """lgamma(z) - ((z - 1/2) log z - z + log(2 pi)/2) for z >= 10 (Stirling's series; the
    next term is below 2e-18)."""
    r = 1.0 / (z * z)
    return (1 / 12 - r * (1 / 360 - r * (1 / 1260 - r * (1 / 1680 - r * (
        1 / 1188 - r * (691 / 360360 - r * (1 / 156 - r * 3617 / 122400))))))) / z


def _log_a_beta_half(a: float) -> float:
    """log(a * B(a, 1/2)) = log(sqrt(pi) * Gamma(a + 1) / Gamma(a + 1/2)), accurate in absolute
    terms for every a > 0 (lgamma's difference would lose digits to cancellation for large a)."""
    if a < 10:
        return _LOG_SQRT_PI + math.lgamma(a + 1) - math.lgamma(a + 0.5)
    z = a + 0.5
    # lgamma(z + 1/2) - lgamma(z) by Stirling, the large terms cancelled analytically.
    diff = (z * math.log1p(0.5 / z) - 0.5) + 0.5 * math.log(z) + (
        _stirling_rest(a + 1) - _stirling_rest(z))
    return _LOG_SQRT_PI + diff


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz), for x < (a + 1) / (a + b + 2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            step = d * c
            h *= step
        if abs(step - 1.0) < _EPS:
            break
    return h


def _upper_tail_integral(x: float, df: float, lab: float) -> float:
    """P(T > x) for x > 0 as the integral of the density from x, by the exp-sinh rule.

    For large df the continued fraction needs w = df / (df + x^2) near 1, whose rounding moves
    the result by about df/2 ulps; the density needs only log1p(t^2 / df), accurate for any df.
    The substitution t = x + L exp(pi/2 sinh u), L the density's decay length at x, and the
    trapezoid rule in u converge double-exponentially; the step is halved until the sum
    stops changing."""
    half = 0.5 * (df + 1.0)
    log_c = 0.5 * math.log(df) - math.log(2.0) - lab  # log(1 / (sqrt(df) B(df/2, 1/2)))
    scale = (df + x * x) / ((df + 1.0) * x) if x < 1e150 else x / df  # 1 / (-d log f / dt)
    log_scale = math.log(scale)

    def term(u: float) -> float:
        s = scale * math.exp(0.5 * math.pi * math.sinh(u))
        t = x + s
        r = t / math.sqrt(df)
        g = half * (math.log1p(r * r) if r < 1e150 else 2.0 * math.log(r))
        return math.exp(log_c - g) * s * 0.5 * math.pi * math.cosh(u)

    def side(start: float, step: float, sign: int) -> float:
        total, k = 0.0, 0
        while True:
            u = sign * (start + k * step)
            if abs(u) > 6.5 or 0.5 * math.pi * math.sinh(u) + log_scale > 700:
                return total  # s beyond e^+-520 decay lengths (or overflowing): nothing left
            v = term(u)
            total += v
            if v < 1e-18 * total and k > 2:
                return total
            k += 1

    h = 0.5
    total = term(0.0) + side(h, h, 1) + side(h, h, -1)
    value = h * total
    for _ in range(8):
        # The new points of the halved step: odd multiples of h/2.
        total += side(h / 2, h, 1) + side(h / 2, h, -1)
        h /= 2
        new = h * total
        if abs(new - value) <= 1e-10 * new:  # the error about squares with each halving
            return new
        value = new
    return value


def _log_terms(x: float, df: float) -> tuple[float, float]:
    """(log w, log(1 - w)) for w = df / (df + x^2), without overflowing x^2 or df + x^2."""
    r = abs(x) / math.sqrt(df)
    if r > 1e150:  # x^2 / df would overflow; log1p(df / x^2) is 0 to double precision
        return -2.0 * (math.log(abs(x)) - 0.5 * math.log(df)), 0.0
    t = r * r
    lw = -math.log1p(t)
    return lw, math.log(t) + lw if t > 0 else -math.inf


def _two_tails(x: float, df: float) -> tuple[float, float]:
    """(P(|T| > |x|), P(|T| < |x|)): the one the continued fraction gives directly is accurate to
    a few ulps relative; the other is 1 minus it, accurate where it is not small."""
    if x == 0:
        return 1.0, 0.0
    a = 0.5 * df
    lw, ly = _log_terms(x, df)
    w, y = math.exp(lw), math.exp(ly)
    lab = _log_a_beta_half(a)
    # The fraction converges for w < (a + 1) / (a + 3/2 + 1): said of y, which is not rounded
    # to 1 where df is large.
    if y > 1.5 / (a + 2.5):
        if a > _QUADRATURE_ABOVE:
            outer = 2.0 * _upper_tail_integral(abs(x), df, lab)
        else:
            outer = math.exp(a * lw + 0.5 * ly - lab) * _beta_fraction(a, 0.5, w)
        outer = min(outer, 1.0)  # a few ulps above 1 where df is tiny
        # Below df = 1, 1 - outer is small even far out (the mass is in the tails), and the
        # quantile near the median would take its rounding 1/df times over: integrate it.
        return outer, (_centre_integral(abs(x), df, lab) if df < 1.0 else 1.0 - outer)
    inner = min(2.0 * a * math.exp(0.5 * ly + a * lw - lab) * _beta_fraction(0.5, a, y), 1.0)
    return 1.0 - inner, inner


_GL_RULE: tuple[tuple[float, float], ...] = ()


def _gauss_legendre() -> tuple[tuple[float, float], ...]:
    """The 12-point Gauss-Legendre rule on [-1, 1] (nodes by Newton's method on P_12), made at
    its first use and kept (built whole, then bound: two threads at once make the same rule)."""
    global _GL_RULE
    if not _GL_RULE:
        n, rule = 12, []
        for i in range(1, n + 1):
            z = math.cos(math.pi * (i - 0.25) / (n + 0.5))
            for _ in range(100):
                p0, p1 = 1.0, z
                for k in range(2, n + 1):
                    p0, p1 = p1, ((2 * k - 1) * z * p1 - (k - 1) * p0) / k
                deriv = n * (z * p1 - p0) / (z * z - 1.0)
                z, old = z - p1 / deriv, z
                if abs(z - old) < 1e-16:
                    break
            rule.append((z, 2.0 / ((1.0 - z * z) * deriv * deriv)))
        _GL_RULE = tuple(rule)
    return _GL_RULE


def _centre_integral(x: float, df: float, lab: float) -> float:
    """P(|T| < x) for x > 0 as (2 / B(df/2, 1/2)) * integral_0^S cosh(s)^-df ds, S = asinh(x /
    sqrt(df)) (t = sqrt(df) sinh s). Past s = 20, cosh(s)^-df = 2^df e^(-df s) to double
    precision, integrated exactly; below, Gauss-Legendre on unit pieces (the integrand's
    nearest singularities are pi/2 off the axis: 12 points give about 1e-16)."""
    r = x / math.sqrt(df)
    big_s = math.asinh(r) if r < 1e300 else math.log(2.0) + math.log(x) - 0.5 * math.log(df)
    edge = min(big_s, 20.0)
    total, start = 0.0, 0.0
    rule = _gauss_legendre()
    while start < edge:
        end = min(start + 1.0, edge)
        half, mid = 0.5 * (end - start), 0.5 * (end + start)
        total += half * sum(wt * math.exp(-df * math.log(math.cosh(mid + half * z)))
                            for z, wt in rule)
        start = end
    if big_s > edge:
        total += 2.0 ** df * math.exp(-df * edge) * -math.expm1(-df * (big_s - edge)) / df
    return min(df * math.exp(-lab) * total, 1.0)


def _normal_sf(x: float) -> float:
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def t_sf(x: float, df: float) -> float:
    """P(T > x) for Student's t with df degrees of freedom (scipy.stats.t.sf; contract above)."""
    if math.isnan(x) or math.isnan(df) or df <= 0:
        return math.nan
    if math.isinf(x):
        return 0.0 if x > 0 else 1.0
    if df > _NORMAL_ABOVE:
        return _normal_sf(x)
    outer, inner = _two_tails(x, df)
    return 0.5 * outer if x > 0 else 0.5 + 0.5 * inner


_MAX_FLOAT = 1.7976931348623157e308


def _parts(x: float, df: float) -> tuple[float, float, float]:
    """(P(|T| > x), P(|T| < x), log(2 f(x))) for x > 0, f the density; df above _NORMAL_ABOVE
    is the normal distribution."""
    if df > _NORMAL_ABOVE:
        z = x / math.sqrt(2.0)
        return math.erfc(z), math.erf(z), -0.5 * x * x + math.log(2.0 / math.sqrt(2 * math.pi))
    outer, inner = _two_tails(x, df)
    lw, _ = _log_terms(x, df)
    log_c = 0.5 * math.log(df) - math.log(2.0) - _log_a_beta_half(0.5 * df)
    return outer, inner, math.log(2.0) + log_c + 0.5 * (df + 1.0) * lw


def _guess(p: float, df: float) -> float:
    """A start for the x > 0 with P(T > x) = p < 1/2: the normal quantile (Abramowitz and
    Stegun 26.2.23, within 5e-4) widened for df by the first Cornish-Fisher terms."""
    t = math.sqrt(-2.0 * math.log(p))
    z = t - (2.515517 + t * (0.802853 + t * 0.010328)) / (
        1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308)))
    z = max(z, 1e-3)
    if df > _NORMAL_ABOVE or df < 1.0:  # below 1, the power-law bound is the better start
        return z
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df * df)


def _upper_bound(p: float, df: float) -> float:
    """An x with P(T > x) <= p (the density's power-law bound, whose tail is 2p's), capped at
    the largest float."""
    if df > _NORMAL_ABOVE:
        return math.sqrt(-2.0 * math.log(p)) + 1.0
    # 2 p = (2 / df) c df^((df + 1) / 2) x^-df, c = 1 / (sqrt(df) B(df/2, 1/2)), for log x:
    log_x = 0.5 * math.log(df) - (math.log(2.0 * p) + _log_a_beta_half(0.5 * df)) / df
    return math.exp(log_x) if log_x < _LOG_MAX else _MAX_FLOAT


def _isf(p: float, df: float) -> float:
    """The x >= 0 with P(T > x) = p for 0 < p < 1/2: Newton steps in log x, kept inside a
    bracket (bisection where a step would leave it). Above p = 1/4 it solves
    P(|T| < x) = 1 - 2p (exact in floating point), below log P(|T| > x) = log 2p, so each side
    is solved where its values are accurate."""
    near_centre = p >= 0.25
    target = 1.0 - 2.0 * p if near_centre else math.log(2.0 * p)
    lo, hi = 0.0, _upper_bound(p, df)
    x = min(_guess(p, df), hi)

    def miss(x: float) -> tuple[float, float]:
        """(G, dG/d log x), G increasing in x, zero at the answer."""
        outer, inner, log_dens = _parts(x, df)
        log_slope = math.log(x) + log_dens  # x 2 f(x), which underflows in a far tail
        if near_centre:
            return inner - target, math.exp(log_slope)
        if outer <= 0.0:
            return math.inf, math.inf
        return target - math.log(outer), math.exp(log_slope - math.log(outer))

    if hi >= _MAX_FLOAT and miss(hi)[0] < 0:
        return math.inf
    bound_tried = 0.0
    for _ in range(200):
        g, slope = miss(x)
        if g == 0:
            return x
        if g < 0:
            lo = x
            if x >= hi:  # the bound missed by rounding (outer within ulps of 1): widen it
                if hi >= _MAX_FLOAT:
                    return math.inf
                hi = min(16.0 * hi, _MAX_FLOAT)
        else:
            hi = x
        step = -g / slope if slope > 0 and math.isfinite(slope) else math.nan
        nxt = x * math.exp(step) if abs(step) < 700 else math.nan
        if lo <= nxt <= hi and abs(nxt - x) <= 1e-14 * x:
            return nxt  # quadratic convergence: the step after this one would be ~1e-28
        if not nxt < hi and not bound_tried:
            nxt = bound_tried = hi  # a heavy tail, whose power-law bound is close above
        elif not lo < nxt < hi:  # leaves the bracket (or no step): bisect it, in log x
            nxt = math.sqrt(lo * hi) if lo > 0 else hi / 2
            if not lo < nxt < hi:
                return x
        x = nxt
    return x


def t_ppf(q: float, df: float) -> float:
    """The Student-t quantile (scipy.stats.t.ppf; contract above): nan where df <= 0 or q is
    outside [0, 1], -inf at q = 0, +inf at q = 1."""
    if math.isnan(q) or math.isnan(df) or df <= 0 or not 0.0 <= q <= 1.0:
        return math.nan
    if q == 0.0:
        return -math.inf
    if q == 1.0:
        return math.inf
    if q == 0.5:
        return 0.0
    # P(T > x) = 1 - q is exact for q >= 1/2; below, the quantile is -x with P(T > x) = q.
    return _isf(1.0 - q, df) if q > 0.5 else -_isf(q, df)


# --- the sign test's rank: the smallest k with P(X <= k) >= tail, X ~ Binomial(n, 1/2) ------

_EXACT_UP_TO = 1000  # sample counts whose cumulative sums are summed in integers outright
_MARGIN = 1e-9  # the float CDF's relative error bound, with room: nearer than this, integers
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _log_factorial_rest(k: int) -> float:
    """log k! - ((k + 1/2) log k - k + log(2 pi)/2): Stirling's remainder, for every k >= 1."""
    if k < 10:
        return math.lgamma(k + 1.0) - ((k + 0.5) * math.log(k) - k + _LOG_SQRT_2PI)
    return _stirling_rest(float(k))  # log k! = lgamma(k) + log k: the same remainder


def _deviance(x: float, mean: float) -> float:
    """x log(x / mean) + mean - x, without the cancellation of its two large terms near x =
    mean (the series in v = (x - mean) / (x + mean))."""
    if abs(x - mean) >= 0.1 * (x + mean):
        return x * math.log(x / mean) + mean - x
    v = (x - mean) / (x + mean)
    total = (x - mean) * v
    term, v2, j = 2.0 * x * v, v * v, 1
    while True:
        term *= v2
        new = total + term / (2 * j + 1)
        if new == total:
            return total
        total, j = new, j + 1


def _log_half_binom_pmf(k: int, n: int) -> float:
    """log P(X = k) for X ~ Binomial(n, 1/2), 0 < k < n, accurate to a few ulps for any n
    (the saddle-point form: the deviances from n/2 and Stirling's remainders, no lgamma of n)."""
    m = n - k
    half = 0.5 * n
    return (_log_factorial_rest(n) - _log_factorial_rest(k) - _log_factorial_rest(m)
            - _deviance(k, half) - _deviance(m, half)
            + 0.5 * math.log(n / (2 * math.pi * k * m)))


def _half_binom_cdf(k: int, n: int) -> float:
    """P(X <= k) in floating point, relative error well below _MARGIN: P(X = k) times the sum of
    the ratios P(X = k - j) / P(X = k), all positive, summed until they stop counting."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if 2 * k >= n:  # the upper side as the complement, which is then at most 1/2
        return 1.0 - _half_binom_cdf(n - k - 1, n)
    pmf = math.exp(-n * math.log(2.0)) if k == 0 else math.exp(_log_half_binom_pmf(k, n))
    total, ratio, j = 1.0, 1.0, 0
    while k - j > 0:
        ratio *= (k - j) / (n - k + j + 1)
        total += ratio
        if ratio < 1e-17 * total:
            break
        j += 1
    return pmf * total


def _cdf_times_2n_at_least(k: int, n: int, num: int, den: int) -> bool:
    """sum_{i <= k} C(n, i) * den >= num * 2^n: P(X <= k) >= num / den, in integers."""
    total, c = 0, 1
    for i in range(k + 1):
        total += c
        c = c * (n - i) // (i + 1)
    return total * den >= num << n


def _at_least(k: int, n: int, tail: float) -> bool:
    """P(X <= k) >= tail, decided in integers wherever rounding could decide it."""
    if k < 0:
        return tail <= 0
    if k >= n:
        return tail <= 1
    if n > _EXACT_UP_TO:
        cdf = _half_binom_cdf(k, n)
        if abs(cdf - tail) > _MARGIN * tail + 1e-290:  # (and no subnormal P(X = k) to trust)
            return cdf > tail
    return _cdf_times_2n_at_least(k, n, *tail.as_integer_ratio())


def sign_test_rank(n: int, tail: float) -> int:
    """The smallest k with P(X <= k) >= tail for X ~ Binomial(n, 1/2) and 0 < tail < 1 (what
    scipy.stats' `int(binom.ppf(tail, n, 0.5))`, checked one below, gave stats.median_ci).
    Exact (the comparisons decided in integers near a tie); a normal start and a galloping
    search, so a million samples take a few CDF evaluations of O(sqrt(n)) terms. A tail
    outside (0, 1): 0 at or below 0, n at 1, above or nan (what the bisection this replaces
    gave, but -1 below 0; stats.median_ci gives the range for either)."""
    if not 0.0 < tail < 1.0:
        return 0 if tail <= 0.0 else n
    if n <= _EXACT_UP_TO:
        num, den = tail.as_integer_ratio()
        total, c = 0, 1
        for k in range(n + 1):
            total += c
            if total * den >= num << n:
                return k
            c = c * (n - k) // (k + 1)
        return n
    z = t_ppf(tail, math.inf)
    start = min(max(int(0.5 * n + 0.5 * z * math.sqrt(n) - 0.5), 0), n)
    # Gallop to a bracket lo < answer <= hi, then bisect it.
    step = 1
    if _at_least(start, n, tail):
        hi, lo = start, start - 1
        while lo >= 0 and _at_least(lo, n, tail):
            hi, lo, step = lo, lo - step, 2 * step
        lo = max(lo, -1)
    else:
        lo, hi = start, start + 1
        while hi < n and not _at_least(hi, n, tail):
            lo, hi, step = hi, hi + step, 2 * step
        hi = min(hi, n)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _at_least(mid, n, tail):
            hi = mid
        else:
            lo = mid
    return hi
