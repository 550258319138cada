"""The change-point detector (analyse/changes.py): deterministic properties, generated.

Its false-alarm rate on one level is a measurement, not a unit test: bench/changes.py."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.changes import MIN_DF, Spread, best_cut, detect, pooled_spread, scan

# Five values a side at least: with 3 + 3 no ordering can be rarer than 2 in 20 (p >= 0.1).
runs_st = st.lists(st.integers(min_value=5, max_value=8), min_size=2, max_size=8)


def _series(sizes: list[int], levels: list[float], noise: float, seed: int
            ) -> tuple[list[float], list[int]]:
    rng = np.random.default_rng(seed)
    values: list[float] = []
    starts: list[int] = []
    for n, level in zip(sizes, levels, strict=True):
        starts.append(len(values))
        values += list(level + noise * rng.standard_normal(n))
    return values, starts[1:]


@settings(max_examples=40, deadline=None)
@given(sizes=runs_st, data=st.data(), seed=st.integers(0, 2**16),
       step=st.floats(min_value=0.2, max_value=2.0), sign=st.sampled_from([-1, 1]))
def test_a_large_planted_step_is_found_where_it_was_planted(
        sizes: list[int], data: st.DataObject, seed: int, step: float, sign: int) -> None:
    at = data.draw(st.integers(min_value=1, max_value=len(sizes) - 1))
    levels = [0.0 if i < at else sign * step for i in range(len(sizes))]
    values, bounds = _series(sizes, levels, 0.01, seed)
    # The runs' spread, as repeated runs of one build on the host would give it: a run's mean
    # of 5-8 samples of sd 1% (no run offsets here).
    prior = Spread(0.01 ** 2 / 5, 10)
    # min_change 10%: noise of 1% cannot make a step that large, so any other cut is a bug.
    found = detect(values, bounds, min_change=0.1, prior=prior)
    if len(sizes) < 4:  # too few runs to estimate their own spread: without a prior, undecided
        bare = scan(values, bounds, min_change=0.1)
        assert bare.changes == [] and [c.index for c in bare.undecided] == [sum(sizes[:at])]
    assert [c.index for c in found] == [sum(sizes[:at])]
    assert found[0].p_value < 0.05
    assert abs(found[0].after - found[0].before - sign * step) < 0.05


@settings(max_examples=40, deadline=None)
@given(sizes=runs_st, seed=st.integers(0, 2**16), shift=st.floats(-50, 50),
       levels=st.lists(st.sampled_from([0.0, 0.05, 0.3]), min_size=8, max_size=8))
def test_adding_a_constant_changes_nothing(sizes: list[int], seed: int, shift: float,
                                           levels: list[float]) -> None:
    """A constant on the log scale is every value times a factor: the same changes."""
    values, bounds = _series(sizes, levels[:len(sizes)], 0.02, seed)
    a = detect(values, bounds, seed=seed)
    b = detect([v + shift for v in values], bounds, seed=seed)
    assert [(c.index, c.p_value) for c in a] == [(c.index, c.p_value) for c in b]


@settings(max_examples=30, deadline=None)
@given(sizes=runs_st, seed=st.integers(0, 2**16),
       levels=st.lists(st.floats(-1, 1), min_size=8, max_size=8))
def test_changes_fall_on_run_boundaries_and_repeat_exactly(sizes: list[int], seed: int,
                                                           levels: list[float]) -> None:
    values, bounds = _series(sizes, levels[:len(sizes)], 0.05, seed)
    found = detect(values, bounds, seed=7)
    assert all(c.index in bounds for c in found)
    assert found == detect(values, bounds, seed=7)
    assert len({c.index for c in found}) == len(found)


def test_constant_data_and_no_boundary_have_no_change() -> None:
    assert detect([1.0] * 30, [10, 20]) == []
    assert detect([0.0] * 10 + [5.0] * 10, []) == []
    assert best_cut([1.0, 2.0], []) is None


def test_a_step_below_min_change_is_not_reported() -> None:
    values, bounds = _series([20, 20], [0.0, 0.005], 0.0001, 1)
    prior = Spread(0.0001 ** 2 / 20, 10)  # two runs: their spread comes from elsewhere
    assert detect(values, bounds, min_change=0.01, prior=prior) == []
    assert [c.index for c in detect(values, bounds, min_change=0.001, prior=prior)] == [20]


def test_non_finite_values_never_reach_the_statistics() -> None:
    import pytest

    with pytest.raises(ValueError, match="not finite"):
        detect([0.0, float("nan"), 1.0, 1.0], [2])


def test_a_run_offset_is_not_taken_for_a_change() -> None:
    """Runs that differ by their own conditions only (offsets up to 3%, samples within a run
    nearly alike): the sample-level test alone objects, the runs' spread does not."""
    offsets = [0.0, 0.02, -0.01, 0.03, 0.01, 0.02, -0.005, 0.015]
    values, bounds = _series([10] * len(offsets), offsets, 0.001, 3)
    got = best_cut(values, bounds)
    assert got is not None and got[1] < 0.05
    assert detect(values, bounds) == []


# The loaded machine's model (docs/method.md §7): each run offset by its own normal offset on
# the log scale, sd drawn per series uniformly from 3% to 8%; samples of sd 2%; two builds
# measured twice (the acceptance's shape), 6 samples a run.
def _loaded(rng: np.random.Generator, step: float, run_sd: float | None = None
            ) -> tuple[list[float], list[int], list[list[float]]]:
    sd = rng.uniform(0.03, 0.08) if run_sd is None else run_sd
    means = np.array([0.0, 0.0, np.log1p(step), np.log1p(step)]) + sd * rng.standard_normal(4)
    values = np.repeat(means, 6) + 0.02 * rng.standard_normal(24)
    run_means = values.reshape(4, 6).mean(axis=1)
    return values.tolist(), [6, 12, 18], [run_means[:2].tolist(), run_means[2:].tolist()]


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_one_level_with_loaded_run_offsets_rarely_has_a_change(seed: int) -> None:
    """The false-alarm rate measured by bench/changes.py is at most about 5% in this model; of
    40 series at a true 5%, more than 8 alarms has probability 3e-4. The prior is what
    `history` gives: the within-build spread of the same host's runs (here the series' two
    builds and three other workloads' series of the same model)."""
    rng = np.random.default_rng(seed)
    alarms = 0
    for n in range(40):
        values, bounds, groups = _loaded(rng, 0.0)
        for _ in range(3):
            groups += _loaded(rng, 0.0)[2]
        alarms += bool(detect(values, bounds, seed=n, prior=pooled_spread(groups)))
    assert alarms <= 8


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), step=st.floats(0.2, 1.0), sign=st.sampled_from([-1, 1]))
def test_a_20_percent_step_with_two_runs_a_side_is_found(seed: int, step: float,
                                                          sign: int) -> None:
    """2 + 2 runs, sample noise 2%, run offsets 0.5%: the step is found where it was planted,
    and nowhere else."""
    rng = np.random.default_rng(seed)
    factor = 1 + step if sign > 0 else 1 / (1 + step)
    values, bounds, groups = _loaded(rng, factor - 1, run_sd=0.005)
    found = detect(values, bounds, prior=pooled_spread(groups))
    assert [c.index for c in found] == [12]


def test_two_runs_of_one_build_are_not_a_change_beside_a_real_step() -> None:
    """The acceptance's false alarm: a real step between builds, and two runs of the first
    build 6.7% apart. The segment of those two runs cannot estimate its own spread; the
    within-build spread says 6.7% is what a rerun does here, and the sample test alone (a
    prior of no spread) took it for a change."""
    rng = np.random.default_rng(5)
    means = [0.0, np.log(1.067), np.log(1.8), np.log(1.8) + 0.01]
    values = (np.repeat(means, 6) + 0.002 * rng.standard_normal(24)).tolist()
    groups = [[means[0], means[1]], [means[2], means[3]]]
    prior = pooled_spread(groups)
    assert prior is not None and prior.df == 2
    got = scan(values, [6, 12, 18], prior=prior)
    assert [c.index for c in got.changes] == [12] and got.undecided == []
    old = detect(values, [6, 12, 18], prior=Spread(0.0, MIN_DF))  # the sample test alone
    assert {6, 12} <= {c.index for c in old}
    bare = scan(values, [6, 12, 18])  # no prior: the 6.7% is undecided, not a change
    assert [c.index for c in bare.changes] == [12] and 6 in [c.index for c in bare.undecided]


def test_pooled_spread_is_the_within_build_variance() -> None:
    assert pooled_spread([[1.0], [2.0]]) is None
    got = pooled_spread([[0.0, 2.0], [1.0, 1.0, 4.0], [float("nan"), 1.0]])
    assert got == Spread((2.0 + 6.0) / 3, 3)
