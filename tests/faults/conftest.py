"""The fault-injection harness's session: one warm build cache and N, the samples of a run,
from one reference run; which checkpoint each fault is tried at in this session (seeded)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .harness import FAULTS, SEED_ENV, Case, Outcome, fault_seed, summary, warm

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


# Under pytest-xdist the cases run in a worker: each worker sends the cases it tried to the
# controller (workeroutput), which prints the one summary line for all of them.
WORKER_KEY = "abibench_faults_tried"
FROM_WORKERS: list[Outcome] = []


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = getattr(session.config, "workeroutput", None)
    if out is not None:  # a pytest-xdist worker
        out[WORKER_KEY] = [(o.case.fault, o.case.at, o.code, o.violations) for o in TRIED]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    rows = getattr(node, "workeroutput", {}).get(WORKER_KEY, [])
    FROM_WORKERS.extend(Outcome(Case(f, at), code, list(v)) for f, at, code, v in rows)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    tried = TRIED + FROM_WORKERS
    if not tried:
        return
    terminalreporter.write_line(
        f"fault injection (seed {fault_seed()}; {SEED_ENV} repeats it): {len(tried)} of "
        f"{len(FAULTS)} faults, at " + ", ".join(o.case.id for o in tried))
    for fault, row in summary(tried).items():
        terminalreporter.write_line(f"  {fault}: {row['cases']} cases, {row['violations']} "
                                    "violations")
