"""Choosing a sampling design from the noise profile, and the repeats of short programs."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from abibench.probe.noise import CpuNoise, NoiseProfile, PairNoise
from abibench.run.designs import choose, repeats_for
from abibench.workloads.profile import load_profile

PROFILES = Path(__file__).resolve().parents[2] / "src" / "abibench" / "workloads" / "profiles"


def _noise(seq: float, sim: float, cov: float, foreign: float = 0.0) -> NoiseProfile:
    cpu = CpuNoise(0, 0.05, {"1": 0.02}, 0.5, 1000)
    pairs = {"1": PairNoise(seq, sim, cov, 20), "0.1": PairNoise(seq, sim, cov, 200)}
    return NoiseProfile(0.0, 60.0, "b", (cpu, cpu), 0.8, pairs, foreign, 200_000)


@pytest.fixture
def nbody():  # type: ignore[no-untyped-def]
    return load_profile(PROFILES / "nbody.toml")


def test_simultaneous_when_the_cpus_move_together(nbody) -> None:  # type: ignore[no-untyped-def]
    d = choose("auto", nbody, _noise(0.10, 0.03, 0.09), 1.0, 2, False, [0, 1], 20_000)
    assert d.name == "simultaneous" and d.cpus == (0, 1)
    # The two of a round on different CPUs; by position, which alternates every round.
    assert {d.how(0, 0, 1).cpu, d.how(1, 0, 1).cpu} == {0, 1}


def test_sequential_unless_another_design_clearly_wins(nbody) -> None:  # type: ignore[no-untyped-def]
    # Simultaneous costs half a round's time, so sd 0.09 vs 0.10 is 0.4 of the variance x
    # cost, a clear gain; 0.14 is no gain (0.98).
    assert choose("auto", nbody, _noise(0.10, 0.14, 0.12), 1.0, 2, False, [0, 1], 1).name \
        == "sequential"
    d = choose("auto", nbody, _noise(0.10, math.nan, 0.05), 1.0, 3, False, [0, 1], 1)
    assert d.name == "covariate"  # three targets: never simultaneous
    assert d.how(0, 0, 1).covariate == (1, 1)


def test_nothing_is_pinned_beside_a_neighbour_or_on_one_cpu(nbody) -> None:  # type: ignore[no-untyped-def]
    busy = _noise(0.10, 0.01, 0.01, foreign=0.9)
    d = choose("auto", nbody, busy, 1.0, 2, False, [0, 1], 1)
    assert d.name == "sequential" and "other processes" in d.reason
    assert choose("auto", nbody, _noise(0.1, 0.01, 0.01), 1.0, 2, False, [0], 1).name \
        == "sequential"
    # Asked for by name, a neighbour does not stop it; a sysroot does.
    assert choose("simultaneous", nbody, busy, 1.0, 2, False, [0, 1], 1).name == "simultaneous"
    d = choose("simultaneous", nbody, busy, 1.0, 2, True, [0, 1], 1)
    assert d.name == "sequential" and "sysroot" in d.reason


def test_without_a_profile_sequential_says_why(nbody) -> None:  # type: ignore[no-untyped-def]
    d = choose("auto", nbody, None, 1.0, 2, False, [0, 1], 1)
    assert d.name == "sequential" and "calibrate" in d.reason


def test_short_needs_the_profile_table(nbody) -> None:  # type: ignore[no-untyped-def]
    assert choose("short", nbody, None, 1.0, 2, False, [0, 1], 1).name == "short"
    with pytest.raises(ValueError, match="short"):
        choose("short", replace(nbody, short={}), None, 1.0, 2, False, [0, 1], 1)


def test_repeats_make_a_short_program_last_100ms() -> None:
    assert repeats_for("auto", 0.004) == 25
    assert repeats_for("auto", 0.2) == 1
    assert repeats_for("auto", None) == 1
    assert repeats_for("auto", 1e-9) == 1000  # capped
    assert repeats_for(7, 0.001) == 7
