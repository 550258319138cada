"""The registry of the metrics abibench measures itself, and what a metric is.

Every list of built-in metrics (the run's recorded metrics, the memory comparisons and panels,
the memory columns of every report format, what an imported metric may not redefine) is
derived from :data:`BUILTINS`; :mod:`abibench.records` re-exports every name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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
# memory comparisons, panels and columns of every report format, what an imported metric may
# not redefine) is derived from it. The derived views are filled in place (never rebound), so
# a module that imported one sees a metric registered later (`extended`).
BUILTINS: list[Builtin] = [
    Builtin(Metric("wall", "s", "lower"), "wall_s", recorded=True),
    Builtin(Metric("user", "s", "lower"), "user_s"),
    Builtin(Metric("sys", "s", "lower"), "sys_s"),
    Builtin(Metric("max_rss", "KiB", "lower"), "max_rss_kb", memory="peak RSS", recorded=True),
    # [run] memory = "tree": the whole process tree's peak (a browser's dozen processes)
    Builtin(Metric("tree_peak_rss", "KiB", "lower"), "tree_peak_rss_kb",
            memory="tree peak RSS", recorded=True, needs=("memory", "tree")),
    Builtin(Metric("minflt", "faults", "lower"), "minflt"),
    Builtin(Metric("majflt", "faults", "lower"), "majflt"),
]
BUILTIN_METRICS: dict[str, Metric] = {}
_BUILTIN_FIELDS: dict[str, str] = {}
# How reports name the memory abibench measures itself.
MEMORY_NAMES: dict[str, str] = {}
MEMORY_METRICS = MEMORY_NAMES.keys()  # a live view, in registry order


def _derive() -> None:
    """Every view of the registry rebuilt in place from BUILTINS."""
    metrics = {b.name: b.metric for b in BUILTINS}
    fields = {b.name: b.field for b in BUILTINS}
    memory = {b.name: b.memory for b in BUILTINS if b.memory}
    BUILTIN_METRICS.clear()
    BUILTIN_METRICS.update(metrics)
    _BUILTIN_FIELDS.clear()
    _BUILTIN_FIELDS.update(fields)
    MEMORY_NAMES.clear()
    MEMORY_NAMES.update(memory)


_derive()


@contextmanager
def extended(*extra: Builtin) -> Iterator[None]:
    """The registry with these metrics too while the block runs, every view derived from it
    included: how a new built-in quantity (a field of a Sample subclass) is tried through
    the analysis and every report format before it earns a row in BUILTINS."""
    before = list(BUILTINS)
    BUILTINS.extend(extra)
    _derive()
    try:
        yield
    finally:
        BUILTINS[:] = before
        _derive()


def recorded_builtins(setting: Any) -> list[str]:
    """The built-in metrics a run records for a workload (`setting`: its profile, whose
    attributes say what it measures)."""
    return [b.name for b in BUILTINS if b.recorded
            and (b.needs is None or getattr(setting, b.needs[0], None) == b.needs[1])]
