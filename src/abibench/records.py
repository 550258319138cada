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
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .abi import Abi
from .codec import (
    JSON,
    QUANTITY,
    JSONDict,
    decoder,
    encode,
    json_schema,
    optional_of,
    rule,
    spec,
)
from .counts import (
    BRANCHES,
    D1_MISSES,
    INSTRUCTIONS,
    LL_MISSES,
    MISPREDICTS,
    PROGRAM_OBJECT,
    UNKNOWN_FUNCTION,
    CounterProfile,
    FunctionCount,
)
from .labels import (
    abi_of,
    emulated_words,
    family_of,
    is_reference,
    pick_reference,
    provenance_of,
    short_labels,
)
from .metrics import (
    _BUILTIN_FIELDS,
    BUILTIN_METRICS,
    BUILTINS,
    MEMORY_METRICS,
    MEMORY_NAMES,
    Better,
    Builtin,
    Metric,
    better_of,
    recorded_builtins,
)
from .pairing import Paired, Side, metric_column, only_numbers, pair_by_round, pair_columns
from .provenance import Artifact, HostContext, WorkloadMeta
from .sysrecords import SystemBoot, SystemConfig

# Re-exported: every stage names these from here (the records are split by concern into
# metrics, labels, counts and provenance; this module stays the one place to import from).
__all__ = [
    "BRANCHES",
    "BUILTINS",
    "BUILTIN_METRICS",
    "D1_MISSES",
    "INSTRUCTIONS",
    "JSON",
    "LL_MISSES",
    "MEMORY_METRICS",
    "MEMORY_NAMES",
    "MISPREDICTS",
    "PROGRAM_OBJECT",
    "UNKNOWN_FUNCTION",
    "Artifact",
    "Better",
    "Builtin",
    "CounterProfile",
    "FunctionCount",
    "HostContext",
    "JSONDict",
    "Metric",
    "Paired",
    "WorkloadMeta",
    "abi_of",
    "better_of",
    "emulated_words",
    "family_of",
    "is_reference",
    "metric_column",
    "pair_by_round",
    "pick_reference",
    "provenance_of",
    "recorded_builtins",
    "short_labels",
]

EXPORT_FORMAT = "abibench-run"
EXPORT_VERSION = 1


def always_measured(metric: str) -> bool:
    """Whether every sample holds this built-in metric: its Sample field cannot be None."""
    field_name = _BUILTIN_FIELDS.get(metric)
    return any(f.name == field_name and not optional_of(f.type)[0] for f in spec(Sample))


def measured_memory(samples: Iterable[Sample]) -> list[str]:
    """The built-in memory metrics of these samples, in registry order: one every sample has
    (its field cannot be None), and one only some measure when any of them did."""
    listed = list(samples)
    return [b.name for b in BUILTINS if b.memory
            and (always_measured(b.name) or any(s.value(b.name) is not None for s in listed))]


# --------------------------------------------------------------------------- samples

# How a round's samples are taken (run/designs.py says when each is used):
# sequential    one target after the other, the order alternating (A B, B A, ...)
# simultaneous  both targets at the same moment, each pinned to its own CPU, swapped each round
# covariate     sequential, with a fixed loop on another CPU measuring the machine's speed
# short         sequential, at the profile's shorter size, so a pair falls within the time the
#               machine stays at one speed
DESIGNS = ("sequential", "simultaneous", "covariate", "short")


_QUANTITY = QUANTITY


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
    system: SystemConfig | None = None  # a system run's (abibench system run): sysrecords.py

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
    system_boots: tuple[SystemBoot, ...] = ()  # a system run's boots, in the order booted

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

    @functools.cached_property
    def _counted_by_target(self) -> dict[tuple[str, str], list[Sample]]:
        # One pass: every per-target question of the analysis (values, pairs, medians) starts
        # from these lists, each sample in the order of the run.
        out: dict[tuple[str, str], list[Sample]] = {}
        for w, ss in self._counted_by_workload.items():
            for s in ss:
                out.setdefault((w, s.target), []).append(s)
        return out

    @functools.cached_property
    def _memo(self) -> dict[tuple[str, ...], Any]:
        # Answers about this document's counted samples, each computed once: the report,
        # explain and advise ask for the same values and pairs many times, and a document
        # (frozen, its samples frozen) never changes under them.
        return {}

    def counted(self, workload: str | None = None, target: str | None = None) -> list[Sample]:
        """The samples the statistics use, of one workload and target when given."""
        if workload is not None and target is not None:
            return list(self._counted_by_target.get((workload, target), ()))
        pool = (self._counted_by_workload.get(workload, []) if workload is not None
                else [s for s in self.samples if s.counted])
        return [s for s in pool if target is None or s.target == target]

    def n_counted(self) -> int:
        """How many samples the statistics use: `len(self.counted())`."""
        return sum(map(len, self._counted_by_workload.values()))

    def counted_targets(self, workload: str) -> list[str]:
        """The targets of a workload with counted samples, in the order first seen."""
        return [t for w, t in self._counted_by_target if w == workload]

    def column(self, workload: str, target: str, name: str) -> tuple[Any, ...]:
        """`tuple(getattr(s, name) for s in self.counted(workload, target))`: one field of a
        target's counted samples, in their order, computed once per document. Every per-sample
        question of the summary views is asked through this (a columnar document, e.g.
        store/columns.ColumnDoc, answers it without a Sample)."""
        key = ("column", workload, target, name)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = tuple(map(operator.attrgetter(name),
                                              self._counted_by_target.get((workload, target), [])))
        out: tuple[Any, ...] = got
        return out

    def metric_column(self, workload: str, target: str, metric: str,
                      ) -> Sequence[float | None]:
        """`[s.value(metric) for s in self.counted(workload, target)]`, from the columns
        (computed once per document)."""
        key = ("metric", workload, target, metric)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = tuple(self._metric_column(workload, target, metric))
        out: tuple[float | None, ...] = got
        return out

    def _metric_column(self, workload: str, target: str, metric: str) -> list[float | None]:
        name = _BUILTIN_FIELDS.get(metric)
        if name is None:
            return list(map(operator.methodcaller("get", metric),
                            self.column(workload, target, "metrics")))
        raw = self.column(workload, target, name)
        try:
            return list(map(float, raw))
        except TypeError:  # a None among them
            return [None if v is None else float(v) for v in raw]

    def values(self, workload: str, target: str, metric: str) -> list[float]:
        """The values of a metric in the counted samples of one workload and target, in their
        order; a sample without one is left out (a non-finite value is kept: the caller
        decides). Equal to `[v for s in counted(workload, target) if (v := s.value(metric))
        is not None]`, computed once per document."""
        key = ("values", workload, target, metric)
        got = self._memo.get(key)
        if got is None:
            column = self.metric_column(workload, target, metric)
            got = self._memo[key] = tuple(column) if only_numbers(column) else tuple(
                v for v in column if v is not None)
        return list(got)

    def measured_memory(self, workload: str) -> list[str]:
        """`measured_memory(self.counted(workload))`, from the per-target values."""
        targets = self.counted_targets(workload)
        return [b.name for b in BUILTINS if b.memory and (
            always_measured(b.name) or any(self.values(workload, t, b.name) for t in targets))]

    @staticmethod
    def value(sample: Sample, metric: str) -> float | None:
        return sample.value(metric)

    def side(self, workload: str, target: str, metric: str) -> Side:
        """What pairing reads of a target's counted samples (pairing.Side), from the columns."""
        return Side(self.column(workload, target, "round"),
                    self.metric_column(workload, target, metric),
                    self.column(workload, target, "design"),
                    self.column(workload, target, "covariate"))

    def paired(self, workload: str, metric: str, a: str, b: str) -> Paired:
        """Counted values of targets a and b of one workload, paired by round where possible
        (`pair_by_round` of their counted samples; computed once per document: a Paired is
        frozen)."""
        key = ("paired", workload, metric, a, b)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = pair_columns(self.side(workload, a, metric),
                                                 self.side(workload, b, metric), metric)
        out: Paired = got
        return out

    def of_workload(self, workload: str) -> list[Sample]:
        return list(self._by_workload.get(workload, []))

    def others(self, workload: str) -> list[Sample]:
        """The samples of a workload the statistics do not use (warm-ups, failures, counting
        runs, the emulator's baselines, discarded ones), in their order: few beside the
        counted ones, so every question about them is asked of records."""
        got = self._memo.get(("others", workload))
        if got is None:
            got = self._memo[("others", workload)] = [
                s for s in self._by_workload.get(workload, []) if not s.counted]
        return list(got)

    def n_warmup(self) -> int:
        """`sum(s.warmup for s in self.samples)`."""
        return sum(map(operator.attrgetter("warmup"), self.samples))

    def n_failed(self) -> int:
        """How many samples did not end "ok"."""
        return len(self.samples) - list(map(operator.attrgetter("status"), self.samples)).count(
            "ok")

    def checks(self, workload: str) -> tuple[dict[str, set[str]], bool]:
        """What the output check compares (analyse/results.validate_outputs): each target's
        check values of its ok, not discarded samples (targets in the order first seen), and
        whether any sample of the workload ended ok."""
        checks: dict[str, set[str]] = {}
        samples = self._by_workload.get(workload, [])
        for s in samples:
            if s.status == "ok" and s.check is not None and s.discarded is None:
                checks.setdefault(s.target, set()).add(s.check)
        return checks, any(s.status == "ok" for s in samples)

    def instructions(self, workload: str) -> dict[str, int]:
        """Instructions counted per target (one run under a counter, when asked for)."""
        return {s.target: s.instructions for s in self.others(workload)
                if s.kind == "counters"
                and s.instructions is not None}

    def counter_profiles(self, workload: str) -> dict[str, CounterProfile]:
        """What cachegrind counted per target (the last counted run of each)."""
        return {s.target: s.counters for s in self.others(workload)
                if s.kind == "counters" and s.status == "ok"
                and s.counters is not None}

    def emulated_targets(self, workload: str) -> set[str]:
        """Targets of a workload whose samples ran under an emulator (their times measure the
        emulator, never the ABI on its own hardware)."""
        return {s.target for s in self.others(workload) if s.emulated} | {
            t for t in self.counted_targets(workload) if any(self.column(workload, t, "emulated"))}

    def baseline_rss(self, workload: str) -> dict[str, list[float]]:
        """Per emulated target: the peak memory of its ABI's empty program under the same
        emulator (kind "baseline"), the emulator's own share of every sample's peak."""
        out: dict[str, list[float]] = {}
        for s in self.others(workload):
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
