"""Which workloads are instances of a [sweep], and which one the suite counts.

A profile's `[sweep] n = [...]` runs one instance per value, with ids like `list[n=10000]`
(workloads/profile.py `expand_sweep`; a profile's own id holds no brackets, and ids.py keeps
'[', ']', ',' and '=' out of sweep values, so such an id is always an instance).
Pure functions of ids, imported by analyse/results.py (the suite mean) and analyse/sweeps.py
(the curves).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

_INSTANCE = re.compile(r"^(?P<base>[^\[\]]+)\[(?P<param>[^\[\]=,]+)=(?P<value>[^\[\]=,]+)\]$")


@dataclass(frozen=True)
class Instance:
    base: str
    param: str
    value: str


def instance_of(workload_id: str) -> Instance | None:
    """The (profile id, parameter, value) of a one-parameter sweep instance's id, else None."""
    m = _INSTANCE.match(workload_id)
    return Instance(m["base"], m["param"], m["value"]) if m else None


def number(value: str) -> float | None:
    """A swept value as a finite number, else None (a value like 'fast' is a label)."""
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def ordered(values: Sequence[str]) -> list[str]:
    """Sweep values in curve order: numerically when all are numbers, else as listed."""
    nums = [number(v) for v in values]
    if all(n is not None for n in nums):
        return [v for _, v in sorted(zip(nums, values, strict=True), key=lambda p: p[0] or 0.0)]
    return list(values)


T = TypeVar("T")


def once_per_sweep(items: Sequence[T], id_of: Callable[[T], str]) -> list[T]:
    """`items` with each one-parameter sweep kept only at its largest value, in their order:
    what the suite's geometric mean counts."""
    ids = [id_of(x) for x in items]
    groups: dict[tuple[str, str], list[str]] = {}
    for wid in ids:
        inst = instance_of(wid)
        if inst is not None:
            groups.setdefault((inst.base, inst.param), []).append(inst.value)
    keep: set[str] = set()
    for (base, param), values in groups.items():
        keep.add(f"{base}[{param}={ordered(values)[-1]}]")
    return [x for x, wid in zip(items, ids, strict=True)
            if instance_of(wid) is None or wid in keep]
