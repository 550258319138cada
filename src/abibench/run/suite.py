"""A whole measuring run: probe the host, obtain every workload per ABI, run interleaved rounds.

Everything measured goes to a sink (the store) the moment it exists. Nothing here prints;
progress goes to a callback so the CLI decides how to show it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from .. import __version__
from ..abi import Abi, get_abi
from ..errors import (
    EXIT_HOST,
    EXIT_INTERRUPTED,
    EXIT_TIMEOUT,
    EXIT_WORKLOAD,
    AbibenchError,
)
from ..hashing import sha256_regular
from ..obtain import debsource
from ..obtain.inputs import InputError, describe_input, generate_input
from ..obtain.prebuilt import obtain as obtain_prebuilt
from ..probe import host
from ..probe import noise as noise_probe
from ..probe.abis import AbiStatus, probe_all
from ..probe.memory import tree_accounting
from ..probe.noise import NoiseProfile
from ..records import (
    JSON,
    Artifact,
    HostContext,
    Outcome,
    Run,
    RunConfig,
    RunDoc,
    RunWarning,
    Sample,
    Target,
    TargetStatus,
    WorkloadMeta,
    recorded_builtins,
)
from ..workloads.profile import MAX_PROFILE_BYTES, Workload
from ..workspace import clean_stale
from .budget import allocate, open_rounds
from .continuation import continuation
from .launcher import launcher
from .obtaining import (
    Obtainer,
    _no_debian_reason,
    obtain_debian,
    obtain_workload,
    resolve_cc,
    runtimes_of,
)
from .preflight import check_asked_abis, check_commands, check_compiler
from .request import Progress, Request, Result, RunSink, new_run_id, targets_of
from .runtime import AbiRuntime
from .schedule import Continuation, ScheduleResult, Session
from .signals import signals_as_interrupt
from .treemem import clean_stale_groups

# Re-exported: what a run is asked and returns lives in run/request.py, obtaining in
# run/obtaining.py; callers keep importing them from here.
__all__ = ["Progress", "Request", "Result", "RunSink", "_no_debian_reason", "new_run_id",
           "targets_of"]


def _workload_meta(wl: Workload, targets: list[str]) -> WorkloadMeta:
    metrics = [r.metric for r in wl.metrics]
    metrics += [wl.metric(n) for n in dict.fromkeys((*recorded_builtins(wl), wl.primary))]
    return WorkloadMeta(id=wl.id, primary=wl.primary, targets=tuple(targets),
                        metrics={m.name: m for m in metrics}, title=wl.title,
                        params=dict(wl.params), seeds=tuple(wl.seeds), path=str(wl.path),
                        validates=wl.validates, no_validation=wl.no_validation,
                        extra={"profile_sha256": sha256_regular(wl.path, MAX_PROFILE_BYTES)})


def measure_suite(req: Request, store: RunSink, cache_root: Path, progress: Progress,
                  on_sample: Callable[[Sample], None] | None = None,
                  resume: RunDoc | None = None) -> Result:
    """Probe, obtain and run every workload of the request; return how the run went.

    With `resume`, the request is that stored run's (run/resume.py) and only what it lacks is
    measured, into the same run.
    """
    # What a run killed by SIGKILL (or a crash, or a power cut) left behind goes first.
    clean_stale(cache_root)
    clean_stale_groups(tree_accounting())
    # A polite kill ends the run like Ctrl-C: the sample in flight is stopped, temporary
    # directories are removed and the run is marked interrupted.
    with signals_as_interrupt():
        return _measure(req, store, cache_root, progress, on_sample, resume)


def _measure(req: Request, store: RunSink, cache_root: Path, progress: Progress,
             on_sample: Callable[[Sample], None] | None, resume: RunDoc | None) -> Result:
    """The run's phases in order: what is checked and prepared before the run exists (so bad
    input leaves no empty run behind), the run opened, then every workload measured."""
    t0 = time.monotonic()
    probes = _preflight(req, cache_root)
    ctx, runtime_libc, noise = _host_context(req, probes, cache_root, progress)
    run_id = resume.run.id if resume is not None else new_run_id()
    metas = {wl.id: _workload_meta(wl, [t.label for t in targets_of(req, wl)])
             for wl in req.workloads}
    # Checked before the run exists, so a bad --cc leaves no empty run behind.
    ccs = {a.name: resolve_cc(req, probes[a.name]) for a in req.abis}
    prebuilt = {wl.id: {name: obtain_prebuilt(wl.id, get_abi(name), path)
                        for name, path in wl.binaries.items()}
                for wl in req.workloads if wl.binaries}
    launch = launcher(cache_root)
    _check_debian_sources(req)
    inputs_of = _prepare_inputs(req, metas, cache_root, progress)
    config = _config(req, metas)
    # Debian's binaries are resolved, downloaded and unpacked before the run, never beside
    # timed samples; a package that cannot be had refuses the run (exit 5) before it exists.
    debian_arts = obtain_debian(req, probes, cache_root, progress)
    _open_run(store, run_id, config, ctx, runtime_libc, resume)
    result = Result(run_id)
    runtimes = runtimes_of(req, probes, ccs, cache_root, progress)
    _runtime_problems(runtimes, store, run_id, result)
    rounds = _Rounds(req, store, run_id, launch, on_sample, inputs_of, noise, runtimes, resume,
                     Obtainer(req, probes, ccs, debian_arts, prebuilt, cache_root, progress),
                     result)
    rounds.run_all(t0)
    return result


def _preflight(req: Request, cache_root: Path) -> dict[str, AbiStatus]:
    """The commands, the ABIs asked for and the compiler checked; every ABI probed."""
    check_commands(req.workloads, req.provenance)
    probes = {s.abi: s for s in probe_all(req.abis, cache_root)}
    if req.explicit_abis:
        check_asked_abis(req.abis, probes, needs_build=req.provenance == "source" and any(
            w.source.artifacts and not w.binaries for w in req.workloads))
    if req.cc is not None and any(w.source.artifacts and not w.binaries for w in req.workloads):
        check_compiler(req.cc, [a for a in req.abis if probes[a.name].can_build], req.cflags)
    return probes


def _host_context(req: Request, probes: dict[str, AbiStatus], cache_root: Path,
                  progress: Progress) -> tuple[HostContext, dict[str, JSON], NoiseProfile | None]:
    """Where the run is measured: the host, each ABI's C library and emulator, the noise."""
    runtime_libc: dict[str, JSON] = {
        a.name: host.runtime_library(_loader(a, probes[a.name]), cache_root)
        for a in req.abis if probes[a.name].can_run}
    emulators: dict[str, JSON] = {n: p.emulator.version for n, p in probes.items()
                                  if p.emulator is not None}
    ctx = host.capture().with_extra(probe=[s.to_dict() for s in probes.values()],
                                    runtime_libc=runtime_libc,
                                    **({"emulators": emulators} if emulators else {}))
    if req.label:
        ctx = ctx.with_extra(label=req.label)
    noise = _noise(req, cache_root, progress)
    if noise is not None:
        ctx = ctx.with_extra(noise=noise.to_dict())
    if any(wl.memory == "tree" for wl in req.workloads):
        # How every tree_peak_rss of the run was measured, and why not in a better way.
        ctx = ctx.with_extra(tree_memory=dict(tree_accounting().to_dict()))
    return ctx, runtime_libc, noise


def _check_debian_sources(req: Request) -> None:
    if req.provenance == "source":
        # A Debian source version apt does not have is bad input: one error naming package and
        # version before the run exists (exit 2), not one failed target per ABI.
        for wl in req.workloads:
            for pkg, version in ([(wl.source.debian, wl.source.version)] if wl.source.debian
                                 else []) + [(p, v) for _, p, v in wl.source.extra]:
                debsource.pick_version(pkg, version)


def _prepare_inputs(req: Request, metas: dict[str, WorkloadMeta], cache_root: Path,
                    progress: Progress) -> dict[str, dict[str, Path]]:
    """Inputs are generated (or found in their cache) before the run exists, and what every
    workload reads is recorded in the run's config (`metas`): file, sha256, recipe."""
    inputs_of: dict[str, dict[str, Path]] = {}
    for wl in req.workloads:
        inputs_of[wl.id] = {}
        recorded: dict[str, JSON] = {}
        for name, spec in wl.inputs.items():
            progress(f"{wl.id}: preparing input {name} ({spec['kind']})")
            try:
                path = generate_input(name, spec, cache_root)
            except InputError as exc:  # e.g. a size out of range: name the profile
                raise InputError(f"{wl.path}: input '{name}': {exc}") from None
            inputs_of[wl.id][name] = path
            recorded[name] = {"path": str(path), **{
                k: v for k, v in describe_input(path).items()
                if k in ("kind", "sha256", "bytes", "files", "recipe")}}
        if recorded:  # what every workload read is saved with the run
            meta = metas[wl.id]
            metas[wl.id] = replace(meta, extra={**meta.extra, "inputs": recorded})
    return inputs_of


def _config(req: Request, metas: dict[str, WorkloadMeta]) -> RunConfig:
    return RunConfig(workloads=metas, abis=tuple(a.name for a in req.abis),
                     cflags=tuple(req.cflags), cc=req.cc, provenance=req.provenance,
                     plan=dict(asdict(req.plan)),
                     extra={"allow_version_skew": req.allow_version_skew,
                            "keep_going": req.keep_going,
                              # read by analyse/foreign.py: host libraries were intended
                              **({"allow_host_libs": True} if req.allow_host_libs else {}),
                            **({"fleet": req.fleet} if req.fleet else {})})


def _open_run(store: RunSink, run_id: str, config: RunConfig, ctx: HostContext,
              runtime_libc: dict[str, JSON], resume: RunDoc | None) -> None:
    """A new run created with its host's warnings, or a resumed one claimed."""
    if resume is None:
        store.create_run(Run(run_id, datetime.now(UTC).isoformat(timespec="seconds"), None,
                             "running", __version__, config), ctx)
        skew = host.library_skew({k: v if isinstance(v, str) else None
                                  for k, v in runtime_libc.items()})
        for w in [*host.context_warnings(ctx), *([skew] if skew else [])]:
            store.add_warning(run_id, RunWarning(w))
    else:
        store.claim_run(run_id)
        store.add_warning(run_id, RunWarning(f"resumed at {datetime.now(UTC):%Y-%m-%d %H:%M} "
                                             "UTC: warm-ups again, then the missing rounds"))


def _runtime_problems(runtimes: dict[str, AbiRuntime], store: RunSink, run_id: str,
                      result: Result) -> None:
    for abi_name, rt in runtimes.items():
        if rt.plugin_problem:
            # Measured anyway; the missing counts are said once and the run ends with exit 3.
            store.add_warning(run_id, RunWarning(
                f"{abi_name}: instruction counts skipped: {rt.plugin_problem}"))
            result.exit_code = max(result.exit_code, EXIT_HOST)
            result.failures.append(f"{abi_name}: instruction counts skipped: "
                                   f"{rt.plugin_problem}")


@dataclass
class _Rounds:
    """Every workload's rounds: one after the other, or under one --budget together."""

    req: Request
    store: RunSink
    run_id: str
    launch: Path
    on_sample: Callable[[Sample], None] | None
    inputs_of: dict[str, dict[str, Path]]
    noise: NoiseProfile | None
    runtimes: dict[str, AbiRuntime]
    resume: RunDoc | None
    obtainer: Obtainer
    result: Result
    opened: list[_Opened] = field(default_factory=list)
    # when the first workload began measuring: the budget counts from there
    budget_start: float = 0.0

    @property
    def budget(self) -> bool:
        return self.req.plan.budget_s is not None and self.req.plan.fixed_rounds is None

    def run_all(self, t0: float) -> None:
        """Every workload measured; the run finished in the store on every path."""
        result, failed = self.result, False
        try:
            with contextlib.ExitStack() as stack:
                for wl in self.req.workloads:
                    self.workload(wl, stack)
                if self.budget:
                    live = [o.session for o in self.opened if not o.recorded]
                    if live:
                        allocate(live, self.req.plan, self.budget_start, self.obtainer.progress)
                    for one in self.opened:
                        if not one.recorded:
                            _settle(one, self.store, self.run_id, result)
        except KeyboardInterrupt:
            result.interrupted = True
            result.exit_code = EXIT_INTERRUPTED
            _record_unsettled(self.opened, self.store, self.run_id, result, interrupted=True)
        except BaseException:
            # E.g. a StoreError while storing a sample: what was stored stays, the run says it
            # failed.
            failed = True
            _record_unsettled(self.opened, self.store, self.run_id, result, interrupted=False)
            raise
        finally:
            final = ("interrupted" if result.interrupted else
                     "failed" if failed or not result.measured else "complete")
            try:
                self.store.finish_run(self.run_id,
                                      datetime.now(UTC).isoformat(timespec="seconds"), final)
            except AbibenchError:
                # A store that cannot take even this must not hide the error that stopped the
                # run; the run reads as abandoned once this process has gone.
                if not failed:
                    raise
            result.elapsed_s = time.monotonic() - t0

    def workload(self, wl: Workload, stack: contextlib.ExitStack) -> None:
        """One workload: what a resume still needs, its programs, then its rounds."""
        req, store, run_id, result = self.req, self.store, self.run_id, self.result
        cont: Continuation | None = None
        if self.resume is not None:
            resumed = continuation(self.resume, wl.id, [t.label for t in targets_of(req, wl)])
            if resumed.continuation is None:
                result.measured += len(targets_of(req, wl))
                return
            cont = resumed.continuation
            if resumed.cut_short:
                store.discard_samples(run_id, wl.id, resumed.cut_short,
                                      "its round was cut short; measured again on resume")
        obtaining = time.monotonic()
        runnable = obtain_workload(wl, req, self.obtainer, store, run_id, result, self.resume)
        if self.budget_start:
            # The budget is for measuring: a build between two workloads' rounds (a
            # cold cache, a changed recipe) does not use it up.
            self.budget_start += time.monotonic() - obtaining
        if not runnable:
            return
        self.obtainer.progress(f"{wl.id}: running {', '.join(t.label for t, _ in runnable)}")
        session = Session(wl, runnable, req.plan, store, run_id, self.launch,
                          on_sample=self.on_sample, inputs=self.inputs_of[wl.id], resume=cont,
                          noise=self.noise, runtimes=self.runtimes)
        one = _Opened(session, runnable, stack.enter_context(contextlib.ExitStack()))
        self.opened.append(one)
        if self.budget:
            self.budget_start = self.budget_start or time.monotonic()
            session.open(one.stack)
            open_rounds(session)
        else:
            # Alone: its own stopping rule, then its places are closed before the next.
            with one.stack:
                session.open(one.stack)
                while not session.stopped:
                    session.run_round()
                    session.check_stop()
                _settle(one, store, run_id, result)


def _loader(abi: Abi, status: AbiStatus) -> str:
    """The loader an ABI's programs run with here: the cross C library's under an emulator."""
    if status.emulator is not None:
        return str(Path(status.emulator.libc_dir) / Path(abi.loader).name)
    return abi.loader


@dataclass
class _Opened:
    """A workload's session within the run, with what it holds open."""

    session: Session
    runnable: list[tuple[Target, Artifact]]
    stack: contextlib.ExitStack
    recorded: bool = False


def _settle(one: _Opened, store: RunSink, run_id: str, result: Result) -> None:
    """A workload's end: counters, last checks, and its outcome stored."""
    one.recorded = True
    outcome = one.session.finish()
    wl = one.session.wl
    result.outcomes.append(outcome)
    _record_outcome(store, run_id, wl, outcome, one.runnable)
    result.measured += sum(1 for t, _ in one.runnable if t.label not in outcome.failed)
    result.failures += [f"{wl.id} {t}: {why}" for t, why in outcome.failed.items()]
    if outcome.timed_out:
        result.exit_code = max(result.exit_code, EXIT_TIMEOUT)
    elif outcome.failed:
        result.exit_code = max(result.exit_code, EXIT_WORKLOAD)


def _record_unsettled(opened: list[_Opened], store: RunSink, run_id: str, result: Result,
                      interrupted: bool) -> None:
    """What is stored says each open workload was cut short, so a resume continues it."""
    for one in opened:
        if one.recorded:
            continue
        one.recorded = True
        outcome = one.session.outcome
        if interrupted:
            outcome.interrupted = True
            outcome.stop_reason = "interrupted"
        result.outcomes.append(outcome)
        # The error in flight is the one to report (a store that failed mid-sample most likely
        # fails here too).
        with contextlib.suppress(AbibenchError):
            _record_outcome(store, run_id, one.session.wl, outcome, one.runnable)


def _noise(req: Request, cache_root: Path, progress: Progress) -> NoiseProfile | None:
    """The machine's noise profile: measured briefly (or taken from the cache) when the run
    chooses its designs from it; only from the cache when the design or rounds are fixed."""
    if req.plan.fixed_rounds is None and req.plan.design == "auto":
        fresh = noise_probe.cached(cache_root)
        if fresh is None:
            progress(f"measuring this machine's noise ({noise_probe.BRIEF_S:g} s; "
                     "`abibench calibrate` measures it for longer, kept an hour)")
        return noise_probe.current(cache_root)
    return noise_probe.cached(cache_root)


def _record_outcome(store: RunSink, run_id: str, wl: Workload, outcome: ScheduleResult,
                    runnable: list[tuple[Target, Artifact]]) -> None:
    for target, _ in runnable:
        if target.label in outcome.failed:
            state = "timeout" if "timed out" in outcome.failed[target.label] else "failed"
            store.set_target_status(run_id, TargetStatus(wl.id, target.label, state,
                                                         outcome.failed[target.label]))
        elif outcome.interrupted:
            store.set_target_status(run_id, TargetStatus(wl.id, target.label, "interrupted",
                                                         "interrupted (Ctrl-C)"))
    for label, n in sorted(outcome.escaped.items()):
        store.add_warning(run_id, RunWarning(
            f"{label}: its samples left {n} {'process' if n == 1 else 'processes'} running "
            "when they ended (killed by the launcher)", workload=wl.id, target=label))
    for label, n in sorted(outcome.stopped.items()):
        store.add_warning(run_id, RunWarning(
            f"{label}: {n} {'sample was' if n == 1 else 'samples were'} stopped (SIGSTOP or "
            "SIGTSTP) while the program ran: stored, but not counted, as their times hold the "
            "time the program stood still", workload=wl.id, target=label))
    for label in sorted(outcome.uncaught):
        store.add_warning(run_id, RunWarning(
            f"{label}: processes that leave a sample's process group could not be caught here "
            "(the kernel or an emulator running abibench refused PR_SET_CHILD_SUBREAPER)",
            workload=wl.id, target=label))
    for label, reads in sorted(outcome.clock_bound.items()):
        store.add_warning(run_id, RunWarning(
            f"{label}: the counted run read the clock {reads:,} times in one process (one "
            "second of abibench's step clock is a million): a program that runs until some time "
            "has passed is counted by how long it ran, not by its work, so its instruction "
            "ratio is no comparison; give the profile a fixed-work [run] counters command "
            "(as openssl-speed and unzstd have)", workload=wl.id, target=label))
    how = f"sampled {outcome.design}" + (f", {outcome.repeat} runs a sample"
                                         if outcome.repeat > 1 else "")
    reason = outcome.stop_reason
    if outcome.design_reason and outcome.rounds:
        reason = f"{reason} [{how}: {outcome.design_reason}]"
    store.set_outcome(run_id, wl.id, Outcome(outcome.rounds, reason))
