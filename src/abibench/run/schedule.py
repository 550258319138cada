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

from ..errors import UsageError
from ..records import Artifact, Sample, Target
from ..workloads.profile import Workload, substitute
from ..workspace import owned_dir
from .counters import MAX_ATTEMPTS, agreement, count_events, profile_of
from .launcher import RawResult, run_sample
from .placement import Placement
from .samples import sample_from
from .servers import ServerError
from .signals import signals_as_interrupt
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
    counters: bool = False  # extra runs per target under valgrind, counting instructions
    # what the counted runs simulate: "insn" (instructions only) or "cache" (cache and branches)
    simulation: str = "insn"


@dataclass
class ScheduleResult:
    """How one workload's rounds went: what the store keeps as its Outcome, and failures."""

    workload: str
    rounds: int = 0
    stop_reason: str = ""
    failed: dict[str, str] = field(default_factory=dict)  # target -> why it stopped being run
    timed_out: bool = False
    interrupted: bool = False
    changed: list[str] = field(default_factory=list)  # targets whose program changed mid-run
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


def _shared_programs(places: dict[str, Placement]) -> dict[str, str]:
    """Targets whose program is the same file as another target's: one build overwrote the
    other's, and the samples of both would measure one binary."""
    owner: dict[Path, str] = {}
    out: dict[str, str] = {}
    for label, pl in places.items():
        for path in pl.program_files():
            real = path.resolve()
            if real in owner and owner[real] != label:
                out[label] = (f"{path} is the same file as {owner[real]}'s program: two targets "
                              "would measure one binary; fix the profile's [source] artifacts")
            owner.setdefault(real, label)
    return out


@dataclass(frozen=True)
class Continuation:
    """Where a resumed workload picks up (`run --resume`): what its stored samples already hold.

    Rounds resume numbering after the last stored one, with fresh warm-ups (caches are cold
    again after a restart; warm-ups never count), so pairing by round is unchanged.
    """

    next_round: int  # the first round number not stored yet
    counted_rounds: int  # complete counted rounds already stored
    prior: tuple[Sample, ...]  # those rounds' counted samples, for the stopping rule
    pads_drawn: int  # environment paddings already drawn from the workload's seeded stream
    spent_s: float  # measuring time the workload already used, against its budget
    failed: dict[str, str] = field(default_factory=dict)  # targets that failed before
    counted_targets: frozenset[str] = frozenset()  # targets whose instructions were counted


def _stop_reason(plan: Plan, counted: int, hw: float, elapsed: float) -> str | None:
    """Why adaptive stopping ends the workload now, or None to go on."""
    asked = f"(asked ±{plan.precision * 100:g}%)"
    if hw <= plan.precision:
        return f"precision reached: CI within ±{hw * 100:.1f}% {asked}"
    if elapsed >= plan.max_time_s:
        return f"time budget {plan.max_time_s:g}s ended at ±{hw * 100:.1f}% {asked}"
    if counted >= plan.max_rounds:
        return f"max {plan.max_rounds} rounds reached at ±{hw * 100:.1f}% {asked}"
    return None


def run_workload(wl: Workload, targets: list[tuple[Target, Artifact]], plan: Plan,
                 store: SampleSink, run_id: str, launch: Path,
                 on_sample: Callable[[Sample], None] | None = None,
                 inputs: dict[str, Path] | None = None,
                 resume: Continuation | None = None) -> ScheduleResult:
    outcome = ScheduleResult(wl.id)
    resume = resume or Continuation(0, 0, (), 0, 0.0)
    rng = random.Random(f"{plan.seed}:{wl.id}")
    for _ in range(resume.pads_drawn):  # the same stream an uninterrupted run would draw from
        rng.randrange(0, 4096)
    outcome.failed.update(resume.failed)
    active = [t for t, _ in targets if t.label not in outcome.failed]
    samples: list[Sample] = list(resume.prior)
    base_env = dict(os.environ)
    t_start = time.monotonic() - resume.spent_s
    inputs = inputs or {}
    with owned_dir(wl.base_id or wl.id) as tmp, contextlib.ExitStack() as stack:
        if wl.server is not None:
            # A polite kill must stop the servers too: SIGTERM unwinds like Ctrl-C.
            stack.enter_context(signals_as_interrupt())
        # Where each target runs: the host, or its Debian sysroot (with its server, if any).
        places = {t.label: Placement.create(wl, t, a, tmp, inputs, stack)
                  for t, a in targets}
        # The very programs that were built, each of its own ABI, none shared by two targets.
        shared = _shared_programs(places)
        for target in active:
            pl = places[target.label]
            failure = (shared.get(target.label) or pl.verify()
                       or _setup(wl, pl.host_values(), pl.work, base_env)
                       or pl.prepare_server(wl.timeout * 10))
            if failure:
                outcome.failed[target.label] = failure
        active = [t for t in active if t.label not in outcome.failed]
        rnd = 0
        close_refs: dict[str, bytes] = {}  # the run's first output of each [validate] close file
        done = resume.counted_rounds
        outcome.rounds = done
        left = (plan.fixed_rounds if plan.fixed_rounds is not None else plan.max_rounds) - done
        total_rounds = plan.warmup + max(left, 0) if left > 0 else 0
        while rnd < total_rounds and active:
            warm = rnd < plan.warmup
            number = resume.next_round + rnd  # the round as stored: resumed runs continue
            for pos, target in enumerate(round_order(active, number)):
                pl = places[target.label]
                pad = rng.randrange(0, 4096) if plan.randomize_env else 0
                try:
                    # A [server] workload: the target's server runs around this sample only.
                    with pl.server() as srv:
                        failure = pl.warm_server(srv, wl.timeout)
                        if failure:
                            raise ServerError(failure)
                        argv = pl.argv([substitute(a, pl.values(srv)) for a in wl.command])
                        stdin = pl.stdin_path(srv)
                        files, close = pl.output_files(srv)
                        for f in [*files, *(p for _, p in close)]:
                            f.unlink(missing_ok=True)  # a stale file must not pass for this run
                        started = now_iso()
                        raw = run_sample(argv, cwd=pl.work, env=pl.env(base_env, "x" * pad),
                                         timeout_s=wl.timeout, launch=launch, stdin=stdin)
                    outcome.count_escaped(target.label, raw)
                    if srv.peak_rss_kb is not None:
                        # What a server workload compares is the server's memory, not the client's.
                        raw = replace(raw, max_rss_kb=srv.peak_rss_kb)
                except (ServerError, UsageError) as exc:
                    outcome.failed[target.label] = str(exc)
                    continue
                except KeyboardInterrupt:
                    outcome.interrupted = True
                    outcome.stop_reason = "interrupted"
                    raise
                sample = sample_from(raw, wl, run_id, target.label, number, pos, warm, started,
                                     pad, files, close, close_refs)
                store.add_sample(sample)
                samples.append(sample)
                if on_sample:
                    on_sample(sample)
                if sample.status == "interrupted":
                    outcome.interrupted = True
                    outcome.stop_reason = "interrupted"
                    raise KeyboardInterrupt
                if sample.status != "ok":
                    outcome.failed[target.label] = sample.error or sample.status
                    outcome.timed_out |= sample.status == "timeout"
            active = [t for t in active if t.label not in outcome.failed]
            rnd += 1
            counted = done + max(rnd - plan.warmup, 0)
            outcome.rounds = counted
            if warm or not active:
                continue
            if plan.fixed_rounds is not None:
                if counted >= plan.fixed_rounds:
                    outcome.stop_reason = f"fixed {plan.fixed_rounds} rounds"
                    break
                continue
            if counted >= plan.min_rounds:
                hw = widest_interval(samples, wl.primary, [t.label for t in active])
                why = _stop_reason(plan, counted, hw, time.monotonic() - t_start)
                if why:
                    outcome.stop_reason = why
                    break
        if not outcome.stop_reason and plan.fixed_rounds is not None and active:
            outcome.stop_reason = f"fixed {plan.fixed_rounds} rounds"
        if plan.counters:
            number = resume.next_round + rnd
            for pos, target in enumerate(active):
                if target.label in resume.counted_targets:
                    continue
                counted_run = _count(wl, places[target.label], run_id, target.label, number,
                                     pos, base_env, launch, plan.simulation)
                if counted_run is not None:
                    sample, raw = counted_run
                    outcome.count_escaped(target.label, raw)
                    store.add_sample(sample)
                    samples.append(sample)
        for target in active:
            # Again after the last sample: a program replaced mid-run is no result.
            changed = places[target.label].verify()
            if changed:
                outcome.failed[target.label] = changed
                outcome.changed.append(target.label)
        if outcome.failed:
            # A precision reached by the survivors says nothing about the comparison that failed.
            failed = ", ".join(sorted(outcome.failed))
            outcome.stop_reason = (f"{failed} failed" if not active
                                   else f"{failed} failed; others: {outcome.stop_reason or 'ran'}")
    return outcome


def _count(wl: Workload, pl: Placement, run_id: str, label: str, number: int, pos: int,
           base_env: dict[str, str], launch: Path,
           simulation: str = "insn") -> tuple[Sample, RawResult] | None:
    """Runs under valgrind counting what the target's programs execute (None inside a sysroot:
    valgrind would count chroot/bwrap, not the program).

    Valgrind's counts repeat exactly for the same binary, inputs and environment, so the target
    is counted twice, and again (up to MAX_ATTEMPTS runs) until two runs agree; the stored
    profile is that of the last run, with every attempt's count, and says when none agreed.
    """
    if pl.in_sysroot:
        return None
    # [run] counters: a fixed amount of work for a program whose own command runs for a fixed
    # time (openssl speed), so that instruction counts compare the same work.
    command = wl.count_command or wl.command
    argv = [substitute(a, pl.host_values()) for a in command]
    files, _ = pl.output_files()
    started = now_iso()
    attempts: list[int] = []
    raw = None
    parsed = None
    while len(attempts) < MAX_ATTEMPTS:
        # No environment padding: the count must repeat exactly for the same build.
        raw, parsed = count_events(argv, pl.work, base_env, wl.timeout, launch,
                                   pl.stdin_path(), pl.program_files(), simulation)
        if parsed is None or not raw.ok:
            break
        attempts.append(parsed.totals[parsed.events.index("Ir")] if "Ir" in parsed.events
                        else parsed.totals[0])
        if len(attempts) >= 2 and agreement(attempts) is not None:
            break
    assert raw is not None
    sample = sample_from(raw, wl, run_id, label, number, pos, False, started, 0, files)
    if wl.count_command:
        # The program's own metrics and checks belong to its timed command, not to this one.
        sample = replace(sample, status="ok" if raw.ok else sample.status, metrics={},
                         check=None, error=None if raw.ok else sample.error)
    if parsed is None or not attempts:
        return replace(sample, kind="counters", instructions=None,
                       status="failed" if sample.status == "ok" else sample.status,
                       error=sample.error or "valgrind wrote no instruction count"), raw
    profile = profile_of(parsed, attempts, simulation)
    return replace(sample, kind="counters", instructions=attempts[-1], counters=profile), raw
