"""Number formatting shared by every report."""

from __future__ import annotations

import math


def si(value: float, unit: str = "") -> str:
    """Three significant digits with an SI prefix: 12.3M lookups/s, 1.52 s, 845 ms."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
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


def kib(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1024 * 1024:
        return f"{value / 1024 / 1024:.2f} GiB"
    if value >= 1024:
        return f"{value / 1024:.1f} MiB"
    return f"{value:.0f} KiB"


def size(value: int | None) -> str:
    if value is None:
        return "-"
    if value >= 1 << 20:
        return f"{value / (1 << 20):.2f} MiB"
    if value >= 1 << 10:
        return f"{value / 1024:.1f} KiB"
    return f"{value} B"


def ratio(value: float, low: float, high: float) -> str:
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def count(n: int, noun: str) -> str:
    """'1 workload', '5 workloads': reports are read by people, not parsed."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
