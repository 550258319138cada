"""What qualifies a workload's figures beyond its samples' values: how the rounds were taken and
what else ran meanwhile, the board's clock and temperature, and which Debian builds were
compared. Each is a line of a workload's provenance or a warning (analyse/results.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .. import stats
from ..probe import board
from ..records import Artifact, Sample


def sampling_conditions(counted: Sequence[Sample]) -> str:
    """How the counted rounds were taken and what else ran meanwhile: the designs, repeats,
    and the CPU time other processes (and the hypervisor) took per round."""
    timed = [s for s in counted if s.kind == "timed"]
    if not timed:
        return ""
    designs = sorted({s.design for s in timed})
    repeats = sorted({s.repeat for s in timed})
    rounds = {s.round for s in timed}
    foreign = [s.foreign_cpu_s for s in timed if s.foreign_cpu_s is not None]
    steal = [s.steal_s for s in timed if s.steal_s is not None]
    text = f"sampled {', '.join(designs)}"
    if repeats != [1]:
        text += f", {'/'.join(map(str, repeats))} runs a sample"
    if foreign:
        per_round = sum(foreign) / len(rounds)
        text += (f"; other processes used {per_round:.2f} CPU-s a round (up to "
                 f"{max(foreign):.2f} in one sample)")
    if steal and sum(steal) > 0:
        text += f"; the hypervisor stole {sum(steal) / len(rounds):.2f} CPU-s a round"
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
    """Per target, the samples after which the board's clock was lowered or the firmware said
    it throttled (a warning each), and the clock and temperature range over all of them."""
    warnings = []
    by_target: dict[str, list[Sample]] = {}
    for s in counted:
        by_target.setdefault(s.target, []).append(s)
    for label, mine in by_target.items():
        slow = [s for s in mine if (max_mhz and s.clock_mhz is not None
                                     and s.clock_mhz < SLOW_CLOCK * max_mhz)
                or (s.throttled is not None and board.throttle_words(s.throttled))]
        if not slow:
            continue
        clocks = [s.clock_mhz for s in slow if s.clock_mhz is not None and max_mhz
                  and s.clock_mhz < SLOW_CLOCK * max_mhz]
        shown = (f"{min(clocks) / 1000:.2g} GHz of {max_mhz / 1000:.2g} GHz" if clocks and max_mhz
                 else "the firmware reported it")
        words = sorted({w for s in slow if s.throttled for w in board.throttle_words(s.throttled)})
        warnings.append(f"{label}: throttled: {shown} during "
                        f"{stats.short(100 * len(slow) / len(mine), '.0f')}% of samples"
                        + (f" ({', '.join(words)})" if words else ""))
    clocks = [s.clock_mhz for s in counted if s.clock_mhz is not None]
    temps = [s.temp_c for s in counted if s.temp_c is not None]
    parts = []
    if clocks:
        parts.append(f"CPU clock {min(clocks):.0f}–{max(clocks):.0f} MHz"
                     + (f" (maximum {max_mhz:.0f})" if max_mhz else ""))
    if temps:
        parts.append(f"temperature {min(temps):.0f}–{max(temps):.0f} °C")
    return warnings, ("after each sample: " + ", ".join(parts)) if parts else None
