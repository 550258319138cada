"""The registry of the metrics abibench measures itself, and what a metric is.

Every list of built-in metrics (the run's recorded metrics, the memory comparisons and panels,
the memory columns of every report format, what an imported metric may not redefine) is
derived from :data:`BUILTINS`; :mod:`abibench.records` re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .codec import JSONDict, encode, rule

Better = Literal["higher", "lower"]


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
