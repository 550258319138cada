"""What qualifies a workload's figures beyond its samples' values: how the rounds were taken and
what else ran meanwhile, the board's clock and temperature, and which Debian builds were
compared. Each is a line of a workload's provenance or a warning (analyse/results.py)."""

from __future__ import annotations

import itertools
import json
import math
import operator
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from .. import stats
from ..pairing import metric_column
from ..probe import board
from ..records import Artifact, Sample


class Counted(Protocol):
    """What the conditions read of a workload's counted samples: one field of one target's at
    a time (records.RunDoc, a columnar document, or `SampleList` over records)."""

    def counted_targets(self, workload: str) -> list[str]: ...

    def column(self, workload: str, target: str, name: str) -> Sequence[Any]: ...

    def metric_column(self, workload: str, target: str, metric: str,
                      ) -> Sequence[float | None]: ...


class SampleList:
    """A list of samples as `Counted` (its workload is ignored): the record form of every
    function here is this over the column form, so the two cannot differ."""

    def __init__(self, samples: Iterable[Sample]) -> None:
        self._by: dict[str, list[Sample]] = {}
        for s in samples:
            self._by.setdefault(s.target, []).append(s)

    def counted_targets(self, workload: str) -> list[str]:
        return list(self._by)

    def column(self, workload: str, target: str, name: str) -> list[Any]:
        return list(map(operator.attrgetter(name), self._by.get(target, [])))

    def metric_column(self, workload: str, target: str, metric: str) -> list[float | None]:
        return metric_column(self._by.get(target, []), metric)


def gathered(doc: Counted, workload: str, name: str) -> list[Any]:
    """One field of every counted sample of a workload, target after target."""
    return list(itertools.chain.from_iterable(
        doc.column(workload, t, name) for t in doc.counted_targets(workload)))


def sampling_conditions(counted: Sequence[Sample]) -> str:
    """`sampling_conditions_of` the timed samples of a list."""
    return sampling_conditions_of(SampleList(s for s in counted if s.kind == "timed"), "")


def sampling_conditions_of(doc: Counted, workload: str) -> str:
    """How the counted rounds were taken and what else ran meanwhile: the designs, repeats,
    and the CPU time other processes (and the hypervisor) took per round. (Sums by fsum: the
    same whatever order the samples are gathered in.)"""
    if not doc.counted_targets(workload):
        return ""
    designs = sorted(set(gathered(doc, workload, "design")))
    repeats = sorted(set(gathered(doc, workload, "repeat")))
    rounds = set(gathered(doc, workload, "round"))
    foreign = [v for v in gathered(doc, workload, "foreign_cpu_s") if v is not None]
    steal = [v for v in gathered(doc, workload, "steal_s") if v is not None]
    text = f"sampled {', '.join(designs)}"
    if repeats != [1]:
        text += f", {'/'.join(map(str, repeats))} runs a sample"
    if foreign:
        per_round = math.fsum(foreign) / len(rounds)
        text += (f"; other processes used {per_round:.2f} CPU-s a round (up to "
                 f"{max(foreign):.2f} in one sample)")
    if steal and math.fsum(steal) > 0:
        text += f"; the hypervisor stole {math.fsum(steal) / len(rounds):.2f} CPU-s a round"
    return text


def debian_versions(artifacts: Sequence[Artifact]) -> tuple[list[str], list[str]]:
    """What Debian's builds of one workload were: the package versions per target, and whether
    the closures were identical; allowed version skew comes back as warnings."""
    debs = [a for a in artifacts if a.debian_packages]
    if not debs:
        return [], []
    notes, warnings = [], []
    versions = {a.target: a.debian_packages or {} for a in debs}
    distinct = {json.dumps(v, sort_keys=True) for v in versions.values()}
    if len(distinct) == 1:
        pkgs = ", ".join(f"{k} {v}" for k, v in sorted((debs[0].debian_packages or {}).items()))
        notes.append(f"Debian packages: {pkgs} on {', '.join(versions)}")
    else:
        for target, v in versions.items():
            notes.append(f"Debian packages on {target}: "
                         + ", ".join(f"{k} {ver}" for k, ver in sorted(v.items())))
    closures = [a.debian_closure or {} for a in debs]
    names = set.intersection(*(set(c) for c in closures))
    differ = sorted(n for n in names if len({c[n] for c in closures}) > 1)
    sizes = "/".join(str(len(c)) for c in closures)
    notes.append(f"dependency closure: {sizes} packages, "
                 + ("every shared package at the same version" if not differ
                    else f"{len(differ)} at different versions: {', '.join(differ)}"))
    for skew in sorted({s for a in debs for s in a.version_skew}):
        warnings.append(f"version skew allowed (--allow-version-skew): {skew}")
    return notes, warnings


SLOW_CLOCK = 0.97  # a clock below this fraction of the maximum counts as lowered


def board_conditions(counted: Sequence[Sample], max_mhz: float | None,
                     ) -> tuple[list[str], str | None]:
    """`board_conditions_of` a list of counted samples."""
    return board_conditions_of(SampleList(counted), "", max_mhz)


def _slow(clock: float | None, throttled: int | None, max_mhz: float | None) -> bool:
    return bool((max_mhz and clock is not None and clock < SLOW_CLOCK * max_mhz)
                or (throttled is not None and board.throttle_words(throttled)))


def board_conditions_of(doc: Counted, workload: str, max_mhz: float | None,
                        ) -> tuple[list[str], str | None]:
    """Per target, the samples after which the board's clock was lowered or the firmware said
    it throttled (a warning each), and the clock and temperature range over all of them."""
    warnings = []
    for label in doc.counted_targets(workload):
        clocks_of = doc.column(workload, label, "clock_mhz")
        throttled_of = doc.column(workload, label, "throttled")
        if clocks_of.count(None) == len(clocks_of) and \
                throttled_of.count(None) == len(throttled_of):
            continue  # no board readings (most hosts): nothing was slow
        slow = [(c, t) for c, t in zip(clocks_of, throttled_of, strict=True)
                if _slow(c, t, max_mhz)]
        if not slow:
            continue
        clocks = [c for c, _ in slow if c is not None and max_mhz
                  and c < SLOW_CLOCK * max_mhz]
        shown = (f"{min(clocks) / 1000:.2g} GHz of {max_mhz / 1000:.2g} GHz" if clocks and max_mhz
                 else "the firmware reported it")
        words = sorted({w for _, t in slow if t for w in board.throttle_words(t)})
        warnings.append(f"{label}: throttled: {shown} during "
                        f"{stats.short(100 * len(slow) / len(clocks_of), '.0f')}% of samples"
                        + (f" ({', '.join(words)})" if words else ""))
    clocks = [c for c in gathered(doc, workload, "clock_mhz") if c is not None]
    temps = [c for c in gathered(doc, workload, "temp_c") if c is not None]
    parts = []
    if clocks:
        parts.append(f"CPU clock {min(clocks):.0f}–{max(clocks):.0f} MHz"
                     + (f" (maximum {max_mhz:.0f})" if max_mhz else ""))
    if temps:
        parts.append(f"temperature {min(temps):.0f}–{max(temps):.0f} °C")
    return warnings, ("after each sample: " + ", ".join(parts)) if parts else None
