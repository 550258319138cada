"""Memory footprint curves: peak RSS and time per element against N, per ABI, from a run.

The footprint profiles (footprint-list, -tree, -hash) sweep N, so a run document holds one
workload instance per N ("footprint-list[n=10000]", params {"n": "10000"}) with every sample's
peak RSS (max_rss_kb, measured by the launcher) and the program's time per element. This module
only reads and reshapes that; the statistics of the largest-N comparison come from stats.ratio_of.

For a chart: one panel per structure, x = N on a log axis, y = `bytes_per_element` (and a second
panel for `ns_per_element`), one line per ABI; `net_bytes_per_element` removes the program's
fixed part (its resident size before building), which dominates at small N.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .. import stats
from ..records import RunDoc, Sample, pair_by_round, pick_reference

PREFIX = "footprint-"
SIZE_PARAM = "n"
TIME_METRIC = "ns_per_element"
BASELINE_METRIC = "baseline_kb"  # the program's resident KiB before it built anything

_INSTANCE = re.compile(r"^(?P<base>[^\[]+)(?:\[.*\])?$")


@dataclass(frozen=True)
class Point:
    n: int
    samples: int
    peak_rss_kb: float  # median over counted samples
    bytes_per_element: float  # median peak RSS / N
    net_bytes_per_element: float | None  # (median peak RSS - median baseline) / N
    ns_per_element: float | None  # median of the program's time per element
    counted: tuple[Sample, ...]  # the counted samples: what the comparison pairs by round


@dataclass(frozen=True)
class Series:
    structure: str  # the profile id without the sweep suffix, e.g. "footprint-list"
    abi: str  # target label
    points: tuple[Point, ...]  # ascending N


@dataclass(frozen=True)
class Difference:
    """a against b at the largest N both measured: peak RSS per element."""

    structure: str
    n: int
    a: str
    b: str
    a_bytes_per_element: float
    b_bytes_per_element: float
    ratio: stats.Ratio  # median peak RSS of a / of b (the same N, so per element too)
    percent: float  # (ratio - 1) * 100: negative when a needs less
    text: str

    @property
    def percent_ci(self) -> tuple[float, float]:
        """The CI of ``percent``."""
        return (self.ratio.ci_low - 1) * 100, (self.ratio.ci_high - 1) * 100

    @property
    def significant(self) -> bool:
        """Whether the ratio's CI excludes 1 (no change), the rule of every other verdict."""
        lo, hi = self.ratio.ci_low, self.ratio.ci_high
        return math.isfinite(lo) and math.isfinite(hi) and not lo <= 1.0 <= hi


def series(doc: RunDoc, *, prefix: str = PREFIX, size_param: str = SIZE_PARAM,
           time_metric: str = TIME_METRIC) -> list[Series]:
    """Per structure and ABI, the (N, peak RSS/element, time/element) points of a run document.

    Workload instances are picked by id prefix and must have the size parameter; instances or
    targets without a counted sample are left out rather than drawn as zero.
    """
    points: dict[tuple[str, str], list[Point]] = {}
    for wid, meta in doc.workloads.items():
        m = _INSTANCE.match(wid)
        base = m.group("base") if m else wid
        size = meta.params.get(size_param)
        if not base.startswith(prefix) or size is None:
            continue
        try:
            n = int(str(size))
        except ValueError:
            continue
        if not 0 < n < 1 << 63:  # a size beyond any machine's (and beyond a float) is no sweep
            continue
        samples = doc.counted(wid)
        for label in meta.targets or sorted({s.target for s in samples}):
            mine = [s for s in samples if s.target == label]
            if not mine:
                continue
            rss = stats.summarize([float(s.max_rss_kb) for s in mine]).median
            times = [s.metrics[time_metric] for s in mine if time_metric in s.metrics]
            base_kb = [s.metrics[BASELINE_METRIC] for s in mine if BASELINE_METRIC in s.metrics]
            net = None
            if base_kb:
                net = max(rss - stats.summarize(base_kb).median, 0.0) * 1024.0 / n
            points.setdefault((base, label), []).append(Point(
                n=n, samples=len(mine), peak_rss_kb=rss, bytes_per_element=rss * 1024.0 / n,
                net_bytes_per_element=net,
                ns_per_element=stats.summarize(times).median if times else None,
                counted=tuple(mine)))
    return [Series(structure, label, tuple(sorted(pts, key=lambda p: p.n)))
            for (structure, label), pts in sorted(points.items())]


def largest_n_difference(all_series: list[Series], a: str, b: str) -> list[Difference]:
    """For each structure, a's peak RSS per element against b's at the largest N both have."""
    by_key = {(s.structure, s.abi): s for s in all_series}
    out = []
    for structure in sorted({s.structure for s in all_series}):
        sa, sb = by_key.get((structure, a)), by_key.get((structure, b))
        if sa is None or sb is None:
            continue
        common = {p.n for p in sa.points} & {p.n for p in sb.points}
        if not common:
            continue
        n = max(common)
        pa = next(p for p in sa.points if p.n == n)
        pb = next(p for p in sb.points if p.n == n)
        pair = pair_by_round(pa.counted, pb.counted, "max_rss")
        try:
            ratio = stats.ratio_of(pair.a, pair.b, paired=pair.paired, name_a=a, name_b=b)
        except ValueError:
            continue  # e.g. a peak RSS of 0 in an imported file: no ratio, no difference shown
        percent = (ratio.ratio - 1.0) * 100.0
        if math.isnan(ratio.ci_low):
            ci = "no CI: fewer than 2 samples"
        else:
            ci = (f"[{stats.short((ratio.ci_low - 1) * 100, '+.1f')}%, "
                  f"{stats.short((ratio.ci_high - 1) * 100, '+.1f')}%]")
        text = (f"{structure} at N={n:,}: {a} {stats.short(pa.bytes_per_element)} B/element, {b} "
                f"{stats.short(pb.bytes_per_element)} B/element: {a} peak RSS "
                f"{stats.short(percent, '+.1f')}% {ci}")
        out.append(Difference(structure, n, a, b, pa.bytes_per_element, pb.bytes_per_element,
                              ratio, percent, text))
    return out


def differences(curves: list[Series]) -> list[Difference]:
    """Every other ABI against the 64-bit one at the largest N both measured."""
    abis = sorted({c.abi for c in curves})
    if len(abis) < 2:
        return []
    ref = pick_reference(abis)
    return [d for a in abis if a != ref for d in largest_n_difference(curves, a, ref)]
