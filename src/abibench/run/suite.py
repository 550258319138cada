"""A whole measuring run: probe the host, obtain every workload per ABI, run interleaved rounds.

Everything measured goes to a sink (the store) the moment it exists. Nothing here prints;
progress goes to a callback so the CLI decides how to show it.
"""

from __future__ import annotations

import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from .. import __version__
from ..abi import Abi
from ..errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_WORKLOAD,
    AbibenchError,
    HostError,
)
from ..obtain import debsource
from ..obtain.build import DEFAULT_CFLAGS, build
from ..obtain.inputs import describe_input, generate_input
from ..probe import host
from ..probe.abis import AbiStatus, probe_all
from ..records import (
    JSON,
    Artifact,
    HostContext,
    Outcome,
    Run,
    RunConfig,
    RunWarning,
    Sample,
    Target,
    TargetStatus,
    WorkloadMeta,
)
from ..workloads.profile import Workload
from ..workspace import clean_stale
from .launcher import launcher
from .schedule import Plan, ScheduleResult, run_workload
from .servers import sigterm_as_interrupt


class RunSink(Protocol):
    """Where a run's records go as they come into being: the store."""

    def create_run(self, run: Run, host: HostContext) -> None: ...

    def finish_run(self, run_id: str, finished: str, status: str) -> None: ...

    def add_artifact(self, run_id: str, artifact: Artifact) -> None: ...

    def set_target_status(self, run_id: str, status: TargetStatus) -> None: ...

    def add_warning(self, run_id: str, warning: RunWarning) -> None: ...

    def set_outcome(self, run_id: str, workload: str, outcome: Outcome) -> None: ...

    def add_sample(self, s: Sample) -> None: ...

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


@dataclass
class Result:
    run_id: str
    exit_code: int = EXIT_OK
    outcomes: list[ScheduleResult] = field(default_factory=list)
    elapsed_s: float = 0.0
    built: int = 0
    reused: int = 0
    interrupted: bool = False


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def _workload_meta(wl: Workload, targets: list[str]) -> WorkloadMeta:
    metrics = [r.metric for r in wl.metrics]
    metrics += [wl.metric(n) for n in dict.fromkeys(("wall", "max_rss", wl.primary))]
    return WorkloadMeta(id=wl.id, primary=wl.primary, targets=tuple(targets),
                        metrics={m.name: m for m in metrics}, title=wl.title,
                        params=dict(wl.params), seeds=tuple(wl.seeds), path=str(wl.path))


def _resolve_cc(req: Request, status: AbiStatus) -> str | None:
    if req.cc is None:
        return status.compiler
    found = shutil.which(req.cc)
    if found is None:
        raise HostError(f"compiler '{req.cc}' not found: install it (apt-get install "
                        "build-essential) or choose another with --cc")
    return found


def measure_suite(req: Request, store: RunSink, cache_root: Path, progress: Progress,
                  on_sample: Callable[[Sample], None] | None = None) -> Result:
    """Probe, obtain and run every workload of the request; return how the run went."""
    # What a run killed by SIGKILL (or a crash, or a power cut) left behind goes first.
    clean_stale(cache_root)
    # A polite kill ends the run like Ctrl-C: the sample in flight is stopped, temporary
    # directories are removed and the run is marked interrupted.
    with sigterm_as_interrupt():
        return _measure(req, store, cache_root, progress, on_sample)


def _measure(req: Request, store: RunSink, cache_root: Path, progress: Progress,
             on_sample: Callable[[Sample], None] | None) -> Result:
    t0 = time.monotonic()
    probes = {s.abi: s for s in probe_all(req.abis)}
    runtime_libc: dict[str, JSON] = {a.name: host.runtime_library(a.loader) for a in req.abis
                                     if probes[a.name].can_run}
    ctx = host.capture().with_extra(probe=[s.to_dict() for s in probes.values()],
                                    runtime_libc=runtime_libc)
    run_id = new_run_id()
    labels = [Target(a, req.provenance).label for a in req.abis]
    metas = {wl.id: _workload_meta(wl, labels) for wl in req.workloads}
    # Checked before the run exists, so a bad --cc leaves no empty run behind.
    ccs = {a.name: _resolve_cc(req, probes[a.name]) for a in req.abis}
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
            path = generate_input(name, spec, cache_root)
            inputs_of[wl.id][name] = path
            recorded[name] = {"path": str(path), **{
                k: v for k, v in describe_input(path).items()
                if k in ("kind", "sha256", "bytes", "files", "recipe")}}
        if recorded:  # what every workload read is saved with the run
            meta = metas[wl.id]
            metas[wl.id] = replace(meta, extra={**meta.extra, "inputs": recorded})
    config = RunConfig(workloads=metas, abis=tuple(a.name for a in req.abis),
                       cflags=tuple(req.cflags), cc=req.cc, provenance=req.provenance,
                       plan=dict(asdict(req.plan)))
    # Debian's binaries are resolved, downloaded and unpacked before the run, never beside
    # timed samples; a package that cannot be had refuses the run (exit 5) before it exists.
    debian_arts = _obtain_debian(req, probes, cache_root, progress)
    store.create_run(Run(run_id, datetime.now(UTC).isoformat(timespec="seconds"), None,
                         "running", __version__, config), ctx)
    skew = host.library_skew({k: v if isinstance(v, str) else None
                              for k, v in runtime_libc.items()})
    for w in [*host.context_warnings(ctx), *([skew] if skew else [])]:
        store.add_warning(run_id, RunWarning(w))
    result = Result(run_id)

    def status(wid: str, label: str, state: str, reason: str | None) -> None:
        store.set_target_status(run_id, TargetStatus(wid, label, state, reason))

    try:
        for wl in req.workloads:
            runnable: list[tuple[Target, Artifact]] = []
            for skewed in sorted({s for a in debian_arts.get(wl.id, {}).values()
                                  for s in a.version_skew}):
                store.add_warning(run_id, RunWarning(
                    f"version skew allowed (--allow-version-skew): {skewed}", workload=wl.id))
            for abi in req.abis:
                target = Target(abi, req.provenance)
                st = probes[abi.name]
                cc = ccs[abi.name]
                if req.provenance == "debian":
                    if abi.name not in debian_arts.get(wl.id, {}):
                        why = (f"cannot run here: {st.reason}" if not st.can_run else
                               f"Debian has no {abi.debian_arch} binary packages")
                        status(wl.id, target.label, "not run", why)
                        continue
                    art = debian_arts[wl.id][abi.name]
                elif not wl.source.artifacts:
                    status(wl.id, target.label, "not built",
                           "this workload has no [source]: run it with --provenance debian")
                    continue
                elif not st.can_build or cc is None:
                    status(wl.id, target.label, "not built", f"{st.reason}; fix: {st.fix}")
                    continue
                else:
                    progress(f"{wl.id}: building for {abi.name}")
                    try:
                        art = build(wl, abi, cc, req.cflags, cache_root)
                    except AbibenchError as exc:
                        status(wl.id, target.label, "failed", str(exc))
                        result.exit_code = max(result.exit_code, EXIT_WORKLOAD)
                        progress(f"{wl.id}: {exc}")
                        continue
                store.add_artifact(run_id, replace(art, target=target.label))
                if art.cached:
                    result.reused += 1
                else:
                    result.built += 1
                if not st.can_run:
                    status(wl.id, target.label, "not run", f"cannot run here: {st.reason}")
                    continue
                runnable.append((target, art))
            if not runnable:
                continue
            inputs = inputs_of[wl.id]
            progress(f"{wl.id}: running {', '.join(t.label for t, _ in runnable)}")
            outcome = ScheduleResult(wl.id)
            try:
                outcome = run_workload(wl, runnable, req.plan, store, run_id, launch, on_sample,
                                       inputs)
            finally:
                result.outcomes.append(outcome)
                _record_outcome(store, run_id, wl, outcome, runnable)
            if outcome.timed_out:
                result.exit_code = max(result.exit_code, EXIT_TIMEOUT)
            elif outcome.failed:
                result.exit_code = max(result.exit_code, EXIT_WORKLOAD)
    except KeyboardInterrupt:
        result.interrupted = True
        result.exit_code = EXIT_INTERRUPTED
    finally:
        final = "interrupted" if result.interrupted else "complete"
        store.finish_run(run_id, datetime.now(UTC).isoformat(timespec="seconds"), final)
        result.elapsed_s = time.monotonic() - t0
    return result


def _obtain_debian(req: Request, probes: dict[str, AbiStatus], cache_root: Path,
                   progress: Progress) -> dict[str, dict[str, Artifact]]:
    """{workload: {ABI: Artifact}} of Debian's own builds, for the ABIs Debian has and can run."""
    if req.provenance != "debian":
        return {}
    from ..obtain import debian
    from ..obtain.apt import SUPPORTED_ARCHES

    abis = [a for a in req.abis
            if a.debian_arch in SUPPORTED_ARCHES and probes[a.name].can_run]
    if not abis:
        raise HostError("--provenance debian: none of the ABIs asked for has Debian binary "
                        "packages that run here: use --abi i386,x86_64")
    out: dict[str, dict[str, Artifact]] = {}
    for wl in req.workloads:
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
    store.set_outcome(run_id, wl.id, Outcome(outcome.rounds, outcome.stop_reason))
