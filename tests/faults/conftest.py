"""The fault-injection harness's session: one warm build cache and N, the samples of a run,
from one reference run; which checkpoint each fault is tried at in this session (seeded)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import FAULTS, SEED_ENV, Outcome, fault_seed, summary, warm

TRIED: list[Outcome] = []


@pytest.fixture(scope="session")
def warmed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """(a build cache holding the run's programs, N samples a complete run stores)."""
    return warm(tmp_path_factory.mktemp("faults-warm"))


@pytest.fixture
def checkpoint(warmed: tuple[Path, int], request: pytest.FixtureRequest) -> int:
    """The checkpoint (1..N) this test's fault is tried at in this session, seeded."""
    name = request.node.callspec.id if hasattr(request.node, "callspec") else request.node.name
    return random.Random(f"{fault_seed()}:{name}").randint(1, warmed[1])


@pytest.fixture
def tried() -> Iterator[list[Outcome]]:
    yield TRIED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not TRIED:
        return
    terminalreporter.write_line(
        f"fault injection (seed {fault_seed()}; {SEED_ENV} repeats it): {len(TRIED)} of "
        f"{len(FAULTS)} faults, at " + ", ".join(o.case.id for o in TRIED))
    for fault, row in summary(TRIED).items():
        terminalreporter.write_line(f"  {fault}: {row['cases']} cases, {row['violations']} "
                                    "violations")
