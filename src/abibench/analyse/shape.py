"""The shape of one target's samples: a slow tail or two modes, said in words.

A coefficient of variation says *that* samples vary, not *how*. Two shapes matter to a reader
because they change what the median and its interval mean (pyperf warns about unstable
benchmarks for the same reason):

* a **slow tail**: most samples agree and a few are much slower (another process took the CPU,
  a migration, an unlucky layout). The median is robust to it; the interval is widened by it.
* **two modes**: the samples fall into two groups with a gap between them (two layouts, two
  CPU frequencies, a cache that fits or not). Then "the" time is a mixture and depends on how
  often each group happens to be drawn.

Both are found on the logarithm of a time-like value (oriented so that larger is worse), with
rules that need no distribution: a tail is the samples more than TAIL_FACTOR over the fastest
quarter's upper edge and far outside the body's spread; two modes is the best split of the
sorted values whose groups are both large and far apart compared with their own spread.
Each rule is checked by generated mixtures in tests/analyse/test_shape.py, including how
often it fires on one clean mode.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..records import Sample

MIN_SAMPLES = 8  # fewer cannot show a shape
TAIL_FACTOR = 1.10  # a sample 10% over the typical fast one is in the tail
TAIL_SDS = 4.0  # ... and beyond this many of the body's standard deviations over its median
TAIL_SHARE = 0.10  # ... and a tail is reported when at least this share of samples is in it
MODE_SHARE = 0.20  # each of two modes holds at least this share of the samples
MODE_GAP = 0.03  # the modes' centres differ by at least 3%
MODE_LEAST = 4  # samples in the smaller mode: fewer cannot show their own spread
MODE_SEPARATION = 5.0  # and by at least this many times their pooled spread


@dataclass(frozen=True)
class Shape:
    """What one target's samples look like, when it is worth saying."""

    target: str
    kind: str  # "slow tail" | "two modes"
    count: int  # samples in the tail, or in the slower mode
    total: int
    low: float  # how much worse than typical: the tail's least and greatest excess (fractions),
    high: float  # or, for two modes, the slower mode's excess over the faster (both the same)
    # Every sample's excess over the typical (fastest quarter's edge), in sample order: the chart.
    points: tuple[float, ...] = ()

    def words(self) -> str:
        if self.kind == "slow tail":
            return (f"{self.target}: a slow tail: {self.count} of {self.total} samples "
                    f"{_pct(self.low)}–{_pct(self.high)} worse than its typical sample "
                    "(the median is robust to them; the interval is wider)")
        return (f"{self.target}: two modes: {self.count} of {self.total} samples form a group "
                f"{_pct(self.low)} worse than the other {self.total - self.count} (a mixture: "
                "layout, frequency or cache effects that change between samples)")


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _oriented_logs(values: Sequence[float], higher_is_better: bool,
                   keep_order: bool = False) -> list[float] | None:
    """Logs, negated where higher is better (so larger is always worse), sorted unless asked."""
    if values and not (all(map(math.isfinite, values)) and min(values) > 0):
        return None
    logs = list(map(math.log, values))  # each pass in C: a target may have 10^5 samples
    if higher_is_better:
        logs = list(map(operator.neg, logs))
    return logs if keep_order else sorted(logs)


def _quantile(sorted_xs: Sequence[float], q: float) -> float:
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def two_modes(xs: Sequence[float]) -> tuple[int, float] | None:
    """The split of sorted xs into a fast and a slow group that are both large and well apart:
    (the slow group's size, its centre's excess as a log difference), else None.

    Every split is scored at once from running means and running sums of squared deviations
    (Welford's update: a sum of non-negative terms, so no cancellation), O(n) where trying each
    split by summing its groups was O(n^2): 50,000 samples of a target took minutes. The scores
    are those of summing each split's groups (tests/analyse/test_shape.py compares the two on
    generated samples); the first best split wins, as before."""
    n = len(xs)
    least = max(MODE_LEAST, math.ceil(MODE_SHARE * n))
    if n - least < least:
        return None
    c = np.asarray(xs, dtype=np.float64)
    c = c - c.mean()  # centred: the running means stay small
    mean_f, ss_f = _running(c)  # index i: the first i + 1 values
    mean_s, ss_s = _running(c[::-1])  # index i: the last i + 1 values
    k = np.arange(least, n - least + 1)  # the fast group's size
    gap = mean_s[n - k - 1] - mean_f[k - 1]
    var = (ss_f[k - 1] + ss_s[n - k - 1]) / (n - 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        sep = np.where(var > 0, gap / np.sqrt(np.where(var > 0, var, 1.0)), np.inf)
    ok = (gap >= math.log1p(MODE_GAP)) & (sep >= MODE_SEPARATION)
    if not ok.any():
        return None
    best = int(np.argmax(np.where(ok, sep, -np.inf)))  # the first of equal scores
    return n - int(k[best]), float(gap[best])


def _running(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Running means and running sums of squared deviations from them (Welford)."""
    count = np.arange(1, len(c) + 1, dtype=np.float64)
    mean = np.cumsum(c) / count
    step = np.zeros_like(c)
    # the i-th value (i >= 1) adds (i / (i + 1)) * (x_i - mean of the i before it)^2
    step[1:] = (count[:-1] / count[1:]) * (c[1:] - mean[:-1]) ** 2
    return mean, np.cumsum(step)


def describe(target: str, values: Sequence[float], higher_is_better: bool) -> Shape | None:
    """Two modes if the samples have them, else a slow tail if there is one, else None."""
    order = _oriented_logs(values, higher_is_better, keep_order=True)
    if order is None or len(order) < MIN_SAMPLES:
        return None
    xs = sorted(order)
    typical = _quantile(xs, 0.25)
    points = tuple(map(math.expm1, map(operator.sub, order, itertools.repeat(typical))))
    modes = two_modes(xs)
    if modes is not None:
        count, gap = modes
        return Shape(target, "two modes", count, len(xs), math.expm1(gap), math.expm1(gap),
                     points)
    median = _quantile(xs, 0.5)
    # The body's spread from its fast side, which a slow tail cannot reach: a sample is in the
    # tail only when it is both 10% over the typical one and far outside the body's own spread,
    # so a broad but single-humped distribution is not called a tail.
    body_sd = (median - _quantile(xs, 0.10)) / 1.2816
    edge = max(typical + math.log(TAIL_FACTOR), median + TAIL_SDS * body_sd)
    tail = [x - typical for x in xs if x > edge]
    if len(tail) >= max(2, math.ceil(TAIL_SHARE * len(xs))):
        return Shape(target, "slow tail", len(tail), len(xs), math.expm1(min(tail)),
                     math.expm1(max(tail)), points)
    return None


def target_shapes(counted: Sequence[Sample], labels: Sequence[str], metric: str,
                  higher_is_better: bool) -> list[Shape]:
    """The shape of each target's counted values of one metric, where there is one to say."""
    return shapes_of({label: [v for s in counted if s.target == label
                              and (v := s.value(metric)) is not None] for label in labels},
                     higher_is_better)


def shapes_of(values: Mapping[str, Sequence[float]], higher_is_better: bool) -> list[Shape]:
    """The shape of each target's values (target -> its counted values of one metric), where
    there is one to say (`RunDoc.values` gives them once per document)."""
    return [shape for label, vs in values.items()
            if (shape := describe(label, vs, higher_is_better)) is not None]
