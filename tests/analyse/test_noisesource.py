"""The noise source named from a run's own samples, on generated runs.

Family: "a budget stop that does not say where the noise came from". The invariant, in
analyse/noisesource.describe_sources alone: when other processes' CPU time tracks a target's slow
samples it is named with its share; when a target's own samples have a tail the load does not
explain, the program is named; when neither, the line says no measured source explains it.
"""

from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.noisesource import describe_sources
from abibench.analyse.shape import target_shapes
from abibench.records import Sample
from tests.conftest import SAMPLE_DEFAULTS


def _samples(rng: random.Random, n: int, load_driven: bool, tail: bool) -> list[Sample]:
    out = []
    for r in range(n):
        for target in ("i386", "x86_64"):
            foreign = rng.uniform(0.0, 0.8) if load_driven else rng.uniform(0.0, 0.01)
            t = 0.5 * math.exp(rng.gauss(0.0, 0.004))
            if load_driven:
                t *= 1 + 0.6 * foreign  # other processes took the CPU: the sample is slower
            if tail and target == "i386" and r % 7 == 3:
                t *= 1.15 + 0.25 * rng.random()
            out.append(Sample.from_dict({**SAMPLE_DEFAULTS, "workload": "w", "target": target,
                                         "round": r, "wall_s": t, "foreign_cpu_s": foreign * t,
                                         "metrics": {"time": t}}))
    return out


def _line(samples: list[Sample]) -> str:
    shapes = target_shapes(samples, ["i386", "x86_64"], "time", False)
    return describe_sources(samples, ["i386", "x86_64"], "time", False, shapes)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(14, 40))
def test_load_that_tracks_the_slow_samples_is_named(seed: int, n: int) -> None:
    line = _line(_samples(random.Random(seed), n, load_driven=True, tail=False))
    assert "other processes' CPU time explains" in line and "i386's" in line
    assert "x86_64's" in line


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(21, 40))
def test_a_tail_the_load_does_not_explain_names_the_program(seed: int, n: int) -> None:
    line = _line(_samples(random.Random(seed), n, load_driven=False, tail=True))
    assert "i386's own samples: a slow tail" in line or "i386's own samples: two modes" in line
    assert "x86_64's own" not in line and "CPU time explains" not in line


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(14, 40))
def test_quiet_samples_name_no_source(seed: int, n: int) -> None:
    line = _line(_samples(random.Random(seed), n, load_driven=False, tail=False))
    assert line.startswith("noise source: none measured explains it"), line
