from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.stats import (
    Ratio,
    geomean_ratio,
    holm,
    outliers,
    ratio_of,
    summarize,
    verdict,
)

TRUE_RATIO = 1.10
N = 30
SIGMA = 0.05
TRIALS = 100


def _lognormal_pair(
    rng: np.random.Generator, ratio: float, *, drift: bool
) -> tuple[list[float], list[float]]:
    a = ratio * rng.lognormal(0.0, SIGMA, N)
    b = rng.lognormal(0.0, SIGMA, N)
    if drift:
        # One factor per round hits both targets alike; the marginal ratio of
        # medians stays exactly `ratio`.
        round_factor = rng.lognormal(0.0, 0.2, N)
        a = a * round_factor
        b = b * round_factor
    return a.tolist(), b.tolist()


# --------------------------------------------------------------------------- summarize


def test_summarize_hand_checked() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0, 10.0])
    assert s.n == 5
    assert s.median == 3.0
    assert s.mean == 4.0
    # squared deviations 9+4+1+0+36 = 50, / (n-1) = 12.5
    assert s.stdev == pytest.approx(math.sqrt(12.5))
    assert (s.min, s.max) == (1.0, 10.0)
    # |x - 3| = 2, 1, 0, 1, 7 -> median 1
    assert s.mad == 1.0
    assert s.cv == pytest.approx(math.sqrt(12.5) / 4.0)


def test_summarize_single_and_zero_mean() -> None:
    one = summarize([7.0])
    assert one.stdev == 0.0
    assert math.isnan(one.cv)
    assert math.isnan(summarize([-1.0, 1.0]).cv)


def test_summarize_empty_raises() -> None:
    with pytest.raises(ValueError):
        summarize([])


def test_nan_sample_rejected() -> None:
    with pytest.raises(ValueError, match="nan"):
        ratio_of([1.0, math.nan], [1.0, 1.0], paired=True)


# --------------------------------------------------------------------------- compare: known truth


@pytest.mark.parametrize("paired", [True, False])
def test_ci_covers_true_ratio(paired: bool) -> None:
    rng = np.random.default_rng(12345)
    covered = 0
    for trial in range(TRIALS):
        a, b = _lognormal_pair(rng, TRUE_RATIO, drift=paired)
        r = ratio_of(a, b, paired=paired, seed=trial)
        assert r.ci_low <= r.ratio <= r.ci_high
        covered += r.ci_low <= TRUE_RATIO <= r.ci_high
    assert covered >= 90, f"95% CI covered the truth in only {covered}/{TRIALS} trials"


def test_pairing_removes_drift() -> None:
    # Under strong per-round drift, resampling rounds jointly must give a much
    # narrower CI than treating the samples as independent.
    rng = np.random.default_rng(7)
    a, b = _lognormal_pair(rng, TRUE_RATIO, drift=True)
    paired = ratio_of(a, b, paired=True)
    unpaired = ratio_of(a, b, paired=False)
    assert paired.half_width() < 0.8 * unpaired.half_width()


def test_paired_estimate_survives_a_step_change_halfway() -> None:
    # A competing load doubles every time from round 15 on: both targets alike. The median of
    # per-round ratios stays on the truth; a ratio of medians would land between the steps.
    rng = np.random.default_rng(11)
    n = 30
    step = np.where(np.arange(n) >= n // 2, 2.0, 1.0)
    b = 0.1 * step * rng.lognormal(0.0, 0.01, n)
    a = 0.1 * step * rng.lognormal(0.0, 0.01, n)
    r = ratio_of(a.tolist(), b.tolist(), paired=True)
    assert abs(r.ratio - 1.0) < 0.01
    assert r.ci_low <= 1.0 <= r.ci_high and r.half_width() < 0.02


def test_paired_identical_not_significant() -> None:
    rng = np.random.default_rng(5)
    quiet = 0
    for trial in range(TRIALS):
        a, b = _lognormal_pair(rng, 1.0, drift=True)
        v = verdict(ratio_of(a, b, paired=True, seed=trial), better="lower", name_a="A",
                    name_b="B")
        quiet += not v.significant
    assert quiet >= 90, f"only {quiet}/{TRIALS} identical paired samples judged not significant"


def test_identical_distributions_not_significant() -> None:
    rng = np.random.default_rng(2024)
    quiet = 0
    for trial in range(TRIALS):
        a, b = _lognormal_pair(rng, 1.0, drift=False)
        v = verdict(ratio_of(a, b, paired=False, seed=trial), better="lower", name_a="A", name_b="B")
        quiet += v.text.startswith("no significant difference") and not v.significant
    assert quiet >= 90, f"only {quiet}/{TRIALS} identical pairs judged not significant"


def test_compare_is_reproducible_and_seed_matters() -> None:
    rng = np.random.default_rng(3)
    a, b = _lognormal_pair(rng, 1.05, drift=False)
    assert ratio_of(a, b, paired=False, seed=1) == ratio_of(a, b, paired=False, seed=1)
    # Only the bootstrap method draws random numbers; its seed makes it repeatable.
    boot = [ratio_of(a, b, paired=True, method="median", seed=k) for k in (1, 1)]
    assert boot[0] == boot[1]
    assert boot[0].method == "median" and ratio_of(a, b, paired=True).method == "t"


def test_hodges_lehmann_exact_shift() -> None:
    b = [1.0, 2.0, 3.0, 4.0]
    a = [1.5 * x for x in b]
    r = ratio_of(a, b, paired=True)
    assert r.ratio == pytest.approx(1.5)
    assert r.hodges_lehmann == pytest.approx(1.5)


@pytest.mark.parametrize("paired", [True, False])
def test_values_not_all_positive_have_no_ratio(paired: bool) -> None:
    # A zero anywhere, even where the median of b is 2, or a negative value: refused, named.
    for a, b, who in (([1.0, 2.0, 3.0], [0.0, 2.0, 4.0], "x86_64"),
                      ([-1.0, -2.0, -3.0], [1.0, 2.0, 3.0], "i386"),
                      ([1.0, 2.0, 3.0], [-5.0, -5.0, -5.0], "x86_64")):
        with pytest.raises(ValueError, match=f"^{who} has values <= 0: a ratio of them means "
                           "nothing, no verdict$"):
            ratio_of(a, b, paired=paired, name_a="i386", name_b="x86_64")


def test_negative_values_never_invert_a_verdict() -> None:
    # The issue: rates of -2 (i386) against -1 (x86_64), higher is better, once gave
    # "x86_64 is 100.0% faster" although i386's value was the higher one.
    with pytest.raises(ValueError, match="values <= 0"):
        ratio_of([-2.0] * 5, [-1.0] * 5, paired=True)


def test_ratios_beyond_floating_point_are_refused() -> None:
    with pytest.raises(ValueError, match="floating point"):
        ratio_of([1e308] * 4, [5e-324] * 4, paired=True, name_a="i386", name_b="x86_64")
    with pytest.raises(ValueError, match="floating point"):
        ratio_of([5e-324] * 3, [1e308] * 3, paired=False)
    # Large but representable values are fine, and so are their medians.
    r = ratio_of([1e308, 1.6e308], [1e308, 1.6e308], paired=False)
    assert r.ratio == 1.0 and math.isfinite(r.ci_low) and math.isfinite(r.ci_high)


def test_summary_of_values_at_the_end_of_the_range_is_finite() -> None:
    s = summarize([1.7e308, 1.7e308, -1.7e308, 1.7e308])
    assert s.median == 1.7e308 and s.mean == pytest.approx(0.85e308)
    assert math.isfinite(s.stdev) and math.isfinite(s.mad)
    assert summarize([5e-324, 5e-324]).median == 5e-324
    assert summarize([1.0, 2.0, 3.0, 4.0]).median == 2.5
    assert outliers([1.7e308] * 6 + [-1.7e308]) == [False] * 6 + [True]


# --------------------------------------------------------------------------- compare: degenerate


def test_constant_samples_zero_width_ci() -> None:
    r = ratio_of([2.0] * 10, [2.0] * 10, paired=True)
    assert (r.ratio, r.ci_low, r.ci_high) == (1.0, 1.0, 1.0)
    assert r.p_value == 1.0
    assert r.half_width() == 0.0
    r2 = ratio_of([3.0] * 10, [2.0] * 10, paired=False)
    assert r2.ci_low == pytest.approx(1.5) and r2.ci_high == pytest.approx(1.5)
    assert r2.p_value < 1e-9


def test_too_few_samples_gives_nan() -> None:
    r = ratio_of([1.0], [2.0], paired=True)
    assert r.ratio == 0.5
    assert math.isnan(r.ci_low) and math.isnan(r.ci_high) and math.isnan(r.p_value)
    v = verdict(r, better="lower", name_a="A", name_b="B")
    assert not v.significant
    assert v.text.startswith("no significant difference")


def test_paired_unequal_lengths_raises() -> None:
    with pytest.raises(ValueError, match="paired"):
        ratio_of([1.0, 2.0, 3.0], [1.0, 2.0], paired=True)
    ratio_of([1.0, 2.0, 3.0], [1.0, 2.0], paired=False)  # fine unpaired


def test_zero_median_raises() -> None:
    with pytest.raises(ValueError, match="<= 0"):
        ratio_of([1.0, 2.0, 3.0], [0.0, 0.0, 5.0], paired=True)


def test_bad_confidence_raises() -> None:
    with pytest.raises(ValueError):
        ratio_of([1.0, 2.0], [1.0, 2.0], paired=True, confidence=95)


# --------------------------------------------------------------------------- verdict


def _exact(a_value: float, b_value: float, n: int = 10) -> Ratio:
    return ratio_of([a_value] * n, [b_value] * n, paired=True)


def test_verdict_higher_is_better_a_larger() -> None:
    r = _exact(1.2, 1.0)
    v = verdict(r, better="higher", name_a="x86_64", name_b="i386")
    assert v.significant
    assert v.winner == "x86_64"
    assert "faster" in v.text
    assert v.percent == pytest.approx((r.ratio - 1.0) * 100.0)
    assert v.percent == pytest.approx(20.0)
    assert v.text == "x86_64 is 20.0% faster [20.0%, 20.0%]"


def test_verdict_lower_is_better_a_larger() -> None:
    r = _exact(1.2, 1.0)
    v = verdict(r, better="lower", name_a="i386", name_b="x86_64")
    assert v.winner == "x86_64"
    assert v.percent == pytest.approx(20.0)
    assert v.text.startswith("x86_64 is 20.0% faster")


def test_verdict_inverts_when_a_wins() -> None:
    # Times 1.0 vs 1.25: a is 25% faster (b takes 1.25x as long).
    r = _exact(1.0, 1.25)
    v = verdict(r, better="lower", name_a="i386", name_b="x86_64")
    assert v.winner == "i386"
    assert v.percent == pytest.approx(25.0)
    assert v.text == "i386 is 25.0% faster [25.0%, 25.0%]"
    # Rates: b delivers 1.25x a's rate, so b wins by 25%.
    v2 = verdict(r, better="higher", name_a="i386", name_b="x86_64")
    assert v2.winner == "x86_64"
    assert v2.percent == pytest.approx(25.0)


def test_verdict_ci_bounds_mapped() -> None:
    r = Ratio(1.1, 1.05, 1.2, 0.001, 1.1, 30, 30, True, 0.95)
    v = verdict(r, better="lower", name_a="A", name_b="B")
    assert v.winner == "B"
    assert (v.low, v.high) == pytest.approx((5.0, 20.0))
    inv = Ratio(0.8, 0.5, 0.9, 0.001, 0.8, 30, 30, True, 0.95)
    vi = verdict(inv, better="lower", name_a="A", name_b="B")
    assert vi.winner == "A"
    assert vi.percent == pytest.approx(25.0)
    assert (vi.low, vi.high) == pytest.approx((100.0 / 9.0, 100.0))


def test_verdict_needs_both_ci_and_p() -> None:
    ci_excludes_one = Ratio(1.1, 1.05, 1.2, 0.2, 1.1, 30, 30, True, 0.95)
    assert not verdict(ci_excludes_one, better="lower", name_a="A", name_b="B").significant
    ok = Ratio(1.1, 1.05, 1.2, 0.01, 1.1, 30, 30, True, 0.95)
    assert verdict(ok, better="lower", name_a="A", name_b="B").significant
    # the adjusted p overrides the raw one
    assert not verdict(ok, better="lower", name_a="A", name_b="B", p_adjusted=0.06).significant
    straddles = Ratio(1.01, 0.99, 1.03, 0.001, 1.01, 30, 30, True, 0.95)
    v = verdict(straddles, better="lower", name_a="A", name_b="B")
    assert not v.significant and v.winner is None
    assert v.text == "no significant difference (±2.0%)"
    assert v.percent == pytest.approx(2.0 / 1.01)


# --------------------------------------------------------------------------- holm


def test_holm_hand_computed() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_holm_cap_and_nan() -> None:
    out = holm([0.5, math.nan, 0.01])
    assert math.isnan(out[1])
    assert out[2] == pytest.approx(0.01 * 2)  # m = 2: the nan is not a hypothesis
    assert out[0] == pytest.approx(0.5)
    assert holm([0.6, 0.7, 0.9]) == [1.0, 1.0, 1.0]
    assert holm([]) == []


# --------------------------------------------------------------------------- outliers


def test_outliers_flags_ten_x() -> None:
    values = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 10.0, 1.00]
    assert outliers(values) == [False] * 6 + [True, False]


def test_outliers_tight_sample_clean() -> None:
    rng = np.random.default_rng(0)
    assert not any(outliers(rng.normal(100.0, 0.5, 50).tolist()))


def test_outliers_mad_zero() -> None:
    assert outliers([5.0] * 6) == [False] * 6
    # More than half identical makes MAD 0; the mean-absolute-deviation
    # fallback still catches the spike.
    assert outliers([1.0] * 7 + [10.0]) == [False] * 7 + [True]
    assert outliers([]) == []


# --------------------------------------------------------------------------- geomean


def test_geomean_opposite_ratios_cancel() -> None:
    rng = np.random.default_rng(5)
    b1 = rng.lognormal(0.0, 0.05, 20)
    b2 = rng.lognormal(0.0, 0.05, 20)
    groups = [((1.2 * b1).tolist(), b1.tolist(), True), ((b2 / 1.2).tolist(), b2.tolist(), True)]
    g = geomean_ratio(groups)
    assert g.n == 2
    assert g.value == pytest.approx(1.0)
    assert g.ci_low <= 1.0 <= g.ci_high


def test_geomean_constant_groups_collapse() -> None:
    groups = [([1.2] * 8, [1.0] * 8, True), ([3.0] * 5, [2.0] * 6, False)]
    g = geomean_ratio(groups)
    expected = math.sqrt(1.2 * 1.5)
    assert g.value == pytest.approx(expected)
    assert g.ci_low == pytest.approx(expected)
    assert g.ci_high == pytest.approx(expected)


def test_geomean_better_inverts_higher_groups() -> None:
    # Time ratio 1.2 (b better) and rate ratio 1/1.2 (b better too): both
    # read as a costing 1.2x, so the summary is 1.2, not 1.0.
    groups = [([1.2] * 5, [1.0] * 5, True), ([1.0] * 5, [1.2] * 5, True)]
    g = geomean_ratio(groups, better=["lower", "higher"])
    assert g.value == pytest.approx(1.2)
    assert geomean_ratio(groups).value == pytest.approx(1.0)
    with pytest.raises(ValueError):
        geomean_ratio(groups, better=["lower"])


def test_geomean_refuses_values_not_all_positive() -> None:
    good = ([1.2] * 5, [1.0] * 5, True)
    for bad in (([-1.2] * 5, [-1.0] * 5, True), ([1.0, 0.0, 1.0], [1.0] * 3, False)):
        with pytest.raises(ValueError, match=r"group 1 (a|b) has values <= 0"):
            geomean_ratio([good, bad])


def test_five_consistent_rounds_can_be_significant() -> None:
    # The minimum schedule (5 counted rounds) must be able to reach a verdict when every round
    # agrees: a rank test on 5 pairs never could (its smallest p is 0.0625).
    b = [1.00, 1.02, 0.99, 1.01, 1.00]
    a = [x * f for x, f in zip(b, [1.20, 1.21, 1.19, 1.20, 1.22], strict=True)]
    r = ratio_of(a, b, paired=True)
    v = verdict(r, better="lower", name_a="i386", name_b="x86_64")
    assert r.p_value < 0.001 and v.significant and v.winner == "x86_64"


def test_verdict_states_a_reduction_as_the_share_saved() -> None:
    # 1.0 MiB against 1.25 MiB saves a fifth: "20% smaller", not "25% smaller".
    r = _exact(1.0, 1.25)
    v = verdict(r, better="lower", name_a="i386", name_b="x86_64", words=("smaller", "larger"),
                as_reduction=True)
    assert v.winner == "i386"
    assert v.text == "i386 is 20.0% smaller [20.0%, 20.0%]"
    # The other way round the winner is b and the share is still below 100%.
    v2 = verdict(_exact(3.0, 1.0), better="lower", name_a="i386", name_b="x86_64",
                 words=("smaller", "larger"), as_reduction=True)
    assert v2.winner == "x86_64"
    assert v2.percent == pytest.approx(100.0 * 2 / 3)


def test_reduction_ci_runs_from_the_smaller_saving_to_the_larger() -> None:
    r = Ratio(ratio=0.66, ci_low=0.60, ci_high=0.70, p_value=0.001, hodges_lehmann=0.66, n_a=5,
              n_b=5, paired=True, confidence=0.95)
    v = verdict(r, better="lower", name_a="i386", name_b="x86_64", words=("smaller", "larger"),
                as_reduction=True)
    assert v.percent == pytest.approx(34.0)
    assert v.low == pytest.approx(30.0)
    assert v.high == pytest.approx(40.0)


# The pairwise-difference selection behind Hodges-Lehmann, against the n x m matrix it avoids:
# generated samples with heavy ties (few distinct values), both signs, and sizes past the point
# where the selection starts sampling pivots (4,096 live differences).
_values = st.lists(st.sampled_from([0.5, 1.0, 1.1, 2.0, 3.25, 7.0, 1e-3, 1e3]) | st.floats(
    min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False), min_size=1,
    max_size=120)


@settings(max_examples=150, deadline=None)
@given(_values, _values, st.data())
def test_pairwise_difference_kth_is_the_sorted_matrix_entry(a: list[float], b: list[float],
                                                           data: st.DataObject) -> None:
    from abibench.stats import pairwise_difference_kth

    x, y = np.sort(np.log(a)), np.sort(np.log(b))
    every = np.sort((x[:, None] - y[None, :]).ravel())
    k = data.draw(st.integers(0, every.size - 1))
    assert pairwise_difference_kth(x, y, k) == every[k]
    ratio = ratio_of(a, b, paired=False)
    assert ratio.hodges_lehmann == pytest.approx(float(np.exp(np.median(every))), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(6, 400), st.integers(0, 2**31))
def test_median_ci_is_two_order_statistics_around_the_median(n: int, seed: int) -> None:
    from scipy import stats as sps

    from abibench.stats import median_ci

    values = np.random.default_rng(seed).lognormal(size=n)
    low, high = median_ci(list(values))
    ordered = np.sort(values)
    i, j = int(np.searchsorted(ordered, low)), int(np.searchsorted(ordered, high))
    assert ordered[i] == low and ordered[j] == high and i + j == n - 1  # symmetric ranks
    assert low <= float(np.median(values)) <= high
    # The sign test's coverage: at least 95%, and one rank narrower would fall below it.
    # Ranks i+1 and n-i (1-based) cover the median unless fewer than i+1 values fall below it
    # or above it: 1 - 2 P(Binomial(n, 1/2) <= i).
    assert 1 - 2 * sps.binom.cdf(i, n, 0.5) >= 0.95
    assert 1 - 2 * sps.binom.cdf(i + 1, n, 0.5) < 0.95
