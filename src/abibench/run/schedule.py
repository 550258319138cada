"""Interleaved rounds: warm-up, then rounds of every target in alternating order, until the
ratio's confidence interval is tight enough or the budget ends.

Each round runs every target once and the order alternates (A B, B A, ...), so a slow drift of
the machine (thermal, a neighbour's load) falls on every target alike and pairs by round.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from ..errors import UsageError
from ..probe import board
from ..probe.memory import TreeAccounting, tree_accounting
from ..probe.noise import NoiseProfile
from ..records import Artifact, Sample, Target
from ..workloads.profile import Workload, substitute
from ..workspace import owned_dir
from .counted import baseline_samples, count_target, now_iso
from .designs import Design, choose, repeats_for
from .launcher import How, Job, RawResult, run_sample, run_together
from .placement import Placement, ServerRun
from .runtime import AbiRuntime
from .samples import sample_from
from .servers import ServerError
from .signals import signals_as_interrupt
from .steps import untimed_output, untimed_step
from .stopping import Precision, noise_floor, precision


class SampleSink(Protocol):
    """Where every sample goes the moment it exists (the store)."""

    def add_sample(self, s: Sample) -> None: ...


# A workload measured on its own (run_workload, not under a suite budget) stops at these.
DEFAULT_MAX_TIME_S = 120.0
DEFAULT_MAX_ROUNDS = 30
ROUND_CAP = 10_000  # under a budget: no round limit but this one


@dataclass(frozen=True)
class Plan:
    min_rounds: int = 5
    max_rounds: int | None = None  # None: 30 for a workload alone, the budget's under --budget
    fixed_rounds: int | None = None  # --rounds N: exactly N counted rounds, no adaptive stop
    precision: float = 0.02  # stop when every ratio CI half-width is within this fraction
    max_time_s: float | None = None  # per workload (--max-time), warm-up included
    warmup: int = 1
    seed: int = 0  # environment padding is drawn from this, so a run can be repeated exactly
    randomize_env: bool = True
    counters: bool = False  # extra runs per target under valgrind, counting instructions
    # what the counted runs simulate: "insn" (instructions only) or "cache" (cache and branches)
    simulation: str = "insn"
    # --budget: the whole run's time for adaptive rounds, allocated across workloads by
    # run/budget.py; None: each workload alone, up to max_time_s.
    budget_s: float | None = None
    design: str = "auto"  # --design: how rounds are sampled (run/designs.py), "auto" chooses

    def time_limit(self) -> float:
        """One workload's time limit, warm-up included."""
        if self.max_time_s is not None:
            return self.max_time_s
        return math.inf if self.budget_s is not None else DEFAULT_MAX_TIME_S

    def round_limit(self) -> int:
        if self.max_rounds is not None:
            return self.max_rounds
        return ROUND_CAP if self.budget_s is not None else DEFAULT_MAX_ROUNDS


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
    # target -> its samples stopped (SIGSTOP, SIGTSTP) while they ran: stored, never counted
    stopped: dict[str, int] = field(default_factory=dict)
    # target -> processes its samples left alive, killed by the launcher: not a failure, but
    # something ran beside the next sample until it was killed, so the run records it.
    escaped: dict[str, int] = field(default_factory=dict)
    design: str = "sequential"  # how its counted rounds were sampled, and why
    design_reason: str = ""
    repeat: int = 1

    uncaught: set[str] = field(default_factory=set)  # targets sampled without a subreaper
    # Targets whose counted run read the step clock a million times or more (a process of it):
    # a loop that runs until time has passed, whose count says how long it ran.
    clock_bound: dict[str, int] = field(default_factory=dict)

    def count_escaped(self, target: str, raw: RawResult) -> None:
        if raw.escaped:
            self.escaped[target] = self.escaped.get(target, 0) + raw.escaped
        if not raw.subreaper:
            self.uncaught.add(target)


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
        for path in pl.built_files():
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
    spent_s: float  # measuring time the workload already used, against its budget
    failed: dict[str, str] = field(default_factory=dict)  # targets that failed before
    counted_targets: frozenset[str] = frozenset()  # targets whose instructions were counted


PAD_RANGE = 4096  # bytes of environment padding: enough to move the stack across a page


def round_pad(seed: int, workload: str, number: int) -> int:
    """The environment padding of every target's sample in one round.

    Padding is random so that no ABI is measured at one lucky or unlucky stack alignment (a
    layout bias); it is the same for every target of a round because a round is the block the
    comparison pairs: a padding that slows both programs then cancels in the round's ratio
    instead of adding to its variance (bench/noise.py measured what padding adds). A function
    of the round's number, not a stream, so a resumed run draws what an uninterrupted one would.
    """
    return random.Random(f"{seed}:{workload}:{number}").randrange(0, PAD_RANGE)


@dataclass
class _Prepared:
    """One target's sample, ready to launch."""

    target: Target
    pos: int
    pad: int
    argv: list[str]
    stdin: Path | None
    files: list[Path]
    close: list[tuple[str, Path]]
    env: dict[str, str]


class Session:
    """One workload's rounds, one at a time: opened (placements, checks, setup), then rounds on
    demand, from run_workload alone or from the suite's budget (run/budget.py), then finished.

    Every sample is stored the moment it exists; a round's duration is what the budget counts.
    """

    def __init__(self, wl: Workload, targets: list[tuple[Target, Artifact]], plan: Plan,
                 store: SampleSink, run_id: str, launch: Path, *,
                 on_sample: Callable[[Sample], None] | None = None,
                 inputs: dict[str, Path] | None = None, resume: Continuation | None = None,
                 noise: NoiseProfile | None = None, cpus: list[int] | None = None,
                 runtimes: dict[str, AbiRuntime] | None = None) -> None:
        if plan.design == "short" and wl.short:
            # The short design measures the profile's smaller size, warm-ups included.
            wl = wl.with_params(wl.short)
        self.wl, self.targets, self.plan, self.store = wl, targets, plan, store
        self.run_id, self.launch, self.on_sample = run_id, launch, on_sample
        self.inputs = inputs or {}
        self.resume = resume or Continuation(0, 0, (), 0.0)
        self.noise = noise
        self.runtimes = runtimes or {}  # by ABI name
        # A board that shows its clock, temperature or throttling is read after every sample.
        first = board.read_now()
        self.watch_board = any(v is not None for v in (first.clock_mhz, first.temp_c,
                                                        first.throttled))
        self.cpus = sorted(os.sched_getaffinity(0)) if cpus is None else cpus
        self.outcome = ScheduleResult(wl.id)
        self.outcome.failed.update(self.resume.failed)
        self.samples: list[Sample] = list(self.resume.prior)
        self.base_env = dict(os.environ)
        self.places: dict[str, Placement] = {}
        self.active: list[Target] = []
        self.rnd = 0  # rounds run by this session, warm-ups included
        self.spent_s = self.resume.spent_s
        self.round_s: list[float] = []  # duration of each counted round of this session
        self.close_refs: dict[str, bytes] = {}  # the run's first output of each close file
        self.design = Design("sequential", "")
        self.repeat = wl.repeat if isinstance(wl.repeat, int) else 1
        self.stopped = False
        self.outcome.rounds = self.resume.counted_rounds

    # -- opening ---------------------------------------------------------------------------

    def open(self, stack: contextlib.ExitStack) -> None:
        """Placements, the checks that the programs are the built ones, setup steps."""
        tmp = stack.enter_context(owned_dir(self.wl.base_id or self.wl.id))
        if self.wl.server is not None:
            # A polite kill must stop the servers too: SIGTERM unwinds like Ctrl-C.
            stack.enter_context(signals_as_interrupt())
        self.places = {t.label: Placement.create(self.wl, t, a, tmp, self.inputs, stack,
                                                 self.runtimes.get(t.abi.name))
                       for t, a in self.targets}
        # The very programs that were built, each of its own ABI, none shared by two targets.
        shared = _shared_programs(self.places)
        for target, _ in self.targets:
            if target.label in self.outcome.failed:
                continue
            pl = self.places[target.label]
            failure = (shared.get(target.label) or pl.emulation_problem() or pl.verify()
                       or _setup(self.wl, pl.host_values(), pl.work, self.base_env)
                       or pl.prepare_server(self.wl.timeout * 10))
            if failure:
                self.outcome.failed[target.label] = failure
        self.active = [t for t, _ in self.targets if t.label not in self.outcome.failed]
        if not self.active or self.rounds_left() <= 0:
            self.stopped = True
        if self.plan.warmup == 0:
            self._choose_design()

    # -- state -----------------------------------------------------------------------------

    @property
    def warming(self) -> bool:
        return self.rnd < self.plan.warmup

    @property
    def counted(self) -> int:
        return self.resume.counted_rounds + max(self.rnd - self.plan.warmup, 0)

    def rounds_left(self) -> int:
        """Counted rounds the plan still allows (fixed: exactly those)."""
        limit = (self.plan.fixed_rounds if self.plan.fixed_rounds is not None
                 else self.plan.round_limit())
        return limit - self.counted

    def precision(self) -> Precision:
        return precision(self.samples, self.wl.primary, [t.label for t in self.active])

    def round_cost(self) -> float:
        """Seconds a counted round takes here (the median of the last ones)."""
        recent = sorted(self.round_s[-9:])
        return recent[len(recent) // 2] if recent else math.nan

    def elapsed(self) -> float:
        return self.spent_s

    def stop(self, reason: str) -> None:
        self.outcome.stop_reason = reason
        self.stopped = True

    # -- rounds ----------------------------------------------------------------------------

    def run_round(self) -> None:
        """One round: every active target once (warm-up or counted), in the design's way."""
        warm = self.warming
        number = self.resume.next_round + self.rnd  # the round as stored: resumed runs go on
        t0 = time.monotonic()
        order = round_order(self.active, number)
        if self.design.name == "simultaneous" and not warm and len(order) == 2:
            self._simultaneous(order, number)
        else:
            for pos, target in enumerate(order):
                self._one(target, pos, number, warm)
        self.active = [t for t in self.active if t.label not in self.outcome.failed]
        took = time.monotonic() - t0
        self.spent_s += took
        self.rnd += 1
        self.outcome.rounds = self.counted
        if not warm:
            self.round_s.append(took)
        if self.rnd == self.plan.warmup:
            self._choose_design()
        if not self.active:
            self.stopped = True
        elif self.plan.fixed_rounds is not None and self.counted >= self.plan.fixed_rounds:
            self.stop(f"fixed {self.plan.fixed_rounds} rounds")

    def _prepare(self, target: Target, pos: int, number: int,
                 srv: ServerRun | None = None) -> _Prepared:
        pl = self.places[target.label]
        pad = round_pad(self.plan.seed, self.wl.id, number) if self.plan.randomize_env else 0
        argv = pl.argv([substitute(a, pl.values(srv)) for a in self.wl.command])
        stdin = pl.stdin_path(srv)
        files, close = pl.output_files(srv)
        for f in [*files, *(p for _, p in close)]:
            f.unlink(missing_ok=True)  # a stale file must not pass for this run
        return _Prepared(target, pos, pad, argv, stdin, files, close,
                         pl.env(self.base_env, "x" * pad))

    def _one(self, target: Target, pos: int, number: int, warm: bool) -> None:
        pl = self.places[target.label]
        how = How(repeat=self.repeat) if warm else self.design.how(pos, number, self.repeat)
        try:
            # A [server] workload: the target's server runs around this sample only; so does
            # a [display] workload's X server.
            with pl.server() as srv, pl.display():
                failure = pl.warm_server(srv, self.wl.timeout)
                if failure:
                    raise ServerError(failure)
                prep = self._prepare(target, pos, number, srv)
                started = now_iso()
                if self.wl.browser is not None:
                    # Imported here: the browser's driver (websockets, the DevTools session)
                    # costs every run's start 50-150 ms, and only a [browser] workload uses it.
                    from .browser import run_browser_sample

                    raw = run_browser_sample(pl, prep.argv, prep.env, self.wl.timeout,
                                             self.launch, how, self._tree())
                else:
                    raw = run_sample(prep.argv, cwd=pl.work, env=prep.env,
                                     timeout_s=pl.timeout(self.wl.timeout), launch=self.launch,
                                     stdin=prep.stdin, how=how, tree=self._tree(),
                                     merge_stderr=self.wl.merge_stderr)
                after = self._after(pl, raw, srv)
                # Again: the program may have removed {work} or put a link where an output
                # belongs, and nothing is read through it.
                prep.files, prep.close = pl.output_files(srv)
            self.outcome.count_escaped(target.label, raw)
            if srv.peak_rss_kb is not None:
                # What a server workload compares is the server's memory, not the client's.
                raw = replace(raw, max_rss_kb=srv.peak_rss_kb, tree_peak_kb=srv.tree_peak_kb,
                              tree_memory=srv.tree_memory)
        except (ServerError, UsageError) as exc:
            self.outcome.failed[target.label] = str(exc)
            return
        except KeyboardInterrupt:
            self._interrupted()
            raise
        self._keep(raw, prep, number, warm, started, "sequential" if warm else self.design.name,
                   how.cpu, after=after)

    def _simultaneous(self, order: list[Target], number: int) -> None:
        """Both targets at the same moment, each pinned to its CPU (swapped every round)."""
        preps = [self._prepare(t, pos, number) for pos, t in enumerate(order)]
        hows = [self.design.how(p.pos, number, self.repeat) for p in preps]
        jobs = [Job(p.argv, self.places[p.target.label].work, p.env,
                    self.places[p.target.label].timeout(self.wl.timeout), p.stdin, h,
                    self._tree(), merge_stderr=self.wl.merge_stderr)
                for p, h in zip(preps, hows, strict=True)]
        started = now_iso()
        try:
            raws = run_together(jobs, self.launch)
        except UsageError as exc:
            for p in preps:
                self.outcome.failed[p.target.label] = str(exc)
            return
        except KeyboardInterrupt:
            self._interrupted()
            raise
        for i, (prep, raw, how) in enumerate(zip(preps, raws, hows, strict=True)):
            other = raws[1 - i]
            after = self._after(self.places[prep.target.label], raw)
            try:
                prep.files, prep.close = self.places[prep.target.label].output_files()
            except UsageError as exc:
                self.outcome.failed[prep.target.label] = str(exc)
                continue
            self.outcome.count_escaped(prep.target.label, raw)
            # The other program of the pair is abibench's own work, not a neighbour's.
            ours = (other.user_s + other.sys_s) * other.repeat
            self._keep(raw, prep, number, False, started, "simultaneous", how.cpu, ours,
                       after=after)

    def _tree(self) -> TreeAccounting | None:
        """How the program's whole tree is measured ([run] memory = "tree"); for a server
        workload the server's tree is (run/placement.py), not the client's."""
        if self.wl.memory != "tree" or self.wl.server is not None:
            return None
        return tree_accounting()

    def _after(self, pl: Placement, raw: RawResult,
               srv: ServerRun | None = None) -> tuple[str | None, str]:
        """[run] after, untimed, once the sample worked: why it failed (or None), and what it
        printed ([validate] after_match reads it)."""
        if not self.wl.after or not raw.ok:
            return None, ""
        return untimed_output(pl.step_argv(self.wl.after, srv), pl.work,
                              pl.env(self.base_env, ""), pl.timeout(self.wl.timeout),
                              "[run] after step")

    def _keep(self, raw: RawResult, prep: _Prepared, number: int, warm: bool, started: str,
              design: str, cpu: int | None, ours_s: float = 0.0,
              after: tuple[str | None, str] = (None, "")) -> None:
        # When the after step failed, what it left (a partial decode) is neither validated
        # nor taken as the run's reference output.
        after_error, after_out = after
        files, close = ([], []) if after_error else (prep.files, prep.close)
        sample = sample_from(raw, self.wl, self.run_id, prep.target.label, number, prep.pos, warm,
                             started, prep.pad, files, close, self.close_refs,
                             design=design, cpu=cpu, ours_s=ours_s,
                             emulated=self.places[prep.target.label].emulated,
                             after_out=None if after_error else after_out)
        if after_error and sample.status == "ok":
            sample = replace(sample, status="failed", error=after_error, check=None)
        sample = self._vouched(prep.target.label, sample)
        if self.watch_board:
            now = board.read_now()
            sample = replace(sample, clock_mhz=now.clock_mhz, temp_c=now.temp_c,
                             throttled=now.throttled)
        self.store.add_sample(sample)
        self.samples.append(sample)
        if self.on_sample:
            self.on_sample(sample)
        if sample.status == "interrupted":
            self._interrupted()
            raise KeyboardInterrupt
        if sample.status != "ok":
            self.outcome.failed[prep.target.label] = sample.error or sample.status
            self.outcome.timed_out |= sample.status == "timeout"

    def _vouched(self, label: str, sample: Sample) -> Sample:
        """Every sample passes here before it is stored: the program that ran is still the one
        built (run/pinned.py), else the sample failed and the target with it."""
        sample = self.places[label].vouch(sample)
        if self.places[label].guard.broken and label not in self.outcome.changed:
            self.outcome.changed.append(label)
        if sample.discarded is not None:
            self.outcome.stopped[label] = self.outcome.stopped.get(label, 0) + 1
        return sample

    def _interrupted(self) -> None:
        self.outcome.interrupted = True
        self.outcome.stop_reason = "interrupted"

    def _choose_design(self) -> None:
        """After the warm-ups: the repeats per sample and the design, from their length."""
        walls = [s.wall_s for s in self.samples if s.warmup and s.status == "ok" and s.wall_s > 0]
        sample_s = sorted(walls)[len(walls) // 2] if walls else None
        self.repeat = repeats_for(self.wl.repeat, sample_s)
        in_sysroot = any(pl.in_sysroot for pl in self.places.values())
        iters = max(1000, (self.noise.chunk_iters if self.noise else 0) // 10)
        try:
            self.design = choose(self.plan.design, self.wl, self.noise,  # type: ignore[arg-type]
                                 sample_s * self.repeat if sample_s else None, len(self.active),
                                 in_sysroot, self.cpus, iters)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.outcome.design, self.outcome.design_reason = self.design.name, self.design.reason
        self.outcome.repeat = self.repeat

    # -- the end ---------------------------------------------------------------------------

    def check_stop(self) -> str | None:
        """The stopping rule of a workload measured alone (no suite budget)."""
        if self.stopped:
            return self.outcome.stop_reason or None
        if self.warming or self.plan.fixed_rounds is not None or self.counted < \
                self.plan.min_rounds:
            return None
        pr = self.precision()
        asked = f"(asked ±{self.plan.precision * 100:g}%)"
        why = None
        if pr.half_width <= self.plan.precision:
            why = f"precision reached: CI within ±{pr.half_width * 100:.1f}% {asked}"
        elif self.spent_s >= self.plan.time_limit():
            floor = noise_floor(pr.spread, self.round_cost(), self.plan.precision,
                                pr.half_width)
            why = (f"time limit {self.plan.time_limit():g}s ended at "
                   f"±{pr.half_width * 100:.1f}% {asked}; {floor}")
        elif self.rounds_left() <= 0:
            why = (f"max {self.plan.round_limit()} rounds reached at ±{pr.half_width * 100:.1f}% "
                   f"{asked}")
        if why:
            self.stop(why)
        return why

    def finish(self) -> ScheduleResult:
        """Counters, the last check of every program, and the reason for each failure."""
        outcome = self.outcome
        if not outcome.stop_reason and self.plan.fixed_rounds is not None and self.active:
            outcome.stop_reason = f"fixed {self.plan.fixed_rounds} rounds"
        if self.plan.counters:
            number = self.resume.next_round + self.rnd
            for pos, target in enumerate(self.active):
                if target.label in self.resume.counted_targets:
                    continue
                try:
                    counted_run = count_target(self.wl, self.places[target.label], self.run_id,
                                               target.label, number, pos, self.base_env,
                                               self.launch, self.plan.simulation)
                except UsageError as exc:  # e.g. {work} removed, a link out of it
                    outcome.failed[target.label] = str(exc)
                    continue
                if counted_run is not None:
                    sample, raw, reads = counted_run
                    sample = self._vouched(target.label, sample)
                    if sample.status != "ok" and self.places[target.label].guard.broken:
                        outcome.failed[target.label] = sample.error or sample.status
                    outcome.count_escaped(target.label, raw)
                    if reads:
                        outcome.clock_bound[target.label] = reads
                    self.store.add_sample(sample)
                    self.samples.append(sample)
        for pos, target in enumerate(self.active):
            # The emulator's own peak memory: the ABI's empty program under it, a few times.
            for sample in baseline_samples(self.wl, self.places[target.label],
                                           self.run_id, target.label,
                                           self.resume.next_round + self.rnd, pos, self.launch):
                self.store.add_sample(sample)
                self.samples.append(sample)
        for target in self.active:
            # Again after the last sample: a program replaced mid-run is no result.
            changed = self.places[target.label].verify()
            if changed and target.label not in outcome.failed:
                outcome.failed[target.label] = changed
            if changed and target.label not in outcome.changed:
                outcome.changed.append(target.label)
        active = [t for t in self.active if t.label not in outcome.failed]
        if outcome.failed:
            # A precision reached by the survivors says nothing about the comparison that failed.
            failed = ", ".join(sorted(outcome.failed))
            outcome.stop_reason = (f"{failed} failed" if not active
                                   else f"{failed} failed; others: {outcome.stop_reason or 'ran'}")
        return outcome


def run_workload(wl: Workload, targets: list[tuple[Target, Artifact]], plan: Plan,
                 store: SampleSink, run_id: str, launch: Path,
                 on_sample: Callable[[Sample], None] | None = None,
                 inputs: dict[str, Path] | None = None,
                 resume: Continuation | None = None,
                 noise: NoiseProfile | None = None) -> ScheduleResult:
    """One workload alone: warm-up, then rounds until its own stopping rule says so."""
    session = Session(wl, targets, plan, store, run_id, launch, on_sample=on_sample,
                      inputs=inputs, resume=resume, noise=noise)
    with contextlib.ExitStack() as stack:
        session.open(stack)
        while not session.stopped:
            session.run_round()
            session.check_stop()
        return session.finish()
