"""Each workload's program per target, before its rounds: built, unpacked from Debian's
packages, or prebuilt; what each ABI runs with (emulator, counting plugin, helpers).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..abi import Abi
from ..errors import (
    EXIT_WORKLOAD,
    AbibenchError,
    HostError,
    UsageError,
)
from ..obtain import hostlibs, qemuplugin
from ..obtain.build import build
from ..obtain.helpers import helpers_for
from ..probe.abis import AbiStatus, program_cannot_run
from ..records import (
    Artifact,
    RunDoc,
    RunWarning,
    Target,
    TargetStatus,
)
from ..workloads.profile import Workload
from .request import Progress, Request, Result, RunSink, targets_of
from .runtime import AbiRuntime


def resolve_cc(req: Request, status: AbiStatus) -> str | None:
    if req.cc is None:
        return status.compiler
    found = shutil.which(req.cc)
    if found is None:
        raise HostError(f"compiler '{req.cc}' not found: install it (apt-get install "
                        "build-essential) or choose another with --cc")
    return found


@dataclass
class Obtainer:
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


def runtimes_of(req: Request, probes: dict[str, AbiStatus], ccs: dict[str, str | None],
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


def obtain_workload(wl: Workload, req: Request, obtainer: Obtainer, store: RunSink,
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


def obtain_debian(req: Request, probes: dict[str, AbiStatus], cache_root: Path,
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
