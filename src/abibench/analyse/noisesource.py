"""Where a workload's round-to-round noise came from, when it kept the run from its precision.

A stop reason such as "budget ended at ±3.5%: rounds vary 7.5%" says how much noise there was,
not what caused it. Two causes are measured on every sample and can be told apart afterwards:

* **other processes**: the launcher records the CPU time every other process used during the
  sample (`foreign_cpu_s`). When a target's slow samples are the ones other processes took CPU
  from, a linear fit of the sample's excess over the target's median on that load explains a
  share of its variance (R²).
* **the program itself**: a slow tail or two modes among its samples (analyse/shape.py) while
  the load explains little points at the program or its layout (the issue's i386 nbody: x87
  code, intermittently 10-31% slower with everything else held fixed).

bench/noise.py separates the other candidates (padding, ASLR, pinning, the launcher) by
experiment; this module names what one run can tell from its own samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from abibench.distributions import t_sf

from ..records import Sample
from .conditions import Counted, SampleList
from .shape import Shape

EXPLAINS = 0.25  # a load that explains this share of a target's variance is named as a source
SIGNIFICANT = 0.01  # ... if the fit is this unlikely by chance (a t test of the correlation)
FELT = 0.05  # ... and other processes took at least this share of a CPU in some sample


def _chance(r2: float, n: int) -> float:
    """Two-sided p-value of a correlation with this R² over n points, by its t statistic."""
    if r2 >= 1.0:
        return 0.0
    t = math.sqrt(r2 * (n - 2) / (1.0 - r2))
    return 2 * t_sf(t, n - 2)


def load_share(xs: Sequence[float], ys: Sequence[float]) -> float:
    """R² of the least-squares line of ys on xs (0 when either does not vary)."""
    n = len(xs)
    if n < 3:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    if sxx <= 0 or syy <= 0:
        return 0.0
    return max(0.0, min(1.0, sxy * sxy / (sxx * syy)))


def _excess_and_load(doc: Counted, workload: str, label: str, metric: str,
                     higher_is_better: bool) -> tuple[list[float], list[float], float]:
    """Each sample's log excess over the target's median (larger: worse), the other processes'
    CPU share during it, and their CPU-s a sample on average."""
    rows = []
    for v, foreign, wall in zip(doc.metric_column(workload, label, metric),
                                doc.column(workload, label, "foreign_cpu_s"),
                                doc.column(workload, label, "wall_s"), strict=True):
        if v is None or not (math.isfinite(v) and v > 0) or foreign is None or not wall > 0:
            continue
        rows.append((-math.log(v) if higher_is_better else math.log(v), foreign / wall, foreign))
    if not rows:
        return [], [], 0.0
    logs = sorted(r[0] for r in rows)
    mid = logs[len(logs) // 2]
    return [r[0] - mid for r in rows], [r[1] for r in rows], sum(r[2] for r in rows) / len(rows)


def describe_sources(counted: Sequence[Sample], labels: Sequence[str], metric: str,
                     higher_is_better: bool, shapes: Sequence[Shape]) -> str:
    """`describe_sources_of` a list of counted samples."""
    return describe_sources_of(SampleList(counted), "", labels, metric, higher_is_better, shapes)


def describe_sources_of(doc: Counted, workload: str, labels: Sequence[str], metric: str,
                        higher_is_better: bool, shapes: Sequence[Shape]) -> str:
    """One line naming what measured source explains the targets' noise, or saying none does."""
    named, quiet = [], []
    for label in labels:
        excess, load, per_sample = _excess_and_load(doc, workload, label, metric,
                                                    higher_is_better)
        r2 = load_share(load, excess)
        if r2 >= EXPLAINS and _chance(r2, len(load)) < SIGNIFICANT and max(load) >= FELT:
            named.append(f"other processes' CPU time explains {r2:.0%} of {label}'s sample-to-"
                         f"sample variance ({per_sample:.2f} CPU-s a sample)")
        elif excess:
            quiet.append(label)
    for shape in shapes:
        if shape.target in quiet:
            what = "a slow tail" if shape.kind == "slow tail" else "two modes"
            named.append(f"{shape.target}'s own samples: {what} ({shape.count} of {shape.total}) "
                         "that other processes do not explain: the program or its layout")
    if not named:
        return ("noise source: none measured explains it (other processes' CPU time explains "
                f"under {EXPLAINS:.0%}, no slow tail or two modes): the program's own spread; "
                "bench/noise.py tests padding, ASLR, pinning and the launcher")
    return "noise source: " + "; ".join(named)
