"""The interval methods: each one's CI and p-value agree, and the covariate adjustment is used
only when the covariate predicts the rounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abibench import estimators, stats


def _l(x: np.ndarray) -> list[float]:
    return [float(v) for v in x]


@pytest.mark.parametrize("method", sorted(estimators.METHODS))
def test_ci_and_p_agree(method: str) -> None:
    # Over many data sets, "the CI excludes 0" and "p < 0.05" are the same decision for the
    # t-based methods. hl's exact interval and test can differ at the edge by one Walsh average;
    # the bootstrap median's sign test is a different procedure on the same median (13 of 200
    # here): why neither is the default.
    rng = np.random.default_rng(7)
    disagree = 0
    for k in range(200):
        d = rng.normal(0.03 * (k % 3), 0.05, size=12)
        iv = estimators.interval(d, method, seed=k)
        disagree += (iv.low > 0 or iv.high < 0) != (iv.p_value < 0.05)
    assert disagree <= {"median": 20, "hl": 6}.get(method, 0)


def test_t_interval_matches_the_textbook() -> None:
    d = np.array([0.1, 0.2, 0.0, 0.15, 0.05])
    iv = estimators.t_interval(d)
    se = float(np.std(d, ddof=1)) / math.sqrt(5)
    assert iv.centre == pytest.approx(0.1)
    assert iv.high - iv.centre == pytest.approx(2.7764451 * se, rel=1e-6)


def test_covariate_removes_the_machine_speed() -> None:
    # The true log ratio is 0.05; each round's d is moved by how much faster the machine ran
    # during its first sample (c), as a neighbour's load would. Regressed out, the interval is
    # much narrower than plain t and still holds the truth.
    rng = np.random.default_rng(1)
    c = rng.normal(0.0, 0.10, size=20)
    d = 0.05 - 0.9 * c + rng.normal(0.0, 0.01, size=20)
    plain = estimators.t_interval(d)
    adjusted = estimators.covariate_interval(d, c)
    assert adjusted.method == "t+covariate"
    assert adjusted.low < 0.05 < adjusted.high
    assert (adjusted.high - adjusted.low) < 0.3 * (plain.high - plain.low)


def test_a_covariate_that_predicts_nothing_is_not_used() -> None:
    rng = np.random.default_rng(2)
    d = rng.normal(0.05, 0.02, size=20)
    c = rng.normal(0.0, 0.1, size=20)  # independent of d
    iv = estimators.covariate_interval(d, c)
    assert iv.method == "t" and iv == estimators.t_interval(d)


def test_ratio_of_takes_the_covariate_from_speeds() -> None:
    rng = np.random.default_rng(3)
    speed_a = np.exp(rng.normal(0, 0.1, 16))  # loop speed during a's and b's samples
    speed_b = np.exp(rng.normal(0, 0.1, 16))
    b = 2.0 / speed_b
    a = 2.2 / speed_a * np.exp(rng.normal(0, 0.005, 16))
    r = stats.ratio_of(_l(a), _l(b), paired=True, covariate=(_l(speed_a), _l(speed_b)))
    assert r.method == "t+covariate" and r.ci_low < 1.1 < r.ci_high and r.half_width() < 0.01
    # A covariate with a non-positive or missing value is not used at all.
    bad = stats.ratio_of(_l(a), _l(b), paired=True,
                         covariate=(_l(speed_a), [*_l(speed_b[:-1]), 0.0]))
    assert bad.method == "t"


def test_welch_ratio_and_geomean_agree_with_ratio_of() -> None:
    rng = np.random.default_rng(4)
    a = np.exp(rng.normal(0.1, 0.05, 10))
    b = np.exp(rng.normal(0.0, 0.08, 12))
    r = stats.ratio_of(_l(a), _l(b), paired=False)
    g = stats.geomean_ratio([(_l(a), _l(b), False)])
    assert r.method == "welch"
    assert g.value == pytest.approx(r.ratio) and g.ci_low == pytest.approx(r.ci_low)
    assert g.ci_high == pytest.approx(r.ci_high)
