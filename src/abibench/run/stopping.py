"""Adaptive stopping: how precise the comparison of a workload's targets is so far."""

from __future__ import annotations

from collections.abc import Sequence

from .. import stats
from ..records import Sample, pair_by_round


def widest_interval(samples: Sequence[Sample], metric: str, labels: list[str]) -> float:
    """The largest relative CI half-width of `metric` among target pairs (each vs the first).

    inf while a pair has fewer than two common rounds or no finite interval.
    """
    if len(labels) < 2:
        return 0.0
    counted = [s for s in samples if s.counted]
    ref = labels[0]
    widest = 0.0
    for other in labels[1:]:
        pair = pair_by_round([s for s in counted if s.target == other],
                             [s for s in counted if s.target == ref], metric)
        if not pair.paired or len(pair.a) < 2:
            return float("inf")
        try:
            est = stats.ratio_of(pair.a, pair.b, paired=True, covariate=pair.covariate)
        except ValueError:
            return float("inf")
        hw = est.half_width()
        widest = max(widest, hw if hw == hw else float("inf"))
    return widest
