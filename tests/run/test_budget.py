"""The budget's allocation and the rounds the asked precision needs: pure functions."""

from __future__ import annotations

import math

import pytest

from abibench.run.budget import Standing, pick
from abibench.run.stopping import noise_floor, rounds_needed


def test_rounds_needed_follows_the_t_interval() -> None:
    # sd 5% per round, ±2% asked: (1.96 * 0.05 / log 1.02)^2 = 24.5, and t at n=25 is wider.
    n = rounds_needed(0.05, 0.02)
    assert 25 <= n <= 30
    # Four times the spread, sixteen times the rounds (near the normal limit).
    assert rounds_needed(0.20, 0.02) == pytest.approx(16 * n, rel=0.1)
    assert rounds_needed(0.0, 0.02) == 2
    assert rounds_needed(math.nan, 0.02) > 1_000_000


def test_pick_goes_to_the_furthest_per_second_of_cost() -> None:
    near = Standing(half_width=0.025, spread=0.05, round_s=1.0, counted=20)
    far_cheap = Standing(half_width=0.08, spread=0.10, round_s=1.0, counted=10)
    far_dear = Standing(half_width=0.08, spread=0.10, round_s=10.0, counted=10)
    assert pick([near, far_cheap, far_dear], 0.02, left_s=3600) == 1
    # A workload already at precision gets nothing; all at precision: nothing to do.
    done = Standing(0.01, 0.03, 1.0, 10)
    assert pick([done, near], 0.02, 3600) == 1
    assert pick([done, done], 0.02, 3600) is None


def test_pick_prefers_what_can_still_reach_precision() -> None:
    # hopeless: 60% per-round sd needs thousands of rounds; reachable: a few more rounds.
    hopeless = Standing(half_width=0.30, spread=0.60, round_s=1.0, counted=10)
    reachable = Standing(half_width=0.03, spread=0.05, round_s=1.0, counted=15)
    assert pick([hopeless, reachable], 0.02, left_s=60) == 1
    # When nothing can reach it, the rest of the budget still goes to the widest.
    assert pick([hopeless, Standing(0.10, 0.60, 1.0, 10)], 0.02, left_s=60) == 0


def test_reachable_means_reachable_together() -> None:
    # Each alone fits in 75 s (72 s and 4 s to go), both do not: the quicker one is finished,
    # though the slower is further from precision per second.
    slow = Standing(half_width=0.06, spread=0.10, round_s=1.0, counted=30)
    quick = Standing(half_width=0.03, spread=0.09, round_s=1.0, counted=80)
    assert slow.seconds_to_precision(0.02) <= 75
    assert slow.seconds_to_precision(0.02) + quick.seconds_to_precision(0.02) > 75
    assert pick([slow, quick], 0.02, left_s=75) == 1
    assert pick([slow, quick], 0.02, left_s=3600) == 0


def test_when_nothing_can_reach_precision_few_long_rounds_are_not_starved() -> None:
    # Measured on the quiet VM: lua at ±8.3% after 8 rounds of 7.9 s got none of the budget's
    # end while ptrtree, ±4.4% after 50 rounds of 1.8 s, took every round.
    lua = Standing(half_width=0.083, spread=0.099, round_s=7.9, counted=8)
    ptrtree = Standing(half_width=0.044, spread=0.185, round_s=1.8, counted=50)
    assert pick([ptrtree, lua], 0.02, left_s=60) == 1


def test_rounds_below_min_rounds_come_first_fewest_first() -> None:
    # Opened with two rounds each; --min-rounds 5 is made up evenly before anything else, so a
    # budget that runs out early leaves every workload with about as many rounds.
    precise_cheap = Standing(half_width=0.03, spread=0.02, round_s=1.0, counted=4)
    dear = Standing(half_width=0.30, spread=0.20, round_s=45.0, counted=2)
    assert pick([precise_cheap, dear], 0.02, left_s=600, min_rounds=5) == 1
    assert pick([dear, precise_cheap], 0.02, left_s=600, min_rounds=5) == 0
    # Once every one has its --min-rounds, the usual rule decides.
    at_min = Standing(half_width=0.30, spread=0.20, round_s=45.0, counted=5)
    assert pick([precise_cheap, at_min], 0.02, left_s=600, min_rounds=4) == \
        pick([precise_cheap, at_min], 0.02, left_s=600)


def test_unknown_spread_is_measured_first() -> None:
    fresh = Standing(half_width=math.inf, spread=math.nan, round_s=math.nan, counted=1)
    known = Standing(half_width=0.05, spread=0.1, round_s=2.0, counted=10)
    assert pick([known, fresh], 0.02, 600) == 1


def test_noise_floor_says_it_in_numbers() -> None:
    text = noise_floor(0.15, 4.0, 0.02, 0.055)
    assert "15.0% (sd)" in text and "4.0 s a round" in text and "±5.5%" in text
    assert "rounds (" in text and "min)" in text and "--counters" in text
