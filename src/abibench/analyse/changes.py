"""Change points in a series of measurements: where a result moved to a new level.

The method (docs/method.md, "Change points over stored runs") is binary segmentation with a
permutation test. A series is the log values of many runs, concatenated oldest first; a level
may only change where a run begins (``boundaries``), since nothing changes the program within
one run. In a segment, each allowed cut i gets the statistic

    T(i) = |mean(x[:i]) - mean(x[i:])| * sqrt(i * (n - i) / n)

(the standardised difference of the two sides' means, largest where a step is); the best cut
is tested against ``permutations`` random reorderings of the segment's values, where a level
does not exist: p = (1 + #{T_perm >= T_obs}) / (1 + permutations). A cut with p < alpha whose
step is at least ``min_change`` (relative) and that also stands against the runs' own spread
(`run_level_p`: the runs' means, one value per run, in Student's t) is a change point, and both
sides are searched again. A segment of too few runs to estimate that spread uses the same
host's repeated runs of one build (`pooled_spread`), and without them the cut is "undecided"
(cannot tell), never a change on the samples' word alone. Every segment's reorderings come
from a generator seeded by (seed, start, end), so the answer is the same on every call and
does not depend on the order segments are visited.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from abibench.distributions import t_sf

# Ties between a reordering's statistic and the observed one are decided with this slack, so
# that adding a constant to every value (which moves the means by a rounding error) cannot
# turn a tie into a win.
_TIE = 1e-9


@dataclass(frozen=True)
class ChangePoint:
    """A new level starts at ``index`` of the series (the first value of a run)."""

    index: int
    p_value: float
    before: float  # mean of the log values of the segment before the cut
    after: float  # and after it

    @property
    def change(self) -> float:
        """The step as a ratio of geometric means, after over before (1.05: 5% up)."""
        return math.exp(self.after - self.before)


def _statistic(x: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """T at every cut, for each row of x (one row per ordering)."""
    n = x.shape[-1]
    cum = np.cumsum(x, axis=-1)
    left = cum[..., cuts - 1] / cuts
    right = (cum[..., -1:] - cum[..., cuts - 1]) / (n - cuts)
    weight = np.sqrt(cuts * (n - cuts) / n)
    stat: np.ndarray = np.abs(left - right) * weight
    return stat


def best_cut(x: Sequence[float] | np.ndarray, cuts: Sequence[int], permutations: int = 499,
             seed: int = 0) -> tuple[int, float] | None:
    """The cut of largest T among ``cuts`` (indexes into x, 0 < c < len(x)) and its
    permutation p-value; None without a cut."""
    arr = np.asarray(x, dtype=float)
    allowed = np.asarray(sorted(c for c in set(cuts) if 0 < c < arr.size), dtype=int)
    if allowed.size == 0:
        return None
    centred = arr - arr.mean()  # the statistic ignores a shift; centring keeps it exact
    observed = _statistic(centred, allowed)
    k = int(np.argmax(observed))
    t_obs = float(observed[k])
    rng = np.random.default_rng(seed)
    shuffled = np.array([rng.permutation(centred) for _ in range(permutations)])
    t_perm = _statistic(shuffled, allowed).max(axis=1)
    beaten = int(np.sum(t_perm >= t_obs * (1 - _TIE)))
    return int(allowed[k]), (1 + beaten) / (1 + permutations)


@dataclass(frozen=True)
class Spread:
    """The run-to-run spread of a run's mean (log values), pooled over repeated runs of one
    build measured elsewhere on the same host: ``variance`` with ``df`` degrees of freedom."""

    variance: float
    df: int


def pooled_spread(groups: Iterable[Sequence[float]]) -> Spread | None:
    """The within-build variance of run means: each group is the run means (log values) of
    runs of one build (of any workload, any series of one kind); groups of one run say
    nothing. None when no group has two runs, or a mean is not finite."""
    ss, df = 0.0, 0
    for g in groups:
        arr = np.asarray(list(g), dtype=float)
        if arr.size < 2 or not np.all(np.isfinite(arr)):
            continue
        ss += float(((arr - arr.mean()) ** 2).sum())
        df += arr.size - 1
    return Spread(ss / df, df) if df else None


# The fewest degrees of freedom the runs' spread is estimated with before a step is tested
# against it: one says next to nothing about a spread (it refused steps of 20% against 1%).
MIN_DF = 2


def run_level_p(arr: np.ndarray, starts: Sequence[int], end: int, cut: int,
                prior: Spread | None = None) -> float | None:
    """The step at ``cut`` tested against the runs' own spread: Student's t on the run means
    (each run one value) with the variance of run means about their side's mean (K - 2
    degrees of freedom for K runs). Samples of one run share that run's conditions, so the
    sample-level test alone takes a run's offset for a change. ``prior`` (the same host's
    repeated runs of one build, `pooled_spread`) is used instead when it has more degrees of
    freedom (at least MIN_DF). With neither estimate of MIN_DF the spread is unknown: None,
    "cannot tell", never the sample test alone."""
    edges = [*starts, end]
    means = [float(arr[a:b].mean()) for a, b in itertools.pairwise(edges)]
    left = [m for a, m in zip(starts, means, strict=True) if a < cut]
    right = [m for a, m in zip(starts, means, strict=True) if a >= cut]
    if not left or not right:
        return None
    df = len(means) - 2
    resid = sum((m - np.mean(left)) ** 2 for m in left) + \
        sum((m - np.mean(right)) ** 2 for m in right)
    variance = resid / df if df >= MIN_DF else None
    if prior is not None and prior.df >= MIN_DF and prior.df > df:
        # The estimate of more degrees of freedom, never both pooled: the segment's own runs
        # may be among the prior's groups, and pooling would count them twice. Chosen by its
        # degrees of freedom, never by its value.
        variance, df = prior.variance, prior.df
    if variance is None:
        return None
    se = math.sqrt(variance * (1 / len(left) + 1 / len(right)))
    step = float(np.mean(right) - np.mean(left))
    if se == 0.0:
        return 0.0 if step != 0.0 else 1.0
    return 2 * t_sf(abs(step) / se, df)


@dataclass(frozen=True)
class Scan:
    """What a series says: its change points, and the cuts the samples objected to that the
    runs could not decide (too few runs, no prior spread): "cannot tell", not a change."""

    changes: list[ChangePoint]
    undecided: list[ChangePoint]


def detect(values: Sequence[float], boundaries: Sequence[int], *, alpha: float = 0.05,
           min_change: float = 0.01, permutations: int = 499, seed: int = 0,
           min_size: int = 2, prior: Spread | None = None) -> list[ChangePoint]:
    """Change points of a series of log values, sorted by index (`scan`'s changes)."""
    return scan(values, boundaries, alpha=alpha, min_change=min_change,
                permutations=permutations, seed=seed, min_size=min_size, prior=prior).changes


def scan(values: Sequence[float], boundaries: Sequence[int], *, alpha: float = 0.05,
         min_change: float = 0.01, permutations: int = 499, seed: int = 0,
         min_size: int = 2, prior: Spread | None = None) -> Scan:
    """Change points of a series of log values, and the undecided cuts, sorted by index.

    ``boundaries``: the indexes where a new level may start (the first value of each run).
    ``min_size``: the fewest values either side of a cut. ``min_change``: the smallest step,
    relative, that counts (between-run noise makes tiny steps significant on many samples).
    ``prior``: the run-to-run spread from the same host's repeated runs (`pooled_spread`),
    used where a segment has too few runs to estimate its own.
    Non-finite values are refused (ValueError): they never reach the statistics.
    """
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError("a change-point series holds a value that is not finite")
    if not 0 < alpha < 1 or permutations < 1 or min_size < 1 or min_change < 0:
        raise ValueError("alpha in (0, 1), permutations >= 1, min_size >= 1, min_change >= 0")
    found: list[ChangePoint] = []
    undecided: list[ChangePoint] = []
    todo = [(0, arr.size)]
    while todo:
        lo, hi = todo.pop()
        cuts = [b - lo for b in boundaries if lo + min_size <= b <= hi - min_size]
        got = best_cut(arr[lo:hi], cuts, permutations, seed=hash((seed, lo, hi)) & 0xFFFFFFFF)
        if got is None:
            continue
        cut, p = got
        before, after = float(arr[lo:lo + cut].mean()), float(arr[lo + cut:hi].mean())
        if p >= alpha or abs(math.expm1(after - before)) < min_change:
            continue
        starts = [lo, *(b for b in sorted(set(boundaries)) if lo < b < hi)]
        runs_p = run_level_p(arr, starts, hi, lo + cut, prior)
        if runs_p is None:
            undecided.append(ChangePoint(lo + cut, p, before, after))
            continue
        # Bonferroni over the cuts the best one was chosen from: the t test alone does not
        # know that its cut was picked as the largest step.
        if runs_p * len(cuts) >= alpha:
            continue
        found.append(ChangePoint(lo + cut, p, before, after))
        todo += [(lo, lo + cut), (lo + cut, hi)]
    return Scan(sorted(found, key=lambda c: c.index), sorted(undecided, key=lambda c: c.index))
