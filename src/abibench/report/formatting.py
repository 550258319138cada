"""Number formatting shared by every report.

Nothing here raises or prints "inf" or "nan" where a number belongs: a value that is not finite
is "-", and a huge one (an imported 1e308, a size of 2**62) is printed in exponent form or with
a larger unit, never as hundreds of digits.
"""

from __future__ import annotations

import math

from ..analyse import footprint, xbench
from ..stats import short

number = short  # format(value, spec); "-" when not finite; exponent form when huge

# How every format explains the difference it shows beside a median (stats.difference).
DIFFERENCE_NOTE = ("how it differs from the reference, with its 95% CI, said as the winner's "
                   "advantage relative to the loser, the figure its verdict gives: a percentage "
                   "below a factor of 2, a multiple (N×) from 2 on")
CALIBRATION_NOTE = ("What abibench measured about this machine's noise before it sampled, and "
                    "the sampling design it chose for each workload from it, with the reason.")


def si(value: float | None, unit: str = "") -> str:
    """Three significant digits with an SI prefix: 12.3M lookups/s, 1.52 s, 845 ms."""
    if value is None or not math.isfinite(value):
        return "-"
    if unit == "s":
        if abs(value) < 1e-3:
            return f"{value * 1e6:.3g} µs"
        if abs(value) < 1:
            return f"{value * 1e3:.3g} ms"
        return f"{value:.3g} s"
    prefixes = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
    for scale, p in prefixes:
        if abs(value) >= scale:
            return f"{value / scale:.3g}{p} {unit}".rstrip()
    return f"{value:.3g} {unit}".rstrip()


_BINARY = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")


def _binary(value: float, digits: int = 0) -> str:
    """value KiB in the largest unit it reaches: "1.5 MiB", "4.00 EiB"; one more decimal per
    unit up to two, starting from `digits`."""
    i = 0
    scaled = float(value)
    while abs(scaled) >= 1024 and i < len(_BINARY) - 1:
        scaled /= 1024
        i += 1
    return f"{number(scaled, f'.{min(digits + i, 2)}f')} {_BINARY[i]}"


def kib(value: float | None) -> str:
    """A quantity of KiB (peak RSS): "845 KiB", "1.5 MiB", "2.00 GiB"."""
    if value is None or not math.isfinite(value):
        return "-"
    return _binary(value)


def size(value: int | None) -> str:
    """A quantity of bytes (file sizes): "512 B", "1.5 KiB", "2.00 MiB"."""
    if value is None:
        return "-"
    if abs(value) < 1024:
        return f"{value} B"
    return _binary(value / 1024, digits=1)


def size_change(subject: str, percent: float, other: str) -> str:
    """How much larger or smaller one file is than another, the sign said by the word: "x86_64
    6.9% larger than i386", "x86_64 16.0% smaller than i386" (never "-16.0% larger")."""
    if not math.isfinite(percent):
        return f"{subject} against {other}: no comparable size"
    shown = number(abs(percent), ".1f")
    if shown == number(0.0, ".1f"):
        return f"{subject} the same size as {other}"
    return f"{subject} {shown}% {'larger' if percent > 0 else 'smaller'} than {other}"


def with_ci(value: float, low: float, high: float, spec: str, unit: str = "",
            no_ci: str = "") -> str:
    """A number and its CI in one format: "1.234 [1.200, 1.270]"; `no_ci` marks a missing CI."""
    if not math.isfinite(value):
        return "-"
    text = f"{number(value, spec)}{unit}"
    if not (math.isfinite(low) and math.isfinite(high)):
        return text + no_ci
    return f"{text} [{number(low, spec)}{unit}, {number(high, spec)}{unit}]"


def ratio(value: float, low: float, high: float) -> str:
    """A ratio with its CI, "1.234 [1.200, 1.270]"; without a CI just the ratio."""
    return with_ci(value, low, high, ".3f")


def count(n: int, noun: str) -> str:
    """'1 workload', '5 workloads': reports are read by people, not parsed."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def better_words(better: str) -> str:
    return "higher is better" if better == "higher" else "lower is better"


def score_text(score: float, low: float, high: float) -> str:
    """An XBench score with its 95% CI: "95.3 [93.1, 97.0]"."""
    return with_ci(score, low, high, ".1f", no_ci=" (no CI)")


def index_rows(index: xbench.Index) -> list[tuple[str, str, list[str]]]:
    """The index as (kind, name, one score per target) rows: kind total | group | test."""
    names = dict(xbench.GROUPS)

    def cells(items: list[xbench.TestScore] | list[xbench.GroupScore]) -> list[str]:
        by = {x.target: x for x in items}
        return [score_text(by[t].score, by[t].ci_low, by[t].ci_high) if t in by else "-"
                for t in index.targets]

    rows = [("total", "Results (all tests)", cells(list(index.totals)))]
    for group in dict.fromkeys(g.group for g in index.groups):
        rows.append(("group", f"{names.get(group, group.title())} Test",
                     cells([g for g in index.groups if g.group == group])))
        mine = [t for t in index.tests if t.group == group]
        several = {w for w in (t.workload for t in mine)
                   if len({t.metric for t in mine if t.workload == w}) > 1}
        for key in dict.fromkeys((t.workload, t.metric) for t in mine):
            name = f"{key[0]} {key[1]}" if key[0] in several else key[0]
            rows.append(("test", name, cells([t for t in mine if (t.workload, t.metric) == key])))
    return rows


def footprint_percent(d: footprint.Difference) -> str:
    """The largest-N peak RSS change of a against b with its 95% CI."""
    return with_ci(d.percent, *d.percent_ci, "+.1f", "%", no_ci=" (no CI)")
