"""How two targets' samples pair by round, each step a pass in C over a column of values.

A run of 10^6 samples asks for each target's values of several metrics and for the pairs of
every comparison; `metric_column` reads one metric of many samples (what `Sample.value` gives
each) and `pair_by_round` pairs two targets' columns. tests/invariants/test_columns.py holds
both to their sample-by-sample definitions on generated samples.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from .metrics import _BUILTIN_FIELDS, MEMORY_METRICS


class Sample(Protocol):
    """What pairing reads of a `records.Sample` (named here, not imported: records imports
    this module)."""

    @property
    def round(self) -> int: ...

    @property
    def design(self) -> str: ...

    @property
    def covariate(self) -> float | None: ...

    @property
    def metrics(self) -> dict[str, float]: ...

__all__ = ["Paired", "Side", "metric_column", "only_numbers", "pair_by_round",
           "pair_columns"]


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
    sample order; paired ones are in round order. (Each step is a pass in C over a column:
    tests/invariants/test_columns.py holds it to the sample-by-sample definition.)
    """
    sa, sb = list(a), list(b)
    return pair_columns(Side.of(sa, metric), Side.of(sb, metric), metric)


@dataclass(frozen=True)
class Side:
    """What pairing reads of one target's samples, as columns in the samples' order: each
    one's round, value of the metric (None without one), design and covariate."""

    rounds: Sequence[int]
    values: Sequence[float | None]
    designs: Sequence[str]
    covariates: Sequence[float | None]

    @staticmethod
    def of(samples: Sequence[Sample], metric: str) -> Side:
        return Side(list(map(_ROUND, samples)), metric_column(samples, metric),
                    list(map(_DESIGN, samples)), list(map(_COVARIATE, samples)))


def pair_columns(a: Side, b: Side, metric: str) -> Paired:
    """`pair_by_round` of two targets given as columns (a columnar document has no samples)."""
    va, vb = _by_round(a.rounds, a.values), _by_round(b.rounds, b.values)
    if va and va.keys() == vb.keys():
        rounds = sorted(va)
        ca = cb = None
        if metric not in MEMORY_METRICS:
            ca, cb = _covariates(a, rounds), _covariates(b, rounds)
        if ca is None or cb is None:
            ca = cb = ()
        return Paired(tuple(map(va.__getitem__, rounds)), tuple(map(vb.__getitem__, rounds)),
                      True, ca, cb)
    return Paired(tuple(va.values()), tuple(vb.values()), False)


_ROUND = operator.attrgetter("round")
_DESIGN = operator.attrgetter("design")
_COVARIATE = operator.attrgetter("covariate")
_METRICS = operator.attrgetter("metrics")


def metric_column(samples: Sequence[Sample], metric: str) -> list[float | None]:
    """`[s.value(metric) for s in samples]`, the field read by one C pass where it is a
    built-in one (a run of 10^6 samples asks each for several metrics)."""
    name = _BUILTIN_FIELDS.get(metric)
    if name is None:
        return list(map(operator.methodcaller("get", metric), map(_METRICS, samples)))
    raw = list(map(operator.attrgetter(name), samples))
    try:
        return list(map(float, raw))
    except TypeError:  # a None among them (`None in raw` compares each value: slower)
        return [None if v is None else float(v) for v in raw]


_NUMBERS = frozenset({float, int})


def only_numbers(values: Iterable[object]) -> bool:
    """Whether every value is a float or an int (no None): by type, in one pass in C."""
    return _NUMBERS.issuperset(map(type, values))


def _by_round(rounds: Sequence[int], values: Sequence[float | None]) -> dict[int, float]:
    """Round -> finite value (the last sample of a round wins, in the place of its first)."""
    if only_numbers(values) and all(map(math.isfinite, cast(Sequence[float], values))):
        return dict(zip(rounds, cast(Sequence[float], values), strict=True))
    return {r: v for r, v in zip(rounds, values, strict=True)
            if v is not None and math.isfinite(v)}


def _covariates(side: Side, rounds: list[int]) -> tuple[float, ...] | None:
    """The covariate of each round's sample, or None unless all were taken with one."""
    designs = side.designs
    by_round = {} if "covariate" not in designs else {
        r: c for r, d, c in zip(side.rounds, designs, side.covariates, strict=True)
        if d == "covariate"}
    values = list(map(by_round.get, rounds))
    if None in values or any(v is None or not math.isfinite(v) or v <= 0 for v in values):
        return None
    return tuple(float(v) for v in values if v is not None)
