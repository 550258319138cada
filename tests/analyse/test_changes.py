"""The change-point detector (analyse/changes.py): deterministic properties, generated.

Its false-alarm rate on one level is a measurement, not a unit test: bench/changes.py."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.changes import best_cut, detect

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
    # min_change 10%: noise of 1% cannot make a step that large, so any other cut is a bug.
    found = detect(values, bounds, min_change=0.1)
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
    assert detect(values, bounds, min_change=0.01) == []
    assert [c.index for c in detect(values, bounds, min_change=0.001)] == [20]


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
