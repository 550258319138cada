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
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from .abi import ABIS, FAMILY_CPU, REFERENCE_ABIS, Abi
from .codec import (
    JSON,
    Invalid,
    JSONDict,
    decoder,
    encode,
    json_schema,
    optional_of,
    parse_time,
    rule,
    spec,
)

__all__ = ["JSON", "JSONDict"]  # re-exported: every stage names them from here

Better = Literal["higher", "lower"]

EXPORT_FORMAT = "abibench-run"
EXPORT_VERSION = 1


def better_of(value: object) -> Better:
    return "higher" if value == "higher" else "lower"


@dataclass(frozen=True)
class Metric:
    """A quantity a workload reports: its unit and which direction is better."""

    name: str = field(metadata=rule(key=True, id="metric"))  # its key in `metrics`
    unit: str
    better: Better

    def to_dict(self) -> JSONDict:
        out: JSONDict = encode(self)
        return out


@dataclass(frozen=True)
class Builtin:
    """A metric abibench measures itself for every sample, whatever the program prints."""

    metric: Metric
    field: str  # the Sample field that holds it
    # How reports name it when it is a quantity of memory, not of speed (a covariate of the
    # machine's speed says nothing of it); "" for a time or a count.
    memory: str = ""
    # Recorded among a workload's metrics by every run (a workload setting it needs, as
    # (attribute, value), when only some workloads measure it).
    recorded: bool = False
    needs: tuple[str, str] | None = None

    @property
    def name(self) -> str:
        return self.metric.name


# The one registry of built-in metrics: every list of them (the run's recorded metrics, the
# memory comparisons and panels, what an imported metric may not redefine) is derived from it.
BUILTINS: tuple[Builtin, ...] = (
    Builtin(Metric("wall", "s", "lower"), "wall_s", recorded=True),
    Builtin(Metric("user", "s", "lower"), "user_s"),
    Builtin(Metric("sys", "s", "lower"), "sys_s"),
    Builtin(Metric("max_rss", "KiB", "lower"), "max_rss_kb", memory="peak RSS", recorded=True),
    # [run] memory = "tree": the whole process tree's peak (a browser's dozen processes)
    Builtin(Metric("tree_peak_rss", "KiB", "lower"), "tree_peak_rss_kb",
            memory="tree peak RSS", recorded=True, needs=("memory", "tree")),
    Builtin(Metric("minflt", "faults", "lower"), "minflt"),
    Builtin(Metric("majflt", "faults", "lower"), "majflt"),
)
BUILTIN_METRICS: dict[str, Metric] = {b.name: b.metric for b in BUILTINS}
_BUILTIN_FIELDS = {b.name: b.field for b in BUILTINS}
MEMORY_METRICS = tuple(b.name for b in BUILTINS if b.memory)
# How reports name the memory abibench measures itself.
MEMORY_NAMES = {b.name: b.memory for b in BUILTINS if b.memory}


def recorded_builtins(setting: Any) -> list[str]:
    """The built-in metrics a run records for a workload (`setting`: its profile, whose
    attributes say what it measures)."""
    return [b.name for b in BUILTINS if b.recorded
            and (b.needs is None or getattr(setting, b.needs[0], None) == b.needs[1])]


def measured_memory(samples: Iterable[Sample]) -> list[str]:
    """The built-in memory metrics of these samples, in registry order: one every sample has
    (its field cannot be None), and one only some measure when any of them did."""
    listed = list(samples)
    always = {f.name for f in spec(Sample) if not optional_of(f.type)[0]}
    return [b.name for b in BUILTINS if b.memory
            and (b.field in always or any(s.value(b.name) is not None for s in listed))]

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

    # written as a [name, [counts]] pair
    AS_ARRAY: ClassVar[bool] = True

    name: str
    counts: tuple[int, ...] = field(metadata=rule(min=0))


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
    totals: tuple[int, ...] = field(metadata=rule(min=0))
    functions: tuple[FunctionCount, ...] = ()
    attempts: tuple[int, ...] = field(default=(), metadata=rule(min=0))
    agreed: bool = True
    simulation: str = field(default="insn", metadata=rule(choices=("insn", "cache")))
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
        out: JSONDict = encode(self)
        return out

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> CounterProfile:
        out: CounterProfile = decoder(CounterProfile, strict=False)(d)
        return out


# --------------------------------------------------------------------------- samples

# How a round's samples are taken (run/designs.py says when each is used):
# sequential    one target after the other, the order alternating (A B, B A, ...)
# simultaneous  both targets at the same moment, each pinned to its own CPU, swapped each round
# covariate     sequential, with a fixed loop on another CPU measuring the machine's speed
# short         sequential, at the profile's shorter size, so a pair falls within the time the
#               machine stays at one speed
DESIGNS = ("sequential", "simultaneous", "covariate", "short")


_QUANTITY = rule(min=0)  # a time, a size, a count: never below 0


@dataclass(frozen=True, slots=True)  # slots: a run of 10^6 samples holds 1 GB less
class Sample:
    """One execution of one target of one workload: what was measured and how.

    A new field here is all a new per-sample quantity needs: the export format, the import
    validator, docs/schema.json and the store's column (added to an existing database when
    it opens) are derived from it. Give it a default: older files and databases lack it.
    """

    run_id: str = field(metadata=rule(absent=""))
    workload: str = field(metadata=rule(id="workload"))
    target: str = field(metadata=rule(id="target"))
    round: int = field(metadata=_QUANTITY)  # 0 is the warm-up round
    position: int = field(metadata=_QUANTITY)  # order within the round (interleaving shows)
    warmup: bool
    status: str  # ok | failed | timeout | interrupted
    exit_code: int
    wall_s: float = field(metadata=_QUANTITY)
    user_s: float = field(metadata=_QUANTITY)
    sys_s: float = field(metadata=_QUANTITY)
    max_rss_kb: int = field(metadata=_QUANTITY)
    stdout_digest: str
    # the validation value compared across targets (CHECK is an SQL keyword: its column is not)
    check: str | None = field(metadata=rule(column="check_value"))
    metrics: dict[str, float] = field(default_factory=dict, metadata=rule(keys="metric"))
    error: str | None = None
    started_at: str = field(default="", metadata=rule(time=True, blank=True))
    env_pad: int = 0  # bytes of environment padding (stack alignment is randomised per sample)
    instructions: int | None = field(default=None, metadata=_QUANTITY)
    # timed | counters (one run under a counter: its times mean nothing) | baseline (the ABI's
    # empty program under the same emulator: its peak memory is the emulator's own)
    kind: str = field(default="timed",
                      metadata=rule(choices=("timed", "counters", "baseline")))
    # Why a stored sample no longer counts (e.g. its round was cut short and measured again
    # after `run --resume`); the sample itself is kept as it was measured.
    discarded: str | None = None
    # Page faults of the process, per run (rusage; None in runs stored before they were kept).
    minflt: int | None = field(default=None, metadata=_QUANTITY)
    majflt: int | None = field(default=None, metadata=_QUANTITY)
    # kind "counters": what cachegrind counted (None in a timed sample or an older run).
    counters: CounterProfile | None = None
    # How the sample was measured (run/designs.py): the design of its round, the CPU it was
    # pinned to, and how many back-to-back runs its times are the mean of.
    design: str = field(default="sequential", metadata=rule(choices=DESIGNS))
    cpu: int | None = field(default=None, metadata=_QUANTITY)
    repeat: int = field(default=1, metadata=rule(min=1))
    # The machine around the sample: CPU time other processes used while it ran, time the
    # hypervisor stole, and the covariate loop's speed on another CPU (iterations per second).
    foreign_cpu_s: float | None = field(default=None, metadata=_QUANTITY)
    steal_s: float | None = field(default=None, metadata=_QUANTITY)
    covariate: float | None = field(default=None, metadata=_QUANTITY)
    # [run] memory = "tree": the whole process tree's peak memory (KiB) and how it was measured
    # (probe/memory.py: cgroup-v2, cgroup-v1, sampled); None for other workloads
    tree_peak_rss_kb: int | None = field(default=None, metadata=_QUANTITY)
    tree_memory: str | None = None
    # Run under an emulator (qemu-user): its times measure the emulator, never the ABI on its
    # own hardware, and its peak memory includes the emulator's.
    emulated: bool = False
    # The board right after the sample (probe/board.py), where the kernel shows it: the
    # lowest CPU clock, the hottest thermal zone, the firmware's throttling bits.
    clock_mhz: float | None = field(default=None, metadata=_QUANTITY)
    temp_c: float | None = None
    throttled: int | None = field(default=None, metadata=_QUANTITY)

    @property
    def key(self) -> tuple[str, str, int, int]:
        """A target's place in a round: no two timed samples of a run that still count share
        it (a discarded sample's round is measured again under the same key; a counted run
        and the emulator's baselines are taken beside the timed sample of their place)."""
        return (self.workload, self.target, self.round, self.position)

    @property
    def counted(self) -> bool:
        """Whether the statistics use this sample: the one rule, applied to records only."""
        return (self.status == "ok" and not self.warmup and self.kind == "timed"
                and self.discarded is None)

    def value(self, metric: str) -> float | None:
        """The sample's value of a metric; None when the sample has none."""
        name = _BUILTIN_FIELDS.get(metric)
        if name is None:
            return self.metrics.get(metric)
        v = getattr(self, name)
        return None if v is None else float(v)

    def to_dict(self) -> JSONDict:
        out: JSONDict = encode(self)
        return out

    @staticmethod
    def from_dict(d: Mapping[str, object], run_id: str | None = None) -> Sample:
        s: Sample = decoder(Sample, strict=False)(d)
        return s if run_id is None else replace(s, run_id=run_id)


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

    workload: str = field(metadata=rule(id="workload"))
    target: str = field(metadata=rule(id="target"))
    state: str  # ok | failed | timeout | not built | not run | interrupted
    reason: str | None

    def to_dict(self) -> JSONDict:
        out: JSONDict = encode(self)
        return out


@dataclass(frozen=True)
class RunWarning:
    message: str
    workload: str | None = field(default=None, metadata=rule(id="workload"))
    target: str | None = field(default=None, metadata=rule(id="target"))

    def to_dict(self) -> JSONDict:
        out: JSONDict = encode(self)
        return out


@dataclass(frozen=True)
class Outcome:
    """How a workload's schedule ended: counted rounds and why it stopped."""

    rounds: int = field(metadata=_QUANTITY)
    stop_reason: str

    def to_dict(self) -> JSONDict:
        out: JSONDict = encode(self)
        return out

    def text(self) -> str:
        return f"{self.stop_reason} ({self.rounds} counted rounds)"


_SEQ_FIELDS = ("files", "cflags", "abi_flags", "commands", "data", "version_skew")


@dataclass(frozen=True)
class Artifact:
    """One workload's program for one target: how it was obtained, and what it is."""

    workload: str = field(metadata=rule(id="workload"))
    abi: str = ""  # an older export lacks it: then it is the ABI of `target`
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
    build_seconds: float | None = field(default=None, metadata=_QUANTITY)
    sizes: dict[str, dict[str, int | None]] = field(default_factory=dict, metadata=_QUANTITY)
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
    target: str = field(default="", metadata=rule(id="target", required=True))
    # fields an imported file carries that this version does not know: shown, never used
    extra: JSONDict = field(default_factory=dict, metadata=rule(extra=True))

    def __post_init__(self) -> None:
        if not self.abi:
            object.__setattr__(self, "abi", abi_of(self.target))

    @property
    def main_file(self) -> str | None:
        return self.files[0] if self.files else None

    def main_sizes(self) -> dict[str, int | None]:
        return self.sizes.get(self.files[0], {}) if self.files else {}

    def info_dict(self) -> JSONDict:
        """Every field but target and extra, as the build cache and the store keep it."""
        out: JSONDict = {k: v for k, v in encode(replace(self, extra={})).items()
                         if k != "target"}
        return out

    def to_dict(self) -> JSONDict:
        """The export form: workload, target and cached first, then the rest, then extras."""
        info = self.info_dict()
        head: JSONDict = {"workload": self.workload, "target": self.target,
                          "cached": self.cached}
        return {**head, **{k: v for k, v in info.items() if k not in head}, **self.extra}

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> Artifact:
        out: Artifact = decoder(Artifact, strict=False)(d)
        return out


# --------------------------------------------------------------------------- host, run


_HOST_FIELDS = ("hostname", "cpu_model", "cpus_online", "machine", "kernel_release",
                "kernel_version", "kernel_bits", "kernel_x32", "governor", "turbo",
                "virtualization", "mem_total_kb", "load_average", "libc", "compilers", "python",
                "os_release")


@dataclass(frozen=True)
class HostContext:
    """Where a result was measured. Fields an older or newer abibench wrote go to ``extra``."""

    hostname: str | None = None
    cpu_model: str | None = None
    cpus_online: int | None = field(default=None, metadata=_QUANTITY)
    machine: str | None = None
    kernel_release: str | None = None
    kernel_version: str | None = None
    kernel_bits: int | None = None
    kernel_x32: str | None = None
    governor: str | None = None
    turbo: str | None = None
    virtualization: str | None = None
    mem_total_kb: int | None = field(default=None, metadata=_QUANTITY)
    load_average: tuple[float, ...] = field(default=(), metadata=rule(null_default=True))
    libc: str | None = None
    compilers: dict[str, str] = field(default_factory=dict, metadata=rule(null_default=True))
    python: str | None = None
    os_release: str | None = None
    # what a run adds: the ABI probe and the C library of every ABI
    extra: JSONDict = field(default_factory=dict, metadata=rule(extra=True))
    # which known fields the source had (only those are written back)
    present: tuple[str, ...] = field(default=_HOST_FIELDS, metadata=rule(present=True))

    def to_dict(self) -> JSONDict:
        out: JSONDict = encode(self)
        return out

    def get(self, key: str) -> JSON:
        """A field by name, extras included (None when absent)."""
        if key in _HOST_FIELDS:
            v = getattr(self, key)
            value: JSON = list(v) if isinstance(v, tuple) else v
            return value
        return self.extra.get(key)

    def with_extra(self, **values: JSON) -> HostContext:
        return replace(self, extra={**self.extra, **values})

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> HostContext:
        out: HostContext = decoder(HostContext, strict=False)(d)
        return out


@dataclass(frozen=True)
class WorkloadMeta:
    """What a run recorded about one workload: its metrics, targets and parameters."""

    id: str = field(metadata=rule(key=True, id="workload"))  # its key in `workloads`
    primary: str
    targets: tuple[str, ...] = field(metadata=rule(id="target"))
    metrics: dict[str, Metric]
    title: str = ""
    params: JSONDict = field(default_factory=dict)
    seeds: tuple[str, ...] = ()
    path: str | None = None
    validates: bool | None = None  # whether the profile compares outputs (None: not recorded)
    # validate = "none: REASON" of the profile: why its outputs are not compared
    no_validation: str | None = None
    # inputs, and what newer versions add
    extra: JSONDict = field(default_factory=dict, metadata=rule(extra=True))

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
        out: JSONDict = encode(self)
        return out

    def with_targets(self, targets: Sequence[str]) -> WorkloadMeta:
        return replace(self, targets=tuple(targets))

    @staticmethod
    def from_dict(wid: str, d: Mapping[str, object]) -> WorkloadMeta:
        return replace(_WORKLOAD(d), id=wid)


@dataclass(frozen=True)
class RunConfig:
    """What a run was asked to do."""

    workloads: dict[str, WorkloadMeta] = field(default_factory=dict)
    abis: tuple[str, ...] = field(default=(), metadata=rule(id="abi"))
    cflags: tuple[str, ...] = ()
    cc: str | None = None
    provenance: str | None = None
    plan: JSONDict | None = None
    # e.g. "imported": where a file came from
    extra: JSONDict = field(default_factory=dict, metadata=rule(extra=True))
    present: tuple[str, ...] = field(default=("abis", "cflags", "cc", "provenance", "plan"),
                                     metadata=rule(present=True))

    def to_dict(self) -> JSONDict:
        out: JSONDict = encode(self)
        return out

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> RunConfig:
        out: RunConfig = decoder(RunConfig, strict=False)(d)
        return out


@dataclass(frozen=True)
class Run:
    """A run: its id, when it started and finished, its status and what it was asked."""

    id: str = field(metadata=rule(id="run"))
    started: str = field(metadata=rule(time=True))
    finished: str | None = field(metadata=rule(time=True))
    status: str  # running | complete | interrupted | failed | merged | abandoned (as read) ...
    tool_version: str
    config: RunConfig

    def to_dict(self) -> JSONDict:
        out: JSONDict = encode(self)
        return out

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> Run:
        out: Run = decoder(Run, strict=False)(d)
        return out


# --------------------------------------------------------------------------- the run document


@dataclass(frozen=True)
class RunDoc:
    """One run, whole: what every stage after measuring reads."""

    run: Run
    host: HostContext
    samples: tuple[Sample, ...]
    artifacts: tuple[Artifact, ...] = ()
    statuses: tuple[TargetStatus, ...] = field(default=(), metadata=rule(name="target_status"))
    warnings: tuple[RunWarning, ...] = ()
    outcomes: dict[str, Outcome] = field(default_factory=dict, metadata=rule(keys="workload"))

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
        out: JSONDict = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, **encode(self)}
        return out

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> RunDoc:
        """A document that came from the store or has passed validation (store/exchange.py)."""
        out: RunDoc = decoder(RunDoc, strict=False)(d)
        return out


@dataclass(frozen=True)
class ResultSet:
    """A run document named on the command line, and where it came from."""

    doc: RunDoc
    source: str  # "run ID" (database) or a file path
    tag: str = ""  # set when several are merged (analyse/merge.py)


def _workload_meta(d: Mapping[str, object]) -> WorkloadMeta:
    out: WorkloadMeta = decoder(WorkloadMeta, strict=False)(d)
    return out


_WORKLOAD = _workload_meta


# --------------------------------------------------------------------------- what a run can produce


def check_document(doc: RunDoc) -> None:
    """What a run guarantees beyond each field's type and rule (which the codec checks):
    raises `codec.Invalid` at the `$.path` of the first field that breaks it.

    Samples belong to declared workloads and targets; no two timed samples that count take
    the same place in a round; a metric named like a built-in one means exactly it; the
    primary metric is in every counted sample; a run ends after it starts.
    """
    run = doc.run
    if run.finished is not None and parse_time(run.finished) < parse_time(run.started):
        raise Invalid(f"finished {run.finished!r:.40} is before started {run.started!r:.40}"
                      ).at(".finished").at(".run")
    for wid, meta in doc.workloads.items():
        at = f".run.config.workloads.{wid}"
        for name, m in meta.metrics.items():
            _check_not_shadowing(name, m, f"{at}.metrics.{name}")
        if meta.primary not in meta.metrics and meta.primary not in BUILTIN_METRICS:
            raise Invalid(f"metric {meta.primary!r:.40} is not declared in its metrics"
                          ).at(f"{at}.primary")
    places: set[tuple[str, str, int, int]] = set()
    for i, s in enumerate(doc.samples):
        _check_sample(doc, s, f".samples[{i}]")
        if s.kind == "timed" and s.discarded is None:
            if s.key in places:
                raise Invalid(f"a second timed sample of {s.target!r:.40} in round {s.round} at "
                              f"position {s.position} of workload {s.workload!r:.40}",
                              "export the run again; an edited file must keep one sample per "
                              "target, round and position").at(f".samples[{i}].position")
            places.add(s.key)
    for i, a in enumerate(doc.artifacts):
        if a.sizes and not a.files:
            raise Invalid("is missing or empty although sizes are given"
                          ).at(f".artifacts[{i}].files")


def _check_not_shadowing(name: str, m: Metric, at: str) -> None:
    """A workload's metric named like a built-in one is that one: never another unit or
    direction (a `wall` where higher is better would invert every verdict)."""
    own = BUILTIN_METRICS.get(name)
    if own is not None and (m.unit, m.better) != (own.unit, own.better):
        raise Invalid(f"metric {name!r} is measured by abibench itself ({own.unit}, "
                      f"{own.better} is better) and cannot be redefined",
                      "rename the workload's metric").at(at)


def _check_sample(doc: RunDoc, s: Sample, at: str) -> None:
    meta = doc.workloads.get(s.workload)
    if meta is None:
        raise Invalid(f"workload {s.workload!r:.40} is not in run.config.workloads"
                      ).at(f"{at}.workload")
    if s.target not in meta.targets:
        raise Invalid(f"target {s.target!r:.40} is not one of the workload's targets"
                      ).at(f"{at}.target")
    for name in s.metrics:
        if name in BUILTIN_METRICS:
            raise Invalid(f"metric {name!r} is measured by abibench itself: a program's "
                          "metrics cannot hold it", "rename the metric").at(f"{at}.metrics.{name}")
    if s.counters is not None:
        n = len(s.counters.events)
        if len(s.counters.totals) != n:
            raise Invalid(f"expected one total per event ({n}), found "
                          f"{len(s.counters.totals)}").at(f"{at}.counters.totals")
        for j, fn in enumerate(s.counters.functions):
            if len(fn.counts) > n:
                raise Invalid(f"expected at most one count per event ({n})"
                              ).at(f"{at}.counters.functions[{j}]")
    if s.counted and s.value(meta.primary) is None:
        raise Invalid(f"the primary metric {meta.primary!r:.40} is missing from a counted "
                      "sample").at(f"{at}.metrics")


def export_schema() -> JSONDict:
    """The JSON Schema of the export document, derived from the records (docs/schema.json,
    written by `python -m abibench.records > docs/schema.json`; a test keeps it current)."""
    head: JSONDict = {"format": {"const": EXPORT_FORMAT}, "version": {"const": EXPORT_VERSION}}
    out: JSONDict = {"$id": "abibench-run", "title": "An abibench run document",
                     **json_schema(RunDoc, head)}
    return out


if __name__ == "__main__":
    import json
    import sys

    sys.stdout.write(json.dumps(export_schema(), indent=1, ensure_ascii=False) + "\n")
