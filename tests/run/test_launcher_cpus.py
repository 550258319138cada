"""The CPUs a program may run on are its caller's, whatever the launcher does to start it.

Family: "the harness changes what the program may do" (docs/reliability.md, Invariants). The
launcher holds its own CPU while it starts a sample alone (launch.c's hold_cpu, issue 30's
harness floor), so a slip there would leave every program pinned to one CPU: a multi-threaded
program measured on half the machine. Generated over every set of CPUs this machine allows the
caller (all non-empty subsets of the first four), alone, in a simultaneous pair, repeated, and
with the one asked-for exception (How.cpu pins)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from abibench.run.launcher import How, Job, launcher, run_together

# The shell forks grep at once: grep reports the mask it inherited the moment it was forked.
SHOW = ["/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status"]
ATTEMPTS = 15


def cpu_list(text: str) -> set[int]:
    """The set a `Cpus_allowed_list` line names ("0-1,3")."""
    out: set[int] = set()
    for part in text.split(":", 1)[1].strip().split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def cpu_sets() -> list[frozenset[int]]:
    have = sorted(os.sched_getaffinity(0))[:4]
    return [frozenset(c) for n in range(1, len(have) + 1) for c in itertools.combinations(have, n)]


@pytest.fixture(scope="module")
def launch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return launcher(tmp_path_factory.mktemp("cache"))


@pytest.mark.parametrize("jobs,repeat", [(1, 1), (2, 1), (1, 3)])
def test_the_program_may_run_on_every_cpu_its_caller_may(launch: Path, tmp_path: Path,
                                                       jobs: int, repeat: int) -> None:
    before = os.sched_getaffinity(0)
    try:
        # Many times: a slip can be a race (the program's first child forked before the
        # launcher gave the mask back: seen in the gate, under load, one run in a few).
        for allowed in cpu_sets() * ATTEMPTS:
            os.sched_setaffinity(0, allowed)
            job = Job(SHOW, tmp_path, dict(os.environ), 10, how=How(repeat=repeat))
            for raw in run_together([job] * jobs, launch):
                assert raw.ok, raw
                assert cpu_list(raw.stdout) == set(allowed), (allowed, raw.stdout)
    finally:
        os.sched_setaffinity(0, before)


def test_a_pinned_sample_runs_on_its_cpu_alone(launch: Path, tmp_path: Path) -> None:
    for cpu in sorted(os.sched_getaffinity(0))[:4]:
        raw = run_together([Job(SHOW, tmp_path, dict(os.environ), 10, how=How(cpu=cpu))],
                           launch)[0]
        assert raw.ok and cpu_list(raw.stdout) == {cpu}, raw.stdout
