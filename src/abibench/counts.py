"""What a counted run saw: cachegrind's events, their totals, and the top functions.

:mod:`abibench.records` re-exports every name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from .codec import JSONDict, decoder, encode, rule

# Cachegrind's event names, and the sums an explanation speaks of.
INSTRUCTIONS = "Ir"
D1_MISSES = ("D1mr", "D1mw")
LL_MISSES = ("ILmr", "DLmr", "DLmw")
BRANCHES = ("Bc", "Bi")
MISPREDICTS = ("Bcm", "Bim")


UNKNOWN_FUNCTION = "???"  # code without symbols (callgrind names it by its address)
PROGRAM_OBJECT = "(program)"  # the object of the executable a process ran, whatever its name


@dataclass(frozen=True)
class FunctionCount:
    """One function's share of a counted run: its events, in the order of CounterProfile.events,
    and the object its code was loaded from (a name matched across ABIs: "libc.so.6", "ld.so",
    the program's file name; "" where the counter did not record it)."""

    # written as a [name, [counts], object] array; older files have the [name, [counts]] pair
    AS_ARRAY: ClassVar[bool] = True

    name: str
    counts: tuple[int, ...] = field(metadata=rule(min=0))
    object: str = ""


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
    # every object's totals (its name in FunctionCount.name); () where they were not recorded
    objects: tuple[FunctionCount, ...] = ()

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
