"""The records that cross stages: what was built, what was measured, what a run holds.

Every stage reads and writes these and nothing looser. A run as a whole is a :class:`RunDoc`:
the store returns one, an imported file becomes one, and the analysis reads only it. Its
``to_dict`` is the versioned export format (``"format": "abibench-run", "version": 1``); only
the store and the import boundary deal with that dictionary form.

Three facts every consumer needs are answered here once:

* which samples count (:meth:`RunDoc.counted`: status ok, not a warm-up, a timed run);
* the value of a metric in a sample (:meth:`Sample.value`);
* how two targets' samples pair by round (:func:`pair_by_round`, :meth:`RunDoc.paired`);

and the reference of every comparison, the 64-bit ABI of the host family (:func:`pick_reference`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Literal, cast

from .abi import ABIS, FAMILY_CPU, REFERENCE_ABIS, Abi

# Free-form data that travels as JSON (parameters, plan, host extras): typed as what it is.
JSON = str | int | float | bool | None | list["JSON"] | dict[str, "JSON"]
JSONDict = dict[str, JSON]

Better = Literal["higher", "lower"]

EXPORT_FORMAT = "abibench-run"
EXPORT_VERSION = 1


def better_of(value: object) -> Better:
    return "higher" if value == "higher" else "lower"


@dataclass(frozen=True)
class Metric:
    """A quantity a workload reports: its unit and which direction is better."""

    name: str
    unit: str
    better: Better

    def to_dict(self) -> JSONDict:
        return {"unit": self.unit, "better": self.better}


# Measured for every sample by the launcher, whatever the program prints.
BUILTIN_METRICS: dict[str, Metric] = {
    "wall": Metric("wall", "s", "lower"),
    "user": Metric("user", "s", "lower"),
    "sys": Metric("sys", "s", "lower"),
    "max_rss": Metric("max_rss", "KiB", "lower"),
    # [run] memory = "tree": the whole process tree's peak (a browser's dozen processes)
    "tree_peak_rss": Metric("tree_peak_rss", "KiB", "lower"),
}
# Quantities of memory, not of speed: a covariate of the machine's speed says nothing of them.
MEMORY_METRICS = ("max_rss", "tree_peak_rss")

# The reference ("b" of every ratio) is the 64-bit ABI of each host family: REFERENCE_ABIS,
# from the ABI table.


def abi_of(label: str) -> str:
    """The ABI part of a target label: 'x86_64/debian' -> 'x86_64'."""
    return label.split("/", 1)[0]


def family_of(label: str) -> str | None:
    """The host family of a target label's ABI (x86, arm, ...), None for an ABI this version
    lacks."""
    abi = ABIS.get(abi_of(label))
    return abi.family if abi else None


def emulated_words(label: str) -> str:
    """What the times of an emulated target are, in the words every report uses."""
    cpu = FAMILY_CPU.get(family_of(label) or "", "a real")
    return f"emulated: measures QEMU, not {cpu} CPU"


def is_reference(label: str) -> bool:
    return abi_of(label) in REFERENCE_ABIS


def pick_reference(labels: Sequence[str]) -> str:
    """The target every other is compared with: the 64-bit ABI, else the last one."""
    for ref in REFERENCE_ABIS:
        if ref in labels:
            return ref
    for ref in REFERENCE_ABIS:
        for label in labels:
            if abi_of(label) == ref:
                return label
    return labels[-1]


# --------------------------------------------------------------------------- counters


# Cachegrind's event names, and the sums an explanation speaks of.
INSTRUCTIONS = "Ir"
D1_MISSES = ("D1mr", "D1mw")
LL_MISSES = ("ILmr", "DLmr", "DLmw")
BRANCHES = ("Bc", "Bi")
MISPREDICTS = ("Bcm", "Bim")


@dataclass(frozen=True)
class FunctionCount:
    """One function's share of a counted run: its events, in the order of CounterProfile.events."""

    name: str
    counts: tuple[int, ...]


@dataclass(frozen=True)
class CounterProfile:
    """What the counted run under cachegrind saw: event totals, the top functions, and whether
    the count repeated.

    ``attempts`` are the instruction totals of every run made until two agreed (valgrind's counts
    are deterministic for the same binary, inputs and environment; a program that reads the
    clock or random numbers differs). ``agreed`` is False when they never did: the instruction
    part of an explanation is then "not exact", and its range is that of the attempts.
    ``simulation`` is "insn" (instructions only) or "cache" (cache and branch simulation, of the
    fixed cache model in ``cache``: simulated, not hardware).
    """

    events: tuple[str, ...]
    totals: tuple[int, ...]
    functions: tuple[FunctionCount, ...] = ()
    attempts: tuple[int, ...] = ()
    agreed: bool = True
    simulation: str = "insn"
    cache: tuple[str, ...] = ()

    def total(self, *names: str) -> int | None:
        """The sum of these events' totals; None when one of them was not counted."""
        idx = {e: i for i, e in enumerate(self.events)}
        if not names or any(n not in idx for n in names):
            return None
        return sum(self.totals[idx[n]] for n in names)

    def function_total(self, fn: FunctionCount, *names: str) -> int | None:
        idx = {e: i for i, e in enumerate(self.events)}
        if not names or any(n not in idx or idx[n] >= len(fn.counts) for n in names):
            return None
        return sum(fn.counts[idx[n]] for n in names)

    def to_dict(self) -> JSONDict:
        return {"events": list(self.events), "totals": list(self.totals),
                "functions": [[f.name, list(f.counts)] for f in self.functions],
                "attempts": list(self.attempts), "agreed": self.agreed,
                "simulation": self.simulation, "cache": list(self.cache)}

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> CounterProfile:
        funcs = cast(list[list[object]], d.get("functions") or [])
        return CounterProfile(
            events=tuple(str(e) for e in cast(list[str], d.get("events") or [])),
            totals=tuple(int(v) for v in cast(list[int], d.get("totals") or [])),
            functions=tuple(FunctionCount(str(f[0]), tuple(int(v) for v in
                                                           cast(list[int], f[1])))
                            for f in funcs),
            attempts=tuple(int(v) for v in cast(list[int], d.get("attempts") or [])),
            agreed=bool(d.get("agreed", True)), simulation=str(d.get("simulation", "insn")),
            cache=tuple(str(c) for c in cast(list[str], d.get("cache") or [])))


# --------------------------------------------------------------------------- samples

# How a round's samples are taken (run/designs.py says when each is used):
# sequential    one target after the other, the order alternating (A B, B A, ...)
# simultaneous  both targets at the same moment, each pinned to its own CPU, swapped each round
# covariate     sequential, with a fixed loop on another CPU measuring the machine's speed
# short         sequential, at the profile's shorter size, so a pair falls within the time the
#               machine stays at one speed
DESIGNS = ("sequential", "simultaneous", "covariate", "short")


@dataclass(frozen=True)
class Sample:
    run_id: str
    workload: str
    target: str
    round: int  # 0 is the warm-up round
    position: int  # order within the round (interleaving is visible in the data)
    warmup: bool
    status: str  # ok | failed | timeout | interrupted
    exit_code: int
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_kb: int
    stdout_digest: str
    check: str | None  # the validation value compared across targets
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    started_at: str = ""
    env_pad: int = 0  # bytes of environment padding (stack alignment is randomised per sample)
    instructions: int | None = None
    # timed | counters (one run under a counter: its times mean nothing) | baseline (the ABI's
    # empty program under the same emulator: its peak memory is the emulator's own)
    kind: str = "timed"
    # Why a stored sample no longer counts (e.g. its round was cut short and measured again
    # after `run --resume`); the sample itself is kept as it was measured.
    discarded: str | None = None
    # Page faults of the process, per run (rusage; None in runs stored before they were kept).
    minflt: int | None = None
    majflt: int | None = None
    # kind "counters": what cachegrind counted (None in a timed sample or an older run).
    counters: CounterProfile | None = None
    # How the sample was measured (run/designs.py): the design of its round, the CPU it was
    # pinned to, and how many back-to-back runs its times are the mean of.
    design: str = "sequential"
    cpu: int | None = None
    repeat: int = 1
    # The machine around the sample: CPU time other processes used while it ran, time the
    # hypervisor stole, and the covariate loop's speed on another CPU (iterations per second).
    foreign_cpu_s: float | None = None
    steal_s: float | None = None
    covariate: float | None = None
    # [run] memory = "tree": the whole process tree's peak memory (KiB) and how it was measured
    # (probe/memory.py: cgroup-v2, cgroup-v1, sampled); None for other workloads
    tree_peak_rss_kb: int | None = None
    tree_memory: str | None = None
    # Run under an emulator (qemu-user): its times measure the emulator, never the ABI on its
    # own hardware, and its peak memory includes the emulator's.
    emulated: bool = False
    # The board right after the sample (probe/board.py), where the kernel shows it: the
    # lowest CPU clock, the hottest thermal zone, the firmware's throttling bits.
    clock_mhz: float | None = None
    temp_c: float | None = None
    throttled: int | None = None

    @property
    def counted(self) -> bool:
        """Whether the statistics use this sample."""
        return (self.status == "ok" and not self.warmup and self.kind == "timed"
                and self.discarded is None)

    def value(self, metric: str) -> float | None:
        """The sample's value of a metric; None when the sample has none."""
        if metric == "wall":
            return self.wall_s
        if metric == "user":
            return self.user_s
        if metric == "sys":
            return self.sys_s
        if metric == "max_rss":
            return float(self.max_rss_kb)
        if metric in ("minflt", "majflt"):
            faults = self.minflt if metric == "minflt" else self.majflt
            return None if faults is None else float(faults)
        if metric == "tree_peak_rss":
            return None if self.tree_peak_rss_kb is None else float(self.tree_peak_rss_kb)
        return self.metrics.get(metric)

    def to_dict(self) -> JSONDict:
        out: JSONDict = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, CounterProfile):
                out[f.name] = v.to_dict()
            else:
                out[f.name] = dict(v) if isinstance(v, dict) else v
        return out

    @staticmethod
    def from_dict(d: Mapping[str, object], run_id: str | None = None) -> Sample:
        def num(key: str) -> float:
            return float(cast(float, d[key]))

        metrics = cast(Mapping[str, float], d.get("metrics") or {})
        instructions = d.get("instructions")
        counters = d.get("counters")
        minflt, majflt = d.get("minflt"), d.get("majflt")
        return Sample(
            run_id=run_id if run_id is not None else str(d.get("run_id", "")),
            workload=str(d["workload"]), target=str(d["target"]), round=int(cast(int, d["round"])),
            position=int(cast(int, d["position"])), warmup=bool(d["warmup"]),
            status=str(d["status"]), exit_code=int(cast(int, d["exit_code"])),
            wall_s=num("wall_s"), user_s=num("user_s"), sys_s=num("sys_s"),
            max_rss_kb=int(cast(int, d["max_rss_kb"])), stdout_digest=str(d["stdout_digest"]),
            check=None if d.get("check") is None else str(d["check"]),
            metrics={str(k): float(v) for k, v in metrics.items()},
            error=None if d.get("error") is None else str(d["error"]),
            started_at=str(d.get("started_at", "")), env_pad=int(cast(int, d.get("env_pad", 0))),
            instructions=None if instructions is None else int(cast(int, instructions)),
            kind=str(d.get("kind", "timed")),
            discarded=None if d.get("discarded") is None else str(d["discarded"]),
            minflt=None if minflt is None else int(cast(int, minflt)),
            majflt=None if majflt is None else int(cast(int, majflt)),
            counters=None if counters is None else
            CounterProfile.from_dict(cast(Mapping[str, object], counters)),
            design=str(d.get("design", "sequential")),
            cpu=None if d.get("cpu") is None else int(cast(int, d["cpu"])),
            repeat=int(cast(int, d.get("repeat", 1))),
            foreign_cpu_s=_opt_float(d.get("foreign_cpu_s")),
            steal_s=_opt_float(d.get("steal_s")),
            covariate=_opt_float(d.get("covariate")),
            tree_peak_rss_kb=None if d.get("tree_peak_rss_kb") is None
            else int(cast(int, d["tree_peak_rss_kb"])),
            tree_memory=None if d.get("tree_memory") is None else str(d["tree_memory"]),
            emulated=bool(d.get("emulated", False)),
            clock_mhz=_opt_float(d.get("clock_mhz")), temp_c=_opt_float(d.get("temp_c")),
            throttled=None if d.get("throttled") is None else int(cast(int, d["throttled"])))


def _opt_float(v: object) -> float | None:
    return None if v is None else float(cast(float, v))


@dataclass(frozen=True)
class Paired:
    """Two targets' values of one metric; ``paired`` when sample i of both is from round i."""

    a: tuple[float, ...]
    b: tuple[float, ...]
    paired: bool
    # The covariate design: the machine loop's speed during each paired sample (empty unless
    # every round of both has one). A speed, so it bears on times and rates, not on memory.
    cov_a: tuple[float, ...] = ()
    cov_b: tuple[float, ...] = ()

    @property
    def covariate(self) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        return (self.cov_a, self.cov_b) if self.cov_a else None


def pair_by_round(a: Iterable[Sample], b: Iterable[Sample], metric: str) -> Paired:
    """Values of a and b, paired by round when both have exactly the same rounds.

    Samples without a finite value of the metric are left out. Unpaired values keep their
    sample order; paired ones are in round order.
    """
    def by_round(samples: Iterable[Sample]) -> dict[int, float]:
        out: dict[int, float] = {}
        for s in samples:
            v = s.value(metric)
            if v is not None and math.isfinite(v):
                out[s.round] = v
        return out

    sa, sb = list(a), list(b)
    va, vb = by_round(sa), by_round(sb)
    if va and set(va) == set(vb):
        rounds = sorted(va)
        ca, cb = _covariates(sa, rounds), _covariates(sb, rounds)
        if metric in MEMORY_METRICS or ca is None or cb is None:
            ca = cb = ()
        return Paired(tuple(va[r] for r in rounds), tuple(vb[r] for r in rounds), True, ca, cb)
    return Paired(tuple(va.values()), tuple(vb.values()), False)


def _covariates(samples: list[Sample], rounds: list[int]) -> tuple[float, ...] | None:
    """The covariate of each round's sample, or None unless all were taken with one."""
    by_round = {s.round: s.covariate for s in samples if s.design == "covariate"}
    values = [by_round.get(r) for r in rounds]
    if any(v is None or not math.isfinite(v) or v <= 0 for v in values):
        return None
    return tuple(float(v) for v in values if v is not None)


# --------------------------------------------------------------------------- targets, artifacts


@dataclass(frozen=True)
class Target:
    """The unit that is compared: one ABI from one provenance."""

    abi: Abi
    provenance: str = "source"

    @property
    def label(self) -> str:
        return self.abi.name if self.provenance == "source" else f"{self.abi.name}/{self.provenance}"


@dataclass(frozen=True)
class TargetStatus:
    """Why a target of a workload has no (or no further) samples: not built, failed, ..."""

    workload: str
    target: str
    state: str  # ok | failed | timeout | not built | not run | interrupted
    reason: str | None

    def to_dict(self) -> JSONDict:
        return {"workload": self.workload, "target": self.target, "state": self.state,
                "reason": self.reason}


@dataclass(frozen=True)
class RunWarning:
    message: str
    workload: str | None = None
    target: str | None = None

    def to_dict(self) -> JSONDict:
        return {"workload": self.workload, "target": self.target, "message": self.message}


@dataclass(frozen=True)
class Outcome:
    """How a workload's schedule ended: counted rounds and why it stopped."""

    rounds: int
    stop_reason: str

    def to_dict(self) -> JSONDict:
        return {"rounds": self.rounds, "stop_reason": self.stop_reason}

    def text(self) -> str:
        return f"{self.stop_reason} ({self.rounds} counted rounds)"


_SEQ_FIELDS = ("files", "cflags", "abi_flags", "commands", "data", "version_skew")


@dataclass(frozen=True)
class Artifact:
    """One workload's program for one target: how it was obtained, and what it is."""

    workload: str
    abi: str
    provenance: str = "source"
    bin_dir: str = ""
    files: tuple[str, ...] = ()
    cache_key: str = ""
    cached: bool = False  # True when this run reused an earlier build
    compiler: str = ""
    compiler_version: str | None = None
    cflags: tuple[str, ...] = ()  # identical for every ABI of one run
    abi_flags: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()  # the exact command lines, as a user could re-run them
    effective: dict[str, str] = field(default_factory=dict)  # target options really used
    build_seconds: float | None = None
    sizes: dict[str, dict[str, int | None]] = field(default_factory=dict)
    elf: dict[str, JSONDict] = field(default_factory=dict)
    log: str = ""
    source_package: str | None = None  # Debian source package and the pinned version built
    source_version: str | None = None
    data: tuple[str, ...] = ()  # non-ELF files shipped beside the binaries (scripts, scenes)
    # `abibench inspect` of every file, redone on each run (cache hits too): libraries change.
    inspection: JSONDict | None = None
    # provenance "debian": the sysroot the program runs in, the pinned versions of the packages
    # asked for and of the whole closure, and any version skew that was allowed (a warning).
    sysroot: str | None = None
    debian_packages: dict[str, str] | None = None
    debian_closure: dict[str, str] | None = None
    version_skew: tuple[str, ...] = ()
    # [source.extra] Debian source trees the build also read: {package: pinned version}
    extra_sources: dict[str, str] | None = None
    # the program's own account of its build, written by the recipe to {out}/buildinfo.txt,
    # e.g. OpenSSL's `openssl version -a` lines (platform, options: bn(64,32), compiler)
    build_options: str | None = None
    # sha256 of every file at the moment it was built or obtained: what is run must be this
    digests: dict[str, str] = field(default_factory=dict)
    # every toolchain the build's commands name, by its own version command: {tool: version}
    toolchain: dict[str, str] = field(default_factory=dict)
    # what the build could read: sandboxed to its declared inputs, or not (and why)
    isolation: str | None = None
    # the target label it was measured as; set by the store (empty while building)
    target: str = ""
    # fields an imported file carries that this version does not know: shown, never used
    extra: JSONDict = field(default_factory=dict)

    @property
    def main_file(self) -> str | None:
        return self.files[0] if self.files else None

    def main_sizes(self) -> dict[str, int | None]:
        return self.sizes.get(self.files[0], {}) if self.files else {}

    def info_dict(self) -> JSONDict:
        """Every field but target and extra, as the build cache and the store keep it."""
        out: JSONDict = {}
        for f in fields(self):
            if f.name in ("target", "extra"):
                continue
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else cast(JSON, v)
        return out

    def to_dict(self) -> JSONDict:
        """The export form: workload, target and cached first, then the rest, then extras."""
        info = self.info_dict()
        head: JSONDict = {"workload": self.workload, "target": self.target,
                          "cached": self.cached}
        return {**head, **{k: v for k, v in info.items() if k not in head}, **self.extra}

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> Artifact:
        known = {f.name for f in fields(Artifact)}
        kwargs: dict[str, object] = {}
        extra: JSONDict = {}
        for k, v in d.items():
            if k == "extra":
                continue
            if k in known:
                kwargs[k] = tuple(cast(list[str], v)) if k in _SEQ_FIELDS and v is not None \
                    else v
            else:
                extra[k] = cast(JSON, v)
        kwargs.setdefault("abi", abi_of(str(d.get("target", ""))))
        kwargs["extra"] = extra
        return Artifact(**kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- host, run


_HOST_FIELDS = ("hostname", "cpu_model", "cpus_online", "machine", "kernel_release",
                "kernel_version", "kernel_bits", "kernel_x32", "governor", "turbo",
                "virtualization", "mem_total_kb", "load_average", "libc", "compilers", "python",
                "os_release")


@dataclass(frozen=True)
class HostContext:
    """Where a result was measured. Fields an older or newer abibench wrote go to ``extra``."""

    # The order here is free (to_dict writes _HOST_FIELDS' order); the collections break up
    # the runs of optional scalars.
    hostname: str | None = None
    cpu_model: str | None = None
    cpus_online: int | None = None
    machine: str | None = None
    kernel_release: str | None = None
    load_average: tuple[float, ...] = ()
    kernel_version: str | None = None
    kernel_bits: int | None = None
    kernel_x32: str | None = None
    governor: str | None = None
    turbo: str | None = None
    compilers: dict[str, str] = field(default_factory=dict)
    virtualization: str | None = None
    mem_total_kb: int | None = None
    libc: str | None = None
    python: str | None = None
    os_release: str | None = None
    # what a run adds: the ABI probe and the C library of every ABI
    extra: JSONDict = field(default_factory=dict)
    present: tuple[str, ...] = _HOST_FIELDS  # which known fields the source had

    def to_dict(self) -> JSONDict:
        out: JSONDict = {}
        for name in _HOST_FIELDS:
            if name not in self.present:
                continue
            v = getattr(self, name)
            out[name] = list(v) if isinstance(v, tuple) else (dict(v) if isinstance(v, dict)
                                                             else v)
        return {**out, **self.extra}

    def get(self, key: str) -> JSON:
        """A field by name, extras included (None when absent)."""
        if key in _HOST_FIELDS:
            v = getattr(self, key)
            value: JSON = list(v) if isinstance(v, tuple) else v
            return value
        return self.extra.get(key)

    def with_extra(self, **values: JSON) -> HostContext:
        return HostContext(**{n: getattr(self, n) for n in _HOST_FIELDS},
                           extra={**self.extra, **values}, present=self.present)

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> HostContext:
        kwargs: dict[str, object] = {}
        for name in _HOST_FIELDS:
            if name in d:
                v = d[name]
                kwargs[name] = tuple(cast(list[float], v)) if name == "load_average" and v \
                    is not None else ({} if name == "compilers" and v is None else v)
        if kwargs.get("load_average") is None:
            kwargs["load_average"] = ()
        extra = {k: cast(JSON, v) for k, v in d.items() if k not in _HOST_FIELDS}
        return HostContext(**kwargs, extra=extra,  # type: ignore[arg-type]
                           present=tuple(n for n in _HOST_FIELDS if n in d))


@dataclass(frozen=True)
class WorkloadMeta:
    """What a run recorded about one workload: its metrics, targets and parameters."""

    id: str
    primary: str
    targets: tuple[str, ...]
    metrics: dict[str, Metric]
    title: str = ""
    params: JSONDict = field(default_factory=dict)
    seeds: tuple[str, ...] = ()
    path: str | None = None
    validates: bool | None = None  # whether the profile compares outputs (None: not recorded)
    # validate = "none: REASON" of the profile: why its outputs are not compared
    no_validation: str | None = None
    extra: JSONDict = field(default_factory=dict)  # inputs, and what newer versions add

    def metric(self, name: str) -> Metric:
        """A declared metric, else a built-in one, else a unitless lower-is-better one."""
        if name in self.metrics:
            return self.metrics[name]
        if name in BUILTIN_METRICS:
            return BUILTIN_METRICS[name]
        return Metric(name, "", "lower")

    @property
    def primary_metric(self) -> Metric:
        m = self.metrics.get(self.primary)
        if m is not None:
            return m
        known = BUILTIN_METRICS.get(self.primary)
        return known if known is not None else Metric(self.primary, "", "lower")

    def to_dict(self) -> JSONDict:
        out: JSONDict = {"title": self.title, "primary": self.primary}
        if self.path is not None:
            out["path"] = self.path
        out.update({"params": dict(self.params), "seeds": list(self.seeds),
                    "targets": list(self.targets),
                    "metrics": {n: m.to_dict() for n, m in self.metrics.items()}})
        if self.validates is not None:
            out["validates"] = self.validates
        if self.no_validation is not None:
            out["no_validation"] = self.no_validation
        return {**out, **self.extra}

    def with_targets(self, targets: Sequence[str]) -> WorkloadMeta:
        return replace(self, targets=tuple(targets))

    @staticmethod
    def from_dict(wid: str, d: Mapping[str, object]) -> WorkloadMeta:
        metrics = {str(n): Metric(str(n), str(m.get("unit", "")), better_of(m.get("better")))
                   for n, m in cast(Mapping[str, Mapping[str, object]], d["metrics"]).items()}
        known = {"title", "primary", "path", "params", "seeds", "targets", "metrics", "validates",
                 "no_validation"}
        return WorkloadMeta(
            id=wid, primary=str(d["primary"]),
            targets=tuple(str(t) for t in cast(list[str], d.get("targets") or [])),
            metrics=metrics, title=str(d.get("title", wid)),
            params=dict(cast(JSONDict, d.get("params") or {})),
            seeds=tuple(cast(list[str], d.get("seeds") or [])),
            path=None if d.get("path") is None else str(d["path"]),
            validates=None if d.get("validates") is None else bool(d["validates"]),
            no_validation=None if d.get("no_validation") is None else str(d["no_validation"]),
            extra={k: cast(JSON, v) for k, v in d.items() if k not in known})


@dataclass(frozen=True)
class RunConfig:
    """What a run was asked to do."""

    workloads: dict[str, WorkloadMeta]
    abis: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()
    cc: str | None = None
    provenance: str | None = None
    plan: JSONDict | None = None
    extra: JSONDict = field(default_factory=dict)  # e.g. "imported": where a file came from
    present: tuple[str, ...] = ("abis", "cflags", "cc", "provenance", "plan")

    def to_dict(self) -> JSONDict:
        out: JSONDict = {}
        for key in ("abis", "cflags", "cc", "provenance", "plan"):
            if key in self.present:
                v = getattr(self, key)
                out[key] = list(v) if isinstance(v, tuple) else v
        out["workloads"] = {w: m.to_dict() for w, m in self.workloads.items()}
        return {**out, **self.extra}

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> RunConfig:
        metas = cast(Mapping[str, Mapping[str, object]], d.get("workloads") or {})
        known = ("abis", "cflags", "cc", "provenance", "plan", "workloads")
        return RunConfig(
            workloads={w: WorkloadMeta.from_dict(w, m) for w, m in metas.items()},
            abis=tuple(cast(list[str], d.get("abis") or [])),
            cflags=tuple(cast(list[str], d.get("cflags") or [])),
            cc=None if d.get("cc") is None else str(d["cc"]),
            provenance=None if d.get("provenance") is None else str(d["provenance"]),
            plan=None if d.get("plan") is None else dict(cast(JSONDict, d["plan"])),
            extra={k: cast(JSON, v) for k, v in d.items() if k not in known},
            present=tuple(k for k in known[:5] if k in d))


@dataclass(frozen=True)
class Run:
    id: str
    started: str
    finished: str | None
    status: str  # running | complete | interrupted | failed | merged | abandoned (as read) ...
    tool_version: str
    config: RunConfig

    def to_dict(self) -> JSONDict:
        return {"id": self.id, "started": self.started, "finished": self.finished,
                "status": self.status, "tool_version": self.tool_version,
                "config": self.config.to_dict()}

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> Run:
        return Run(id=str(d["id"]), started=str(d["started"]),
                   finished=None if d.get("finished") is None else str(d["finished"]),
                   status=str(d["status"]), tool_version=str(d["tool_version"]),
                   config=RunConfig.from_dict(cast(Mapping[str, object], d["config"])))


# --------------------------------------------------------------------------- the run document


@dataclass(frozen=True)
class RunDoc:
    """One run, whole: what every stage after measuring reads."""

    run: Run
    host: HostContext
    samples: tuple[Sample, ...]
    artifacts: tuple[Artifact, ...] = ()
    statuses: tuple[TargetStatus, ...] = ()
    warnings: tuple[RunWarning, ...] = ()
    outcomes: dict[str, Outcome] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.run.id

    @property
    def workloads(self) -> dict[str, WorkloadMeta]:
        return self.run.config.workloads

    @functools.cached_property
    def _by_workload(self) -> dict[str, list[Sample]]:
        # Built once per document: the analysis asks for one workload's samples per metric and
        # pair, and a scan of every sample each time made a large run's report quadratic.
        out: dict[str, list[Sample]] = {}
        for s in self.samples:
            out.setdefault(s.workload, []).append(s)
        return out

    @functools.cached_property
    def _counted_by_workload(self) -> dict[str, list[Sample]]:
        return {w: [s for s in ss if s.counted] for w, ss in self._by_workload.items()}

    def counted(self, workload: str | None = None, target: str | None = None) -> list[Sample]:
        """The samples the statistics use, of one workload and target when given."""
        pool = (self._counted_by_workload.get(workload, []) if workload is not None
                else [s for s in self.samples if s.counted])
        return [s for s in pool if target is None or s.target == target]

    @staticmethod
    def value(sample: Sample, metric: str) -> float | None:
        return sample.value(metric)

    def paired(self, workload: str, metric: str, a: str, b: str) -> Paired:
        """Counted values of targets a and b of one workload, paired by round where possible."""
        counted = self.counted(workload)
        return pair_by_round([s for s in counted if s.target == a],
                             [s for s in counted if s.target == b], metric)

    def of_workload(self, workload: str) -> list[Sample]:
        return list(self._by_workload.get(workload, []))

    def instructions(self, workload: str) -> dict[str, int]:
        """Instructions counted per target (one run under a counter, when asked for)."""
        return {s.target: s.instructions for s in self._by_workload.get(workload, [])
                if s.kind == "counters"
                and s.instructions is not None}

    def counter_profiles(self, workload: str) -> dict[str, CounterProfile]:
        """What cachegrind counted per target (the last counted run of each)."""
        return {s.target: s.counters for s in self._by_workload.get(workload, [])
                if s.kind == "counters" and s.status == "ok"
                and s.counters is not None}

    def emulated_targets(self, workload: str) -> set[str]:
        """Targets of a workload whose samples ran under an emulator (their times measure the
        emulator, never the ABI on its own hardware)."""
        return {s.target for s in self._by_workload.get(workload, []) if s.emulated}

    def baseline_rss(self, workload: str) -> dict[str, list[float]]:
        """Per emulated target: the peak memory of its ABI's empty program under the same
        emulator (kind "baseline"), the emulator's own share of every sample's peak."""
        out: dict[str, list[float]] = {}
        for s in self._by_workload.get(workload, []):
            if s.kind == "baseline" and s.status == "ok":
                out.setdefault(s.target, []).append(float(s.max_rss_kb))
        return out

    def status_of(self, workload: str, target: str) -> TargetStatus | None:
        found = [x for x in self.statuses if x.workload == workload and x.target == target]
        return found[-1] if found else None

    def artifact_of(self, workload: str, target: str) -> Artifact | None:
        return next((a for a in self.artifacts if a.workload == workload and a.target == target),
                    None)

    def workload_warnings(self, workload: str) -> list[str]:
        return [w.message for w in self.warnings if w.workload == workload]

    def run_warnings(self) -> list[str]:
        return [w.message for w in self.warnings if not w.workload]

    def to_dict(self) -> JSONDict:
        """The versioned export document."""
        return {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "run": self.run.to_dict(),
            "host": self.host.to_dict(),
            "artifacts": [a.to_dict() for a in self.artifacts],
            "target_status": [s.to_dict() for s in self.statuses],
            "warnings": [w.to_dict() for w in self.warnings],
            "outcomes": {w: o.to_dict() for w, o in self.outcomes.items()},
            "samples": [s.to_dict() for s in self.samples],
        }

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> RunDoc:
        """A document that has passed validation (store/exchange.py) or came from the store."""
        run = Run.from_dict(cast(Mapping[str, object], d["run"]))
        return RunDoc(
            run=run,
            host=HostContext.from_dict(cast(Mapping[str, object], d.get("host") or {})),
            samples=tuple(Sample.from_dict(s) for s in
                          cast(list[Mapping[str, object]], d.get("samples") or [])),
            artifacts=tuple(Artifact.from_dict(a) for a in
                            cast(list[Mapping[str, object]], d.get("artifacts") or [])),
            statuses=tuple(TargetStatus(str(s["workload"]), str(s["target"]), str(s["state"]),
                                        None if s.get("reason") is None else str(s["reason"]))
                           for s in cast(list[Mapping[str, object]],
                                         d.get("target_status") or [])),
            warnings=tuple(RunWarning(str(w["message"]),
                                      None if w.get("workload") is None else str(w["workload"]),
                                      None if w.get("target") is None else str(w["target"]))
                           for w in cast(list[Mapping[str, object]], d.get("warnings") or [])),
            outcomes={str(k): Outcome(int(cast(int, o["rounds"])), str(o["stop_reason"]))
                      for k, o in cast(Mapping[str, Mapping[str, object]],
                                       d.get("outcomes") or {}).items()},
        )
