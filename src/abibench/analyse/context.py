"""Where a result came from, in words: the host context and each artifact's provenance.

Rows of (label, text), computed once for every renderer. Values come from result sets that may
be imported from other machines, so everything is turned into text here and never interpreted.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..probe.noise import NoiseProfile
from ..records import JSON, Artifact, HostContext, Outcome, Run
from ..stats import short


@dataclass(frozen=True)
class ContextRow:
    label: str
    values: tuple[str, ...]  # one per result set


class SetLike(Protocol):
    @property
    def run(self) -> Run: ...

    @property
    def host(self) -> HostContext: ...

    @property
    def artifacts(self) -> tuple[Artifact, ...]: ...


def _kv(value: object) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _kib(value: float) -> str:
    if value >= 1024 * 1024:
        return f"{short(value / 1024 / 1024, '.2f')} GiB"
    if value >= 1024:
        return f"{value / 1024:.1f} MiB"
    return f"{value:.0f} KiB"


KNOWN_HOST = ("hostname", "cpu_model", "cpus_online", "mem_total_kb", "machine",
              "kernel_release", "kernel_version", "kernel_bits", "kernel_x32", "governor", "turbo",
              "virtualization", "load_average", "os_release", "libc", "compilers", "python",
              "probe", "noise")  # noise: its own table, calibration_rows


def _abi_flags(artifacts: Sequence[Artifact]) -> str:
    seen: dict[str, str] = {}
    for a in artifacts:
        t = a.target
        if t not in seen:
            picked = [f"{k}={v}" if v not in ("enabled", "disabled") else
                      (k if v == "enabled" else "")
                      for k, v in sorted(a.effective.items())
                      if k in ("-march", "-mfpmath", "-msse2")]
            # none: the recipe passed no {cflags} to a compiler (a Go or Rust build)
            flags = " ".join(a.abi_flags) or "none"
            extra = " ".join(p for p in picked if p)
            seen[t] = f"{t}: {flags}" + (f" (effective {extra})" if extra else "")
    return "; ".join(seen.values()) or "-"


def _probe(probe: JSON) -> str:
    parts = []
    for p in probe if isinstance(probe, list) else []:
        if not isinstance(p, dict):
            continue
        can = "build and run" if p.get("can_run") else (
            "build only" if p.get("can_build") else "neither build nor run")
        why = f" ({p['reason']})" if p.get("reason") else ""
        parts.append(f"{p.get('abi')}: {can}{why}")
    return "; ".join(parts) or "-"


def context_rows(sets: Sequence[SetLike]) -> list[ContextRow]:
    """The host context as rows with one value per result set."""
    rows: list[ContextRow] = []

    def add(label: str, values: list[str]) -> None:
        if any(v not in ("", "-") for v in values):
            rows.append(ContextRow(label, tuple(values)))

    hosts = [s.host for s in sets]
    add("host", [_kv(h.hostname) for h in hosts])
    add("CPU", [f"{_kv(h.cpu_model)}, {_kv(h.cpus_online)} CPUs online" for h in hosts])
    add("memory", [_kib(h.mem_total_kb) if isinstance(h.mem_total_kb, int) else "-"
                   for h in hosts])
    add("kernel", [f"{_kv(h.kernel_release)} ({_kv(h.kernel_bits)}-bit "
                   f"{_kv(h.machine)}) {_kv(h.kernel_version)}" for h in hosts])
    add("x32 system calls", [{"y": "enabled", "n": "not enabled"}.get(str(h.kernel_x32),
                                                                     _kv(h.kernel_x32))
                             for h in hosts])
    add("CPU governor", [_kv(h.governor) if h.governor else "not exposed" for h in hosts])
    add("turbo / boost", [_kv(h.turbo) if h.turbo is not None else "not exposed"
                          for h in hosts])
    add("virtualization", [_kv(h.virtualization) if h.virtualization else "none detected"
                           for h in hosts])
    add("load at start", [" ".join(short(x, ".2f") for x in h.load_average) for h in hosts])
    add("OS", [_kv(h.os_release) for h in hosts])
    add("C library", [_kv(h.libc) for h in hosts])
    add("compilers", ["; ".join(f"{k}: {v}" for k, v in h.compilers.items()) for h in hosts])
    add("Python", [_kv(h.python) for h in hosts])
    add("ABIs on this host", [_probe(h.get("probe")) for h in hosts])
    add("abibench", [_kv(s.run.tool_version) for s in sets])
    add("flags (every ABI)", [" ".join(s.run.config.cflags) or "-" for s in sets])
    add("flags per ABI", [_abi_flags(s.artifacts) for s in sets])
    add("compiler used", ["; ".join(sorted({a.compiler_version for a in s.artifacts
                                            if a.compiler_version})) for s in sets])
    add("workload sources", ["; ".join(sorted({
        f"{a.workload}: {a.source_package} {a.source_version or ''}".strip()
        for a in s.artifacts if a.source_package})) for s in sets])
    # A program's own account of how it was built, e.g. OpenSSL's "options:" line of
    # `openssl version -a`, recorded by its profile as the artifact's build_options.
    add("build options", ["; ".join(sorted({
        f"{a.workload} ({a.target}): {_kv(a.build_options)}"
        for a in s.artifacts if a.build_options})) or "-" for s in sets])
    add("run", [f"{s.run.started} → {_kv(s.run.finished)}, {_kv(s.run.status)}" for s in sets])
    add("plan", [", ".join(f"{k}={v}" for k, v in (s.run.config.plan or {}).items())
                 for s in sets])
    extra = sorted({k for h in hosts for k in h.to_dict() if k not in KNOWN_HOST})
    for key in extra:
        add(key, [_kv(h.get(key)) for h in hosts])
    return rows


KNOWN_ARTIFACT = ("workload", "target", "cached", "abi", "provenance", "bin_dir", "files",
                  "cache_key", "compiler", "compiler_version", "cflags", "abi_flags", "commands",
                  "effective", "build_seconds", "sizes", "elf", "log", "source_package",
                  "source_version", "data", "debian_packages", "debian_closure", "version_skew",
                  "toolchain", "isolation")


def provenance_rows(artifact: Artifact) -> list[tuple[str, str]]:
    """What one artifact is and how it was made, as (label, text) rows."""
    a = artifact
    d = a.to_dict()
    rows: list[tuple[str, str]] = [("provenance", _kv(a.provenance))]
    if a.source_package:
        rows.append(("source", f"{a.source_package} {a.source_version or ''}".strip()))
    # compiler: the version line of every toolchain the build's commands named (a Go or Rust
    # build is not described as gcc's); build inputs: what the build could read.
    for key, label in (("compiler_version", "compiler"), ("build_seconds", "build seconds"),
                       ("cached", "reused from cache"), ("cache_key", "cache key"),
                       ("isolation", "build inputs")):
        if d.get(key) is not None:
            rows.append((label, _kv(d[key])))
    rows.append(("flags", " ".join([*a.abi_flags, *a.cflags]) or "-"))
    if a.effective:
        rows.append(("effective target options", " ".join(
            f"{k}={v}" for k, v in sorted(a.effective.items()))))
    for cmd in a.commands:
        rows.append(("command", _kv(cmd)))
    for pkgs, label in ((a.debian_packages, "Debian packages"),
                        (a.debian_closure, "sysroot packages")):
        if pkgs:
            rows.append((f"{label} ({len(pkgs)})",
                         ", ".join(f"{k} {v}" for k, v in sorted(pkgs.items()))))
    if a.version_skew:
        rows.append(("version skew allowed", "; ".join(map(str, a.version_skew))))
    for name, elf in a.elf.items():
        if isinstance(elf, dict):
            needed = elf.get("needed")
            libs = ", ".join(map(str, needed if isinstance(needed, list) else [])) or "-"
            rows.append((f"ELF {name}", f"class {_kv(elf.get('elf_class'))}, "
                         f"{_kv(elf.get('machine'))}, interpreter {_kv(elf.get('interpreter'))},"
                         f" needs {libs}"))
    for key in sorted(k for k in d if k not in KNOWN_ARTIFACT):
        rows.append((key, _kv(d[key])))
    return rows


# The run stage writes a workload's sampling design, and why it chose it, at the end of the
# workload's stop reason: "precision reached ... [sampled sequential: pairs one after ...]".
_DESIGN = re.compile(r"\[sampled ([^:\]]+): (.*)\]\s*$", re.S)


def design_of(outcome: Outcome | None) -> tuple[str, str] | None:
    """(design, why) of a workload's sampling, from its outcome; None when it was not recorded."""
    m = _DESIGN.search(outcome.stop_reason) if outcome else None
    return (m.group(1), m.group(2)) if m else None


def _pct(value: float) -> str:
    return f"{short(value * 100, '.1f')}%" if math.isfinite(value) else "-"


def _noise_values(noise: NoiseProfile | None) -> list[tuple[str, str]]:
    """What the calibration measured, as (label, value) rows."""
    if noise is None:
        return []
    one = noise.pair_noise(1.0)
    rows = [("measured", f"{short(noise.duration_s, '.0f')} s on {len(noise.cpus)} CPUs"),
            ("CPU speed spread", f"{_pct(noise.cv)} between 10 ms slices, "
                                 f"{_pct(noise.window_cv(1.0))} between 1 s windows"),
            ("speed stays put for", noise.stays_words()),
            ("CPUs together", noise.cross_words())]
    if one is not None:
        rows.append(("two 1 s samples differ (sd)",
                     f"{_pct(one.sequential)} one after the other, {_pct(one.simultaneous)} on "
                     f"two CPUs at once, {_pct(one.covariate)} against a loop"))
    rows.append(("other processes", f"{short(noise.foreign_cpu, '.1f')} CPUs busy"))
    return rows


def _noise_of(host: HostContext) -> NoiseProfile | None:
    raw = host.get("noise")
    if not isinstance(raw, dict):
        return None
    try:
        return NoiseProfile.from_dict(raw)
    except (ValueError, TypeError):
        return None  # an imported profile of another shape: the host table says nothing of it


class OutcomeSet(SetLike, Protocol):
    @property
    def outcomes(self) -> dict[str, Outcome]: ...


def calibration_rows(sets: Sequence[OutcomeSet]) -> list[ContextRow]:
    """The noise calibration as a table, one value per result set: what it measured (the
    machine's noise), and what sampling design it chose for each workload, and why (issue 29:
    it was printed as the profile's raw JSON)."""
    measured = [dict(_noise_values(_noise_of(s.host))) for s in sets]
    labels = list(dict.fromkeys(k for m in measured for k in m))
    rows = [ContextRow(k, tuple(m.get(k, "-") for m in measured)) for k in labels]
    workloads = list(dict.fromkeys(w for s in sets for w in s.outcomes))
    for wid in workloads:
        chosen = [design_of(s.outcomes.get(wid)) for s in sets]
        if any(chosen):
            rows.append(ContextRow(f"design for {wid}", tuple(
                f"{c[0]}: {c[1]}" if c else "-" for c in chosen)))
    return rows
