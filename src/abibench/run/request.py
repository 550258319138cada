"""What a run is asked to do, what it returns, and where its records go (the `RunSink`).

`run/suite.py` re-exports every name.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from ..abi import Abi, get_abi
from ..errors import (
    EXIT_OK,
)
from ..obtain.build import DEFAULT_CFLAGS
from ..records import (
    Artifact,
    HostContext,
    Outcome,
    Run,
    RunWarning,
    Sample,
    Target,
    TargetStatus,
)
from ..workloads.profile import Workload
from .schedule import Plan, ScheduleResult


class RunSink(Protocol):
    """Where a run's records go as they come into being: the store."""

    def create_run(self, run: Run, host: HostContext) -> None: ...

    def finish_run(self, run_id: str, finished: str, status: str) -> None: ...

    def add_artifact(self, run_id: str, artifact: Artifact) -> None: ...

    def set_target_status(self, run_id: str, status: TargetStatus) -> None: ...

    def add_warning(self, run_id: str, warning: RunWarning) -> None: ...

    def set_outcome(self, run_id: str, workload: str, outcome: Outcome) -> None: ...

    def add_sample(self, s: Sample) -> None: ...

    def claim_run(self, run_id: str) -> None: ...

    def discard_samples(self, run_id: str, workload: str, rounds: Iterable[int],
                        reason: str) -> int: ...

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Request:
    workloads: list[Workload]
    abis: list[Abi]
    plan: Plan
    cflags: tuple[str, ...] = DEFAULT_CFLAGS
    cc: str | None = None  # None: the compiler the probe found for each ABI
    provenance: str = "source"  # or "debian": Debian's own per-arch builds in sysroots
    allow_version_skew: bool = False  # debian: compare different versions (a warning each)
    # a target that loads the host's libraries is compared anyway (analyse/foreign.py)
    allow_host_libs: bool = False
    keep_going: bool = False  # measure the other ABIs when one ABI's build fails
    label: str | None = None  # this host's name in comparisons (a fleet's inventory name)
    fleet: str | None = None  # the fleet run this run is part of (abibench fleet)
    # The ABIs were named (--abi): one this host cannot build, or cannot run where only an
    # emulator would run it, is an error before the run exists (exit 3) rather than a
    # "not built" row.
    explicit_abis: bool = False


@dataclass
class Result:
    run_id: str
    exit_code: int = EXIT_OK
    outcomes: list[ScheduleResult] = field(default_factory=list)
    elapsed_s: float = 0.0
    built: int = 0
    reused: int = 0
    interrupted: bool = False
    measured: int = 0  # targets measured to the end of their workload's rounds
    failures: list[str] = field(default_factory=list)  # "workload target: why", one per failure


def new_run_id() -> str:
    """The time (UTC) and 32 random bits: unique across the hosts of a fleet that start their
    runs in the same second into one shared database (16 bits would collide once in ~350
    fleets of 20 hosts starting together; 32 bits once in ~20 million)."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(4)


def targets_of(req: Request, wl: Workload) -> list[Target]:
    """The targets a workload is measured on: its prebuilt programs' ABIs, or every ABI asked."""
    if wl.binaries:
        return [Target(get_abi(name), "prebuilt") for name in wl.binaries]
    return [Target(a, req.provenance) for a in req.abis]
