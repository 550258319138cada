"""A run that starts while another measures the machine's noise waits and reads its profile."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from abibench.locks import exclusive, exclusive_if_free, lock_path
from abibench.probe import noise
from abibench.probe.noise import CpuNoise, NoiseProfile, PairNoise

from ..processes import lock_waiters, must_happen


def test_a_run_that_starts_while_the_noise_is_measured_waits_and_measures_nothing(
        tmp_path: Path) -> None:
    # Family "two processes make one cache entry at once" (reliability.md, tests that share
    # state): the noise profile was measured by every run that found none, two runs started
    # together each measuring the machine while the other loaded it. It is now made through
    # locks.made_once; here the first maker holds the lock (as a measuring run does) while a
    # second run asks, and then stores its profile: the second reads it and measures nothing.
    profile = NoiseProfile(time.time(), 20.0, noise.boot_id(),
                           (CpuNoise(0, 0.03, {"1": 0.01}, 0.25, 2000),), None,
                           {"1": PairNoise(0.018, 0.006, 0.009, 20)})
    got: list[NoiseProfile | BaseException] = []

    def never(_: Path, __: float) -> NoiseProfile:
        raise AssertionError("measured again while another run's profile was being made")

    def second_run() -> None:
        try:
            got.append(noise.current(tmp_path, measured=never))
        except BaseException as exc:  # reported by the test thread below
            got.append(exc)

    entry = noise.cache_file(tmp_path)
    with exclusive(entry):
        waiter = threading.Thread(target=second_run)
        waiter.start()
        must_happen(lambda: lock_waiters(lock_path(entry)) == 1, "the second run waits on the lock")
        noise.store(tmp_path, profile)
    waiter.join(30)
    assert not waiter.is_alive()
    assert len(got) == 1 and isinstance(got[0], NoiseProfile), got
    assert got[0].to_dict() == profile.to_dict()


def test_calibrate_measures_under_the_lock_a_run_waits_for(tmp_path: Path) -> None:
    # `abibench calibrate` (noise.remeasure) holds the same lock while it measures: a run that
    # starts meanwhile waits for its profile (the test above) instead of measuring beside it.
    held: list[bool] = []
    profile = NoiseProfile(time.time(), 5.0, noise.boot_id(),
                           (CpuNoise(0, 0.03, {"1": 0.01}, 0.25, 2000),), None)

    def measuring(root: Path, seconds: float) -> NoiseProfile:
        with exclusive_if_free(noise.cache_file(root)) as free:
            held.append(not free)
        return profile

    assert noise.remeasure(tmp_path, 5.0, measured=measuring).to_dict() == profile.to_dict()
    assert held == [True]
    cached = noise.cached(tmp_path)
    assert cached is not None and cached.to_dict() == profile.to_dict()
