"""What each booted system costs in memory (abibench system run): figures, intervals, verdicts.

Per boot and phase, from the guest's own counts (run/sysboot.py):
  used       MemTotal - MemAvailable: what the system holds that the kernel cannot hand back
  kernel     Slab + PageTables + KernelStack: the kernel's own dynamic memory
  image      the kernel image's ranges in /proc/iomem (code, rodata, data, bss): outside MemTotal
  userspace  the sum of every process's PSS (shared pages split among their users), but for
             the measuring service's own cgroup (it and the load's driver are abibench's)
  cache      Cached + Buffers: the page cache (reclaimable, mostly outside `used`)
and userspace PSS per systemd unit. Per combination: the median over boots and its
distribution-free interval (stats.median_ci); between combinations, the ratio of geometric means
of `used` with Welch's interval (stats.ratio_of, unpaired: boots are not paired). A boot without
a complete report counts only as a failed boot. Every number is finite by construction: a field
the guest did not report makes the figure absent, never zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..run.sysboot import Combination, Phase, Process, SystemRun
from ..stats import median, median_ci, ratio_of
from ..workloads.system import Published

FIGURES = ("used", "kernel", "image", "userspace", "cache")
FIGURE_WORDS = {"used": "used (MemTotal - MemAvailable)",
                "kernel": "kernel (Slab + PageTables + KernelStack)",
                "image": "kernel image (/proc/iomem; outside MemTotal)",
                "userspace": "userspace (sum of PSS)", "cache": "page cache (Cached + Buffers)"}
EMULATED = "emulation time: QEMU's (TCG), not a machine's"


# The measuring service's own cgroup: the service and the load's driver it starts (a shell, curl,
# mysql), which are abibench's, not the system's.
HARNESS_UNIT = "abibench-report.service"


def system_processes(ph: Phase) -> list[Process]:
    return [p for p in ph.processes if p.unit != HARNESS_UNIT]


def figures(ph: Phase) -> dict[str, float]:
    """The phase's figures in MiB; a figure whose inputs the guest did not report is absent."""
    m = ph.meminfo
    out: dict[str, float] = {}
    if "MemTotal" in m and "MemAvailable" in m:
        out["used"] = (m["MemTotal"] - m["MemAvailable"]) / 1024
    if all(k in m for k in ("Slab", "PageTables", "KernelStack")):
        out["kernel"] = (m["Slab"] + m["PageTables"] + m["KernelStack"]) / 1024
    if ph.kernel_image:
        out["image"] = sum(ph.kernel_image.values()) / (1 << 20)
    procs = system_processes(ph)
    if procs:
        out["userspace"] = sum(p.pss_kb for p in procs) / 1024
    if "Cached" in m and "Buffers" in m:
        out["cache"] = (m["Cached"] + m["Buffers"]) / 1024
    return {k: v for k, v in out.items() if math.isfinite(v) and v >= 0}


def units(ph: Phase) -> dict[str, float]:
    """Userspace PSS per systemd unit (MiB)."""
    out: dict[str, float] = {}
    for p in system_processes(ph):
        out[p.unit] = out.get(p.unit, 0.0) + p.pss_kb / 1024
    return out


@dataclass(frozen=True)
class Estimate:
    median: float
    low: float  # nan below two boots
    high: float
    n: int


def estimate(values: Sequence[float]) -> Estimate | None:
    if not values:
        return None
    lo, hi = median_ci(values)
    return Estimate(median(values), lo, hi, len(values))


@dataclass(frozen=True)
class ComboResult:
    combination: Combination
    phase: str
    boots: int  # attempted
    ok: int  # with a complete report
    states: tuple[str, ...]  # systemctl is-system-running per ok boot
    figures: dict[str, Estimate]
    units: dict[str, Estimate]
    used: tuple[float, ...]  # per ok boot, MiB: the comparisons' samples
    emulation_s: Estimate | None  # guest uptime when measured


@dataclass(frozen=True)
class Comparison:
    a: str  # combination labels: "a uses N% more than b"
    b: str
    phase: str
    percent: float  # (ratio - 1) * 100
    low: float
    high: float
    significant: bool
    sentence: str


def combo_result(run: SystemRun, combo: Combination, phase: str) -> ComboResult:
    mine = [b for b in run.boots if b.combination == combo]
    phases = [b.report.phases[phase] for b in mine
              if b.ok and b.report is not None and phase in b.report.phases]
    per_boot = [figures(p) for p in phases]
    per_unit = [units(p) for p in phases]
    names = sorted({u for d in per_unit for u in d})
    est = {f: e for f in FIGURES
           if (e := estimate([d[f] for d in per_boot if f in d])) is not None}
    unit_est = {u: e for u in names
                if (e := estimate([d.get(u, 0.0) for d in per_unit])) is not None}
    return ComboResult(combo, phase, len(mine), len(phases), tuple(p.state for p in phases),
                       est, unit_est, tuple(d["used"] for d in per_boot if "used" in d),
                       estimate([p.uptime_s for p in phases]))


def compare(a: ComboResult, b: ComboResult) -> Comparison | None:
    """How much more (or less) memory a's system uses than b's, with its interval."""
    if len(a.used) < 2 or len(b.used) < 2 or min(a.used + b.used) <= 0:
        return None
    r = ratio_of(a.used, b.used, paired=False, name_a=a.combination.label,
                 name_b=b.combination.label)
    pct, lo, hi = (100 * (r.ratio - 1), 100 * (r.ci_low - 1), 100 * (r.ci_high - 1))
    sig = math.isfinite(lo) and math.isfinite(hi) and (lo > 0 or hi < 0)
    word = "more" if pct >= 0 else "less"
    ci = f" [{lo:+.0f}%, {hi:+.0f}%]" if math.isfinite(lo) and math.isfinite(hi) else ""
    what = (f"{abs(pct):.0f}% {word} memory" if sig else
            "no significant difference in memory")
    sentence = (f"the {a.combination.label} system uses {what} at {a.phase} than the "
                f"{b.combination.label} one{ci}")
    return Comparison(a.combination.label, b.combination.label, a.phase, pct, lo, hi, sig,
                      sentence)


@dataclass(frozen=True)
class SystemAnalysis:
    profile: str
    description: str
    memory_mb: int
    kernels: dict[str, str]  # flavour -> "package version"
    results: tuple[ComboResult, ...]
    comparisons: tuple[Comparison, ...]
    published: tuple[Published, ...]
    problems: tuple[str, ...]


def analyse(run: SystemRun, combos: Sequence[Combination]) -> SystemAnalysis:
    phases = ["idle"] + (["load"] if run.profile.load else [])
    results = [combo_result(run, c, ph) for ph in phases for c in combos]
    comparisons = []
    for ph in phases:
        mine = [r for r in results if r.phase == ph]
        for i, b in enumerate(mine):
            for a in mine[i + 1:]:
                c = compare(a, b)
                if c is not None:
                    comparisons.append(c)
    problems = [f"{b.combination.label}: boot {i + 1} {b.ended} after {b.seconds:.0f} s "
                f"without a complete report{': ' + b.console_tail if b.console_tail else ''}"
                for i, b in enumerate(run.boots) if not b.ok]
    problems += [f"{b.combination.label}: the load exited {b.report.load_status}"
                 + (" (killed at its time limit)" if b.report.load_status == 137 else "")
                 for b in run.boots if b.report is not None and b.report.load_status]
    problems += [f"{r.combination.label}: the system was {s!r} when measured"
                 for r in results for s in dict.fromkeys(r.states) if s not in ("running",)]
    return SystemAnalysis(run.profile.id, run.profile.description, run.profile.memory_mb,
                          {f: k.label() for f, k in run.kernels.items()}, tuple(results),
                          tuple(comparisons), run.profile.published, tuple(problems))
