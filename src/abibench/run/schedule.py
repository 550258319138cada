"""Interleaved rounds: warm-up, then rounds of every target in alternating order, until the
ratio's confidence interval is tight enough or the budget ends.

Each round runs every target once and the order alternates (A B, B A, ...), so a slow drift of
the machine (thermal, a neighbour's load) falls on every target alike and pairs by round.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from ..records import Artifact, Sample, Target
from ..workloads.profile import Workload, substitute
from ..workspace import owned_dir
from .counters import count_instructions
from .launcher import RawResult, run_sample
from .placement import Placement
from .samples import sample_from
from .servers import ServerError, sigterm_as_interrupt
from .steps import untimed_step
from .stopping import widest_interval


class SampleSink(Protocol):
    """Where every sample goes the moment it exists (the store)."""

    def add_sample(self, s: Sample) -> None: ...


@dataclass(frozen=True)
class Plan:
    min_rounds: int = 5
    max_rounds: int = 30
    fixed_rounds: int | None = None  # --rounds N: exactly N counted rounds, no adaptive stop
    precision: float = 0.02  # stop when every ratio CI half-width is within this fraction
    max_time_s: float = 120.0  # per workload, counted rounds included, warm-up too
    warmup: int = 1
    seed: int = 0  # environment padding is drawn from this, so a run can be repeated exactly
    randomize_env: bool = True
    counters: bool = False  # one extra run per target under valgrind, counting instructions


@dataclass
class ScheduleResult:
    """How one workload's rounds went: what the store keeps as its Outcome, and failures."""

    workload: str
    rounds: int = 0
    stop_reason: str = ""
    failed: dict[str, str] = field(default_factory=dict)  # target -> why it stopped being run
    timed_out: bool = False
    interrupted: bool = False
    # target -> processes its samples left alive, killed by the launcher: not a failure, but
    # something ran beside the next sample until it was killed, so the run records it.
    escaped: dict[str, int] = field(default_factory=dict)

    def count_escaped(self, target: str, raw: RawResult) -> None:
        if raw.escaped:
            self.escaped[target] = self.escaped.get(target, 0) + raw.escaped


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def round_order(targets: list[Target], rnd: int) -> list[Target]:
    """Forward on even rounds, reversed on odd ones: A B, B A, A B, ..."""
    return list(targets) if rnd % 2 == 0 else list(reversed(targets))


def _setup(wl: Workload, values: dict[str, str], work: Path, env: dict[str, str]) -> str | None:
    """Run the profile's untimed setup step for one target; the error text when it fails."""
    if not wl.setup:
        return None
    return untimed_step([substitute(a, values) for a in wl.setup], work, env, wl.timeout * 10,
                        "setup step")


def run_workload(wl: Workload, targets: list[tuple[Target, Artifact]], plan: Plan,
                 store: SampleSink, run_id: str, launch: Path,
                 on_sample: Callable[[Sample], None] | None = None,
                 inputs: dict[str, Path] | None = None) -> ScheduleResult:
    outcome = ScheduleResult(wl.id)
    rng = random.Random(f"{plan.seed}:{wl.id}")
    active = [t for t, _ in targets]
    samples: list[Sample] = []
    base_env = dict(os.environ)
    t_start = time.monotonic()
    inputs = inputs or {}
    with owned_dir(wl.base_id or wl.id) as tmp, contextlib.ExitStack() as stack:
        if wl.server is not None:
            # A polite kill must stop the servers too: SIGTERM unwinds like Ctrl-C.
            stack.enter_context(sigterm_as_interrupt())
        # Where each target runs: the host, or its Debian sysroot (with its server, if any).
        places = {t.label: Placement.create(wl, t, a, tmp, inputs, stack)
                  for t, a in targets}
        for target in active:
            pl = places[target.label]
            failure = (_setup(wl, pl.host_values(), pl.work, base_env)
                       or pl.prepare_server(wl.timeout * 10))
            if failure:
                outcome.failed[target.label] = failure
        active = [t for t in active if t.label not in outcome.failed]
        rnd = 0
        close_refs: dict[str, bytes] = {}  # the run's first output of each [validate] close file
        total_rounds = plan.warmup + (plan.fixed_rounds or plan.max_rounds)
        while rnd < total_rounds and active:
            warm = rnd < plan.warmup
            for pos, target in enumerate(round_order(active, rnd)):
                pl = places[target.label]
                pad = rng.randrange(0, 4096) if plan.randomize_env else 0
                try:
                    # A [server] workload: the target's server runs around this sample only.
                    with pl.server() as srv:
                        failure = pl.warm_server(srv, wl.timeout)
                        if failure:
                            raise ServerError(failure)
                        values, host_values = pl.values(srv), pl.host_values(srv)
                        argv = pl.argv([substitute(a, values) for a in wl.command])
                        stdin = Path(substitute(wl.stdin, host_values)) if wl.stdin else None
                        files = [Path(substitute(f, host_values)) for f in wl.validate_files]
                        close = [(t, Path(substitute(t, host_values)))
                                 for t in (wl.close.files if wl.close else ())]
                        for f in [*files, *(p for _, p in close)]:
                            f.unlink(missing_ok=True)  # a stale file must not pass for this run
                        started = now_iso()
                        raw = run_sample(argv, cwd=pl.work, env=pl.env(base_env, "x" * pad),
                                         timeout_s=wl.timeout, launch=launch, stdin=stdin)
                    outcome.count_escaped(target.label, raw)
                    if srv.peak_rss_kb is not None:
                        # What a server workload compares is the server's memory, not the client's.
                        raw = replace(raw, max_rss_kb=srv.peak_rss_kb)
                except ServerError as exc:
                    outcome.failed[target.label] = str(exc)
                    continue
                except KeyboardInterrupt:
                    outcome.interrupted = True
                    outcome.stop_reason = "interrupted (Ctrl-C)"
                    raise
                sample = sample_from(raw, wl, run_id, target.label, rnd, pos, warm, started, pad,
                                      files, close, close_refs)
                store.add_sample(sample)
                samples.append(sample)
                if on_sample:
                    on_sample(sample)
                if sample.status == "interrupted":
                    outcome.interrupted = True
                    raise KeyboardInterrupt
                if sample.status != "ok":
                    outcome.failed[target.label] = sample.error or sample.status
                    outcome.timed_out |= sample.status == "timeout"
            active = [t for t in active if t.label not in outcome.failed]
            rnd += 1
            counted = rnd - plan.warmup
            outcome.rounds = max(counted, 0)
            if warm or not active:
                continue
            if plan.fixed_rounds is not None:
                if counted >= plan.fixed_rounds:
                    outcome.stop_reason = f"fixed {plan.fixed_rounds} rounds"
                    break
                continue
            elapsed = time.monotonic() - t_start
            if counted >= plan.min_rounds:
                hw = widest_interval(samples, wl.primary, [t.label for t in active])
                if hw <= plan.precision:
                    outcome.stop_reason = (f"precision reached: CI within ±{hw * 100:.1f}% "
                                           f"(asked ±{plan.precision * 100:g}%)")
                    break
                if elapsed >= plan.max_time_s:
                    outcome.stop_reason = (f"time budget {plan.max_time_s:g}s ended at "
                                           f"±{hw * 100:.1f}% (asked ±{plan.precision * 100:g}%)")
                    break
                if counted >= plan.max_rounds:
                    outcome.stop_reason = (f"max {plan.max_rounds} rounds reached at "
                                           f"±{hw * 100:.1f}% (asked ±{plan.precision * 100:g}%)")
                    break
        if plan.counters:
            for pos, target in enumerate(active):
                pl = places[target.label]
                if pl.in_sysroot:
                    continue  # valgrind would count chroot/bwrap, not the program
                values = pl.host_values()
                argv = [substitute(a, values) for a in wl.command]
                files = [Path(substitute(f, values)) for f in wl.validate_files]
                started = now_iso()
                # No environment padding: the count must repeat exactly for the same build.
                raw, count = count_instructions(argv, pl.work, base_env, wl.timeout, launch,
                                                Path(substitute(wl.stdin, values))
                                                if wl.stdin else None)
                outcome.count_escaped(target.label, raw)
                sample = sample_from(raw, wl, run_id, target.label, rnd, pos, False, started, 0,
                                      files)
                sample = replace(sample, kind="counters", instructions=count,
                                 status=sample.status if count is not None else "failed",
                                 error=sample.error if count is not None else
                                 "valgrind wrote no instruction count")
                store.add_sample(sample)
                samples.append(sample)
        if outcome.failed:
            # A precision reached by the survivors says nothing about the comparison that failed.
            failed = ", ".join(sorted(outcome.failed))
            outcome.stop_reason = (f"{failed} failed" if not active
                                   else f"{failed} failed; others: {outcome.stop_reason or 'ran'}")
    return outcome
