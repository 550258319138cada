"""Adaptive stopping: how precise the comparison of a workload's targets is so far, and how many
rounds the asked precision would take at the spread measured."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from abibench.distributions import t_ppf

from .. import stats
from ..records import Sample, pair_by_round


@dataclass(frozen=True)
class Precision:
    """The widest CI half-width among the target pairs (each vs the first), and the largest
    per-round spread of their log ratios (sd), what each further round buys."""

    half_width: float  # inf while a pair has fewer than two common rounds
    spread: float  # nan until known
    rounds: int  # common rounds of the pairs (the fewest)


def precision(samples: Sequence[Sample], metric: str, labels: list[str]) -> Precision:
    if len(labels) < 2:
        return Precision(0.0, 0.0, 0)
    counted = [s for s in samples if s.counted]
    ref = labels[0]
    widest, spread, rounds = 0.0, 0.0, 1 << 30
    for other in labels[1:]:
        pair = pair_by_round([s for s in counted if s.target == other],
                             [s for s in counted if s.target == ref], metric)
        if not pair.paired or len(pair.a) < 2:
            return Precision(math.inf, math.nan, len(pair.a) if pair.paired else 0)
        try:
            est = stats.ratio_of(pair.a, pair.b, paired=True, covariate=pair.covariate)
        except ValueError:
            return Precision(math.inf, math.nan, len(pair.a))
        hw = est.half_width()
        widest = max(widest, hw if hw == hw else math.inf)
        spread = max(spread, est.spread)
        rounds = min(rounds, len(pair.a))
    return Precision(widest, spread, rounds)


# How every stop that ends a workload short of the asked precision begins (run/budget.py writes
# them): a limit ended it, not the noise. One predicate, so no reader lists them again.
SHORT_OF_PRECISION = ("run budget ", "--max-time ", "max ", "time budget")


def short_of_precision(reason: str) -> bool:
    """Whether a stored stop reason says the asked precision was not reached."""
    return reason.startswith(SHORT_OF_PRECISION)


def widest_interval(samples: Sequence[Sample], metric: str, labels: list[str]) -> float:
    """The largest relative CI half-width of `metric` among target pairs (each vs the first)."""
    return precision(samples, metric, labels).half_width


def rounds_needed(spread: float, asked: float) -> int:
    """Counted rounds for a t interval of per-round sd `spread` (log scale) to be within
    ±asked; a large number when the spread is unknown."""
    if not math.isfinite(spread):
        return 1 << 30
    if spread <= 0:
        return 2
    target = math.log1p(asked)
    n = max(2, math.ceil((1.96 * spread / target) ** 2))
    # The t quantile is wider than 1.96 at small n: step up until it fits.
    while n < 1 << 20 and t_ppf(0.975, n - 1) * spread / math.sqrt(n) > target:
        n += max(1, n // 20)
    return n


def noise_floor(spread: float, round_s: float, asked: float, reached: float) -> str:
    """Why the asked precision was not reached, in numbers: what the machine's noise costs."""
    n = rounds_needed(spread, asked)
    minutes = n * round_s / 60
    need = (f"~{n} rounds ({minutes:.0f} min)" if minutes >= 1 else f"~{n} rounds "
            f"({n * round_s:.0f} s)")
    return (f"machine noise floor: rounds vary {spread * 100:.1f}% (sd) at {round_s:.1f} s a "
            f"round; ±{asked * 100:g}% needs {need}; reached ±{reached * 100:.1f}%; "
            "--counters compares instruction counts, which have no such noise")
