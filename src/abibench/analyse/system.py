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
from dataclasses import dataclass, field

from ..records import RunDoc
from ..run.sysboot import Combination
from ..stats import median, median_ci, ratio_of
from ..sysrecords import SystemBoot, SystemConfig, SystemPhase, SystemProcess, SystemPublished
from ..text import one_line

FIGURES = ("used", "kernel", "image", "userspace", "cache")
FIGURE_WORDS = {"used": "used (MemTotal - MemAvailable)",
                "kernel": "kernel (Slab + PageTables + KernelStack)",
                "image": "kernel image (/proc/iomem; outside MemTotal)",
                "userspace": "userspace (sum of PSS)", "cache": "page cache (Cached + Buffers)"}
EMULATED = "emulation time: QEMU's (TCG), not a machine's"
PHASE_ORDER = ("idle", "load")


# The measuring service's own cgroup: the service and the load's driver it starts (a shell, curl,
# mysql), which are abibench's, not the system's.
HARNESS_UNIT = "abibench-report.service"


def system_processes(ph: SystemPhase) -> list[SystemProcess]:
    return [p for p in ph.processes if p.unit != HARNESS_UNIT]


def figures(ph: SystemPhase) -> dict[str, float]:
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


ZONE_KEYS = ("min", "low", "high", "spanned", "present", "managed", "protection")


def zones(ph: SystemPhase) -> dict[str, dict[str, int]]:
    """The guest's zones with memory in them: name -> its zoneinfo fields (kB)."""
    out: dict[str, dict[str, int]] = {}
    for key, kb in ph.zoneinfo.items():
        name, _, what = key.rpartition(".")
        if name and what in ZONE_KEYS:
            out.setdefault(name, {})[what] = kb
    return {z: f for z, f in out.items() if f.get("present", 0) > 0}


def available_parts(ph: SystemPhase) -> dict[str, float]:
    """`used` (MemTotal - MemAvailable) taken apart as Linux 6.1's si_mem_available computes
    MemAvailable, in MiB: `held` (neither free, file cache nor reclaimable kernel memory),
    `reserve` (totalreserve_pages: each zone's high watermark plus its largest lowmem_reserve,
    at most its managed memory), `kept` (the low watermarks' share of the file cache and of
    reclaimable kernel memory that MemAvailable does not count); `model` is their sum, to hold
    against `used`. Also `boot_reserved` (every zone's present - managed: what the kernel kept
    at boot, its image and page descriptors among it, outside MemTotal) and `highmem`. Absent
    when the guest did not report zoneinfo (a report from before it did), or not every field
    of a zone with memory."""
    m, zs = ph.meminfo, zones(ph)
    need = ("MemTotal", "MemFree", "MemAvailable", "Active_file_", "Inactive_file_",
            "KReclaimable")
    # A zone the guest gave only some fields of (a cut text) is not taken apart with zeros.
    if not zs or not all(k in m for k in need) or \
            any(k not in z for z in zs.values() for k in ZONE_KEYS):
        return {}
    wlow = sum(z["low"] for z in zs.values())
    reserve = sum(min(z["high"] + z["protection"], z["managed"]) for z in zs.values())
    files, recl = m["Active_file_"] + m["Inactive_file_"], m["KReclaimable"]
    kept = min(files // 2, wlow) + min(recl // 2, wlow)
    held = m["MemTotal"] - m["MemFree"] - files - recl
    out = {"used": m["MemTotal"] - m["MemAvailable"], "held": held, "reserve": reserve,
           "kept": kept, "model": held + reserve + kept,
           "boot_reserved": sum(z["present"] - z["managed"] for z in zs.values()),
           "highmem": sum(z["managed"] for n, z in zs.items() if n == "HighMem")}
    return {k: v / 1024 for k, v in out.items()}


def units(ph: SystemPhase) -> dict[str, float]:
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
    # the biggest processes' memory by mapping: "comm: mapping" -> PSS MiB; and threads
    breakdown: dict[str, Estimate] = field(default_factory=dict)
    threads: dict[str, Estimate] = field(default_factory=dict)


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


def combo_of(b: SystemBoot) -> Combination:
    return Combination(b.kernel, b.userspace)


BIG_ANON = "anonymous mappings of 8 MiB or more"
LARGEST_ANON = "the largest anonymous mapping"


def mapping_kind(name: str) -> str:
    """A mapping's kind, stable from boot to boot (the kernel merges neighbouring anonymous
    mappings, so their sizes, which name them in the report, are not)."""
    if name.startswith("[anon "):
        return BIG_ANON
    if name == "[anon]":
        return "smaller anonymous mappings"
    if name.startswith("/"):
        return "mapped files"
    return name  # [heap], [stack], [vdso], ...


def _breakdown(ph: SystemPhase) -> tuple[dict[str, float], dict[str, float]]:
    """A phase's big processes: PSS (MiB) per "comm: kind of mapping" and of each one's
    largest anonymous mapping; threads per comm."""
    comm = {p.pid: p.comm for p in system_processes(ph)}
    pss: dict[str, float] = {}
    for m in ph.mappings:
        if m.pid in comm:
            key = f"{comm[m.pid]}: {mapping_kind(m.name)}"
            pss[key] = pss.get(key, 0.0) + m.pss_kb / 1024
            if m.name.startswith("[anon "):
                top = f"{comm[m.pid]}: {LARGEST_ANON}"
                pss[top] = max(pss.get(top, 0.0), m.pss_kb / 1024)
    threads = {comm[int(pid)]: float(n) for pid, n in ph.threads.items()
               if pid.isdigit() and int(pid) in comm}
    return pss, threads


def _estimates(per_boot: Sequence[dict[str, float]], floor: float = 0.0) -> dict[str, Estimate]:
    names = sorted({k for d in per_boot for k in d})
    out = {k: e for k in names
           if (e := estimate([d.get(k, 0.0) for d in per_boot])) is not None}
    return {k: e for k, e in out.items() if e.median >= floor}


def load_done(b: SystemBoot) -> bool:
    """Whether the boot's "load" phase was measured after the load's whole work: it ended by
    itself (no guard fired) and succeeded (the profile's load fails unless it did all its
    work). A record from before the load was fixed work (no duration) was measured while it
    ran, and is not."""
    return b.load_s is not None and b.load_guard_s == 0 and b.load_status == 0


def counted(b: SystemBoot, phase: str) -> bool:
    """The one rule of which boots a phase's figures hold (the invariant "after load means
    after the same whole work"): a complete report with the phase, and for "load" a load
    that did its whole work."""
    return b.ok and phase in b.phases and (phase != "load" or load_done(b))


def combo_result(boots: Sequence[SystemBoot], combo: Combination, phase: str) -> ComboResult:
    mine = [b for b in boots if combo_of(b) == combo]
    phases = [b.phases[phase] for b in mine if counted(b, phase)]
    per_boot = [figures(p) for p in phases]
    est = {f: e for f in FIGURES
           if (e := estimate([d[f] for d in per_boot if f in d])) is not None}
    parts = [_breakdown(p) for p in phases]
    return ComboResult(combo, phase, len(mine), len(phases), tuple(p.state for p in phases),
                       est, _estimates([units(p) for p in phases]),
                       tuple(d["used"] for d in per_boot if "used" in d),
                       estimate([p.uptime_s for p in phases]),
                       _estimates([pss for pss, _ in parts], floor=0.5),
                       _estimates([t for _, t in parts]))


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
    sentence = (f"the {a.combination.label} system uses {abs(pct):.0f}% {word} memory at "
                f"{a.phase} than the {b.combination.label} one{ci}" if sig else
                f"the {a.combination.label} system and the {b.combination.label} one show no "
                f"significant difference in memory at {a.phase}{ci}")
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
    published: tuple[SystemPublished, ...]
    problems: tuple[str, ...]
    provenance: dict[str, str] = field(default_factory=dict)  # what else identifies the run
    # what a reader must know about a figure, not a failure of the run (a 32-bit kernel's PSS)
    notes: tuple[str, ...] = ()


def _problems(boots: Sequence[SystemBoot], results: Sequence[ComboResult]) -> list[str]:
    problems = [f"{combo_of(b).label}: boot {b.index + 1} {b.ended} after {b.seconds:.0f} s "
                f"without a complete report{': ' + b.console_tail if b.console_tail else ''}"
                for b in boots if not b.ok]
    problems += [_load_problem(b) for b in boots
                 if b.ok and "load" in b.phases and not load_done(b)]
    problems += [f"{r.combination.label}: the system was {s!r} when measured"
                 for r in results for s in dict.fromkeys(r.states) if s not in ("running",)]
    problems += _not_ready(boots)
    return problems


def _not_ready(boots: Sequence[SystemBoot]) -> list[str]:
    """Per boot measured other than `running` whose profile has a ready check: that check's
    last line, the reason the system never became ready (a page that never loaded)."""
    return [f"{combo_of(b).label}: boot {b.index + 1}, {name} {ph.state!r}: the ready check "
            f"last said: {one_line(ph.ready)[:300]}"
            for b in boots if b.ok for name, ph in b.phases.items()
            if ph.state != "running" and ph.ready]


def thp_notes(boots: Sequence[SystemBoot]) -> list[str]:
    """A 32-bit kernel's smaps gives a transparent huge page mapped once no PSS at all (Linux
    6.1's smaps_account shifts the page's size, an unsigned long, by PSS_SHIFT: 2 MiB << 12
    is 0 in 32 bits), while its RSS and AnonHugePages count it: said, with how much it is."""
    out = []
    for combo in dict.fromkeys(combo_of(b) for b in boots):
        if combo.bits[0] != 32:
            continue
        for phase in PHASE_ORDER:
            huge = [b.phases[phase].meminfo.get("AnonHugePages", 0) / 1024 for b in boots
                    if combo_of(b) == combo and counted(b, phase)]
            if huge and median(huge) >= 1:
                out.append(f"{combo.label} ({phase}): a 32-bit kernel counts no PSS for "
                           f"transparent huge pages mapped once ({median(huge):.1f} MiB of "
                           "AnonHugePages): userspace PSS is low by up to that")
    return out


def _work(b: SystemBoot) -> str:
    return ", ".join(f"{n} {k}" for k, n in b.load_work.items()) or "nothing counted"


def _load_problem(b: SystemBoot) -> str:
    head = f"{combo_of(b).label}: boot {b.index + 1}'s load"
    if b.load_s is None:
        return f"{head} was measured while it ran (a record from before the load was fixed " \
               "work): not counted after load"
    if b.load_guard_s:
        return (f"{head} was stopped by its {b.load_guard_s} s guard before it finished "
                f"({_work(b)}): not counted after load")
    return f"{head} exited {b.load_status} ({_work(b)}): not counted after load"


def load_summary(boots: Sequence[SystemBoot]) -> str:
    """What the counted loads did and how long they took (emulation time), for provenance."""
    done = [b for b in boots if counted(b, "load")]
    if not done:
        return ""
    works = list(dict.fromkeys(_work(b) for b in done))
    secs = [b.load_s for b in done if b.load_s is not None]
    each = "each of " if len(works) == 1 and len(done) > 1 else ""
    return (f"{' / '.join(works)} in {each}the {len(done)} counted boot"
            f"{'s' if len(done) > 1 else ''}; {min(secs):.0f}-{max(secs):.0f} s of emulation time")


def analyse(config: SystemConfig, boots: Sequence[SystemBoot],
            missing: int = 0) -> SystemAnalysis:
    """A system run's figures, intervals and verdicts; `missing`: boots the run asked for and
    does not hold (interrupted), said as a problem."""
    combos = [Combination(*c.split(":", 1)) for c in config.combinations if ":" in c]
    phases = ["idle"] + (["load"] if config.load else [])
    results = [combo_result(boots, c, ph) for ph in phases for c in combos]
    comparisons = []
    for ph in phases:
        mine = [r for r in results if r.phase == ph]
        for i, b in enumerate(mine):
            for a in mine[i + 1:]:
                c = compare(a, b)
                if c is not None:
                    comparisons.append(c)
    problems = _problems(boots, results)
    if missing > 0:
        problems.append(f"{missing} of the run's {len(boots) + missing} boots were not done "
                        "(the run was interrupted): `abibench system run --resume RUN` boots "
                        "them")
    provenance = {"release": config.release, "boots per combination": str(config.boots),
                  "seed": str(config.seed), "settle": f"{config.settle_s} s",
                  **{f"disk {arch}": key for arch, key in config.images.items()}}
    if config.load and (work := load_summary(boots)):
        provenance["load"] = work
    return SystemAnalysis(config.profile, config.description, config.memory_mb,
                          dict(config.kernels), tuple(results), tuple(comparisons),
                          config.published, tuple(problems), provenance,
                          tuple(thp_notes(boots)))


def analyse_doc(doc: RunDoc) -> SystemAnalysis | None:
    """A stored or imported system run's analysis; None for a run of programs."""
    config = doc.run.config.system
    if config is None:
        return None
    asked = config.boots * len(config.combinations)
    return analyse(config, doc.system_boots, missing=max(asked - len(doc.system_boots), 0))
