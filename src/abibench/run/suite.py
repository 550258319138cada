"""A whole measuring run: probe the host, obtain every workload per ABI, run interleaved rounds.

Everything measured goes to a sink (the store) the moment it exists. Nothing here prints;
progress goes to a callback so the CLI decides how to show it.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from .. import __version__
from ..abi import Abi, get_abi
from ..errors import (
    EXIT_HOST,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_WORKLOAD,
    AbibenchError,
    HostError,
    UsageError,
)
from ..hashing import sha256_regular
from ..obtain import debsource, hostlibs, qemuplugin
from ..obtain.build import DEFAULT_CFLAGS, build
from ..obtain.helpers import helpers_for
from ..obtain.inputs import InputError, describe_input, generate_input
from ..obtain.prebuilt import obtain as obtain_prebuilt
from ..probe import host
from ..probe import noise as noise_probe
from ..probe.abis import AbiStatus, probe_all, program_cannot_run
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
from .preflight import check_asked_abis, check_commands, check_compiler
from .runtime import AbiRuntime
from .schedule import Continuation, Plan, ScheduleResult, Session
from .signals import signals_as_interrupt
from .treemem import clean_stale_groups


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


def _workload_meta(wl: Workload, targets: list[str]) -> WorkloadMeta:
    metrics = [r.metric for r in wl.metrics]
    metrics += [wl.metric(n) for n in dict.fromkeys((*recorded_builtins(wl), wl.primary))]
    return WorkloadMeta(id=wl.id, primary=wl.primary, targets=tuple(targets),
                        metrics={m.name: m for m in metrics}, title=wl.title,
                        params=dict(wl.params), seeds=tuple(wl.seeds), path=str(wl.path),
                        validates=wl.validates, no_validation=wl.no_validation,
                        extra={"profile_sha256": sha256_regular(wl.path, MAX_PROFILE_BYTES)})


def _resolve_cc(req: Request, status: AbiStatus) -> str | None:
    if req.cc is None:
        return status.compiler
    found = shutil.which(req.cc)
    if found is None:
        raise HostError(f"compiler '{req.cc}' not found: install it (apt-get install "
                        "build-essential) or choose another with --cc")
    return found


def targets_of(req: Request, wl: Workload) -> list[Target]:
    """The targets a workload is measured on: its prebuilt programs' ABIs, or every ABI asked."""
    if wl.binaries:
        return [Target(get_abi(name), "prebuilt") for name in wl.binaries]
    return [Target(a, req.provenance) for a in req.abis]


@dataclass
class _Obtainer:
    """Each workload's program per target, before its rounds: built, unpacked or prebuilt."""

    req: Request
    probes: dict[str, AbiStatus]
    ccs: dict[str, str | None]
    debian_arts: dict[str, dict[str, Artifact]]
    prebuilt: dict[str, dict[str, Artifact]]
    cache_root: Path
    progress: Progress
    # Builds that failed in this run, by what they build: a sweep's next instance, or the
    # other workloads of one Debian source package, do not try the same build again.
    # Each maps to (why, the workload id whose build said so first).
    failed_builds: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    def build_key(self, wl: Workload, abi: Abi) -> tuple[str, str]:
        return (wl.source.debian or wl.base_id or wl.id, abi.name)

    def repeated_failure(self, wl: Workload, abi: Abi) -> bool:
        """Whether this target's failed build was already reported for another workload."""
        first = self.failed_builds.get(self.build_key(wl, abi))
        return first is not None and first[1] != wl.id

    def artifact(self, wl: Workload, target: Target) -> Artifact | tuple[str, str]:
        """The artifact, or (state, reason) of a target that has none."""
        abi, st = target.abi, self.probes.get(target.abi.name)
        if target.provenance == "prebuilt":
            return self.prebuilt[wl.id][abi.name]
        if self.req.provenance == "debian":
            if not wl.debian_packages:
                return "not built", ("this workload has no [debian]: run it without "
                                     "--provenance debian")
            if abi.name not in self.debian_arts.get(wl.id, {}):
                return "not run", _no_debian_reason(abi, st)
            return self.debian_arts[wl.id][abi.name]
        cc = self.ccs.get(abi.name)
        if not wl.source.artifacts:
            return "not built", "this workload has no [source]: run it with --provenance debian"
        if st is None or not st.can_build or cc is None:
            return "not built", f"{st.reason if st else 'not probed'}; fix: {st.fix if st else ''}"
        key = self.build_key(wl, abi)
        if key in self.failed_builds:
            why, first = self.failed_builds[key]
            return "failed", why if first == wl.id else (
                f"not built: the same {abi.name} build failed for {first} (its reason is there)")
        self.progress(f"{wl.id}: building for {abi.name}")
        try:
            return build(wl, abi, cc, self.req.cflags, self.cache_root)
        except AbibenchError as exc:
            self.failed_builds[key] = (str(exc), wl.id)
            self.progress(f"{wl.id}: {exc}")
            return "failed", str(exc)


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
    t0 = time.monotonic()
    check_commands(req.workloads, req.provenance)
    probes = {s.abi: s for s in probe_all(req.abis, cache_root)}
    if req.explicit_abis:
        check_asked_abis(req.abis, probes, needs_build=req.provenance == "source" and any(
            w.source.artifacts and not w.binaries for w in req.workloads))
    if req.cc is not None and any(w.source.artifacts and not w.binaries for w in req.workloads):
        check_compiler(req.cc, [a for a in req.abis if probes[a.name].can_build], req.cflags)
    runtime_libc: dict[str, JSON] = {a.name: host.runtime_library(_loader(a, probes[a.name]))
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
    run_id = resume.run.id if resume is not None else new_run_id()
    metas = {wl.id: _workload_meta(wl, [t.label for t in targets_of(req, wl)])
             for wl in req.workloads}
    # Checked before the run exists, so a bad --cc leaves no empty run behind.
    ccs = {a.name: _resolve_cc(req, probes[a.name]) for a in req.abis}
    prebuilt = {wl.id: {name: obtain_prebuilt(wl.id, get_abi(name), path)
                        for name, path in wl.binaries.items()}
                for wl in req.workloads if wl.binaries}
    launch = launcher(cache_root)
    if req.provenance == "source":
        # A Debian source version apt does not have is bad input: one error naming package and
        # version before the run exists (exit 2), not one failed target per ABI.
        for wl in req.workloads:
            for pkg, version in ([(wl.source.debian, wl.source.version)] if wl.source.debian
                                 else []) + [(p, v) for _, p, v in wl.source.extra]:
                debsource.pick_version(pkg, version)
    # Inputs are generated (or found in their cache) before the run exists, and what every
    # workload reads is recorded in the run's config: file, sha256, recipe.
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
    config = RunConfig(workloads=metas, abis=tuple(a.name for a in req.abis),
                       cflags=tuple(req.cflags), cc=req.cc, provenance=req.provenance,
                       plan=dict(asdict(req.plan)),
                       extra={"allow_version_skew": req.allow_version_skew,
                              "keep_going": req.keep_going,
                              # read by analyse/foreign.py: host libraries were intended
                              **({"allow_host_libs": True} if req.allow_host_libs else {}),
                              **({"fleet": req.fleet} if req.fleet else {})})
    # Debian's binaries are resolved, downloaded and unpacked before the run, never beside
    # timed samples; a package that cannot be had refuses the run (exit 5) before it exists.
    debian_arts = _obtain_debian(req, probes, cache_root, progress)
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
    result = Result(run_id)
    runtimes = _runtimes(req, probes, ccs, cache_root, progress)
    for abi_name, rt in runtimes.items():
        if rt.plugin_problem:
            # Measured anyway; the missing counts are said once and the run ends with exit 3.
            store.add_warning(run_id, RunWarning(
                f"{abi_name}: instruction counts skipped: {rt.plugin_problem}"))
            result.exit_code = max(result.exit_code, EXIT_HOST)
            result.failures.append(f"{abi_name}: instruction counts skipped: "
                                   f"{rt.plugin_problem}")
    obtainer = _Obtainer(req, probes, ccs, debian_arts, prebuilt, cache_root, progress)
    failed = False
    budget = req.plan.budget_s is not None and req.plan.fixed_rounds is None
    opened: list[_Opened] = []
    budget_start = 0.0  # when the first workload began measuring: the budget counts from there
    try:
        with contextlib.ExitStack() as stack:
            for wl in req.workloads:
                cont: Continuation | None = None
                if resume is not None:
                    resumed = continuation(resume, wl.id, [t.label for t in targets_of(req, wl)])
                    if resumed.continuation is None:
                        result.measured += len(targets_of(req, wl))
                        continue
                    cont = resumed.continuation
                    if resumed.cut_short:
                        store.discard_samples(run_id, wl.id, resumed.cut_short,
                                              "its round was cut short; measured again on resume")
                obtaining = time.monotonic()
                runnable = _obtain_workload(wl, req, obtainer, store, run_id, result, resume)
                if budget_start:
                    # The budget is for measuring: a build between two workloads' rounds (a
                    # cold cache, a changed recipe) does not use it up.
                    budget_start += time.monotonic() - obtaining
                if not runnable:
                    continue
                progress(f"{wl.id}: running {', '.join(t.label for t, _ in runnable)}")
                session = Session(wl, runnable, req.plan, store, run_id, launch,
                                  on_sample=on_sample, inputs=inputs_of[wl.id], resume=cont,
                                  noise=noise, runtimes=runtimes)
                one = _Opened(session, runnable, stack.enter_context(contextlib.ExitStack()))
                opened.append(one)
                if budget:
                    budget_start = budget_start or time.monotonic()
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
            if budget:
                live = [o.session for o in opened if not o.recorded]
                if live:
                    allocate(live, req.plan, budget_start, progress)
                for one in opened:
                    if not one.recorded:
                        _settle(one, store, run_id, result)
    except KeyboardInterrupt:
        result.interrupted = True
        result.exit_code = EXIT_INTERRUPTED
        _record_unsettled(opened, store, run_id, result, interrupted=True)
    except BaseException:
        # E.g. a StoreError while storing a sample: what was stored stays, the run says it failed.
        failed = True
        _record_unsettled(opened, store, run_id, result, interrupted=False)
        raise
    finally:
        final = ("interrupted" if result.interrupted else
                 "failed" if failed or not result.measured else "complete")
        try:
            store.finish_run(run_id, datetime.now(UTC).isoformat(timespec="seconds"), final)
        except AbibenchError:
            # A store that cannot take even this must not hide the error that stopped the run;
            # the run reads as abandoned once this process has gone.
            if not failed:
                raise
        result.elapsed_s = time.monotonic() - t0
    return result


def _loader(abi: Abi, status: AbiStatus) -> str:
    """The loader an ABI's programs run with here: the cross C library's under an emulator."""
    if status.emulator is not None:
        return str(Path(status.emulator.libc_dir) / Path(abi.loader).name)
    return abi.loader


def _runtimes(req: Request, probes: dict[str, AbiStatus], ccs: dict[str, str | None],
              cache_root: Path, progress: Progress) -> dict[str, AbiRuntime]:
    """Per ABI: its emulator, the counting plugin (once for all), and abibench's helpers."""
    out: dict[str, AbiRuntime] = {}
    plugin: qemuplugin.Plugin | str | None = None
    for abi in req.abis:
        st = probes[abi.name]
        if not st.can_run:
            continue
        emu = st.emulator
        counting = req.plan.counters
        if emu is not None and counting and plugin is None:
            progress("preparing the QEMU plugin that counts guest instructions")
            try:
                plugin = qemuplugin.build(cache_root) if emu.plugins else (
                    f"{emu.command} has no plugin support (qemu-user-static?): apt-get "
                    "install qemu-user")
            except AbibenchError as exc:
                plugin = str(exc)
        helpers = helpers_for(abi, ccs.get(abi.name), tuple(req.cflags), cache_root,
                              empty=emu is not None, stepclock=counting)
        for problem in helpers.problems:
            progress(problem)
        out[abi.name] = AbiRuntime(
            emulator=emu,
            plugin=plugin if emu is not None and isinstance(plugin, qemuplugin.Plugin) else None,
            plugin_problem=plugin if emu is not None and counting and isinstance(plugin, str)
            else None,
            empty=helpers.empty, stepclock=helpers.stepclock)
    return out


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


def _obtain_workload(wl: Workload, req: Request, obtainer: _Obtainer, store: RunSink,
                     run_id: str, result: Result, resume: RunDoc | None = None,
                     ) -> list[tuple[Target, Artifact]]:
    """Every target's artifact stored, statuses for those without one; the runnable targets.

    When one ABI's build fails, nothing of the workload is measured unless --keep-going: a
    comparison that lacks one side is not the one asked for.
    """
    def status(label: str, state: str, reason: str | None) -> None:
        store.set_target_status(run_id, TargetStatus(wl.id, label, state, reason))

    for skewed in sorted({s for a in obtainer.debian_arts.get(wl.id, {}).values()
                          for s in a.version_skew}):
        store.add_warning(run_id, RunWarning(
            f"version skew allowed (--allow-version-skew): {skewed}", workload=wl.id))
    runnable: list[tuple[Target, Artifact]] = []
    failed: list[str] = []
    for target in targets_of(req, wl):
        got = obtainer.artifact(wl, target)
        if isinstance(got, Artifact):
            got = hostlibs.with_host_library_sizes(got)  # its size counts what it loads
        if not isinstance(got, Artifact):
            status(target.label, *got)
            if got[0] == "failed":
                failed.append(target.label)
                # A build shared by a sweep's instances failed once: said once, for the first.
                if not obtainer.repeated_failure(wl, target.abi):
                    result.failures.append(got[1] if got[1].startswith(wl.base_id or wl.id)
                                           else f"{wl.id} {target.label}: {got[1]}")
                result.exit_code = max(result.exit_code, EXIT_WORKLOAD)
            continue
        before = resume.artifact_of(wl.id, target.label) if resume is not None else None
        if before is None:
            store.add_artifact(run_id, replace(got, target=target.label))
        elif before.digests != got.digests:
            raise UsageError(f"run {run_id}: the {target.label} program of {wl.id} is not the "
                             "one the run measured (its build changed or was rebuilt "
                             "differently): start a new run")
        for w in hostlibs.warnings(got, target.label, req.allow_host_libs):
            store.add_warning(run_id, RunWarning(w, workload=wl.id, target=target.label))
        if got.provenance == "prebuilt":
            pass  # nothing was built
        elif got.cached:
            result.reused += 1
        else:
            result.built += 1
        st = obtainer.probes.get(target.abi.name)
        why = None if st is None else st.reason if not st.can_run else None
        if st is not None and got.provenance == "prebuilt":
            # A given program is judged by itself (static or not), not by what this host
            # could build for its ABI.
            why = program_cannot_run(target.abi, _interpreter(got), st)
        if why is not None:
            status(target.label, "not run", f"cannot run here: {why}")
            continue
        runnable.append((target, got))
    if failed and not req.keep_going:
        for target, _ in runnable:
            status(target.label, "not run", f"not measured: the {', '.join(failed)} build "
                   "failed, and a comparison without it is not the one asked for "
                   "(--keep-going measures the others)")
        return []
    return runnable


def _interpreter(art: Artifact) -> str | None:
    """The PT_INTERP of an artifact's program; None for a static one."""
    info = art.elf.get(art.files[0], {}) if art.files else {}
    interp = info.get("interpreter")
    return interp if isinstance(interp, str) else None


def _no_debian_reason(abi: Abi, st: AbiStatus | None) -> str:
    """Why a target has no Debian-provenance artifact (only ABIs _obtain_debian took have)."""
    from ..obtain.apt import SUPPORTED_ARCHES

    if st is not None and not st.can_run:
        return f"cannot run here: {st.reason}"
    if abi.debian_arch not in SUPPORTED_ARCHES:
        return (f"Debian's main archive has no {abi.debian_arch} binary packages: build it from "
                "source (without --provenance debian)")
    # Debian's armhf/arm64 packages exist, but a sysroot is never run under an emulator.
    return (f"Debian's {abi.debian_arch} packages run only where the kernel runs {abi.name} "
            "itself (an ARM host), not under an emulator: build it from source (without "
            "--provenance debian) to count its instructions here")


def _obtain_debian(req: Request, probes: dict[str, AbiStatus], cache_root: Path,
                   progress: Progress) -> dict[str, dict[str, Artifact]]:
    """{workload: {ABI: Artifact}} of Debian's own builds, for the ABIs Debian has and can run."""
    if req.provenance != "debian":
        return {}
    from ..obtain import debian
    from ..obtain.apt import SUPPORTED_ARCHES

    abis = [a for a in req.abis if a.debian_arch in SUPPORTED_ARCHES
            and probes[a.name].can_run and not probes[a.name].emulated]
    if not abis:
        raise HostError("--provenance debian: none of the ABIs asked for has Debian binary "
                        "packages that run here: use --abi i386,x86_64")
    out: dict[str, dict[str, Artifact]] = {}
    # A selection that mixes both kinds (a suite: games-media has source builds and Debian's
    # packages) measures what has a [debian] table; the others are "not built", as a
    # [debian]-only workload is without --provenance debian. Alone, one is an error (exit 5).
    mixed = any(wl.debian_packages for wl in req.workloads)
    for wl in req.workloads:
        if mixed and not wl.debian_packages:
            continue
        progress(f"{wl.id}: Debian packages {' '.join(wl.debian_packages)} for "
                 f"{', '.join(a.debian_arch for a in abis)}")
        out[wl.id] = debian.obtain(wl, abis, cache_root, allow_skew=req.allow_version_skew)
    return out


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
