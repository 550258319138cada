"""An index like XBench's: every micro test scored against the reference ABI of the same run.

XBench scores a machine against a fixed reference machine (= 100). Here the reference is the
64-bit ABI of the same run on the same host, so a score reads "this ABI does N% of what x86_64
does": 100 x median(a)/median(ref) for higher-is-better metrics, 100 x median(ref)/median(a)
for lower-is-better ones, so above 100 is always better. Group scores (CPU, Threads, Memory,
Disk) and the total are geometric means of the test scores, as XBench's are; their confidence
intervals come from stats.geomean_ratio, which bootstraps inside every test (by round where the
samples pair) and keeps the set of tests fixed.

Tests are the primary metric of each workload plus the extra metrics listed in EXTRA_METRICS
(STREAM's four kernels and mem-blocks' four block sizes are separate tests in XBench and mbw).
A workload whose outputs differ between ABIs is left out and named, never averaged in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .. import stats
from ..abi import reference_abi
from ..records import Better, RunDoc
from .results import validate_checks

REFERENCE = reference_abi()

# Group of a workload by the prefix of its id; stream predates the naming scheme.
GROUPS: tuple[tuple[str, str], ...] = (("cpu", "CPU"), ("thread", "Threads"),
                                        ("mem", "Memory"), ("disk", "Disk"))
ALIASES = {"stream": "mem"}
EXTRA_METRICS: dict[str, tuple[str, ...]] = {
    "stream": ("copy_mbs", "scale_mbs", "add_mbs"),
    "mem-blocks": ("b64_mbs", "b64k_mbs", "b1m_mbs"),
}

_BASE = re.compile(r"^([^\[]+)")


@dataclass(frozen=True)
class TestScore:
    workload: str
    metric: str
    group: str  # cpu | thread | mem | disk | other
    target: str
    score: float  # reference = 100; above 100 is better
    ci_low: float
    ci_high: float
    value: float  # median of this target's metric
    reference_value: float
    unit: str
    better: str


@dataclass(frozen=True)
class GroupScore:
    group: str  # a group key, or "total"
    target: str
    score: float
    ci_low: float
    ci_high: float
    tests: int


@dataclass(frozen=True)
class Index:
    reference: str
    targets: tuple[str, ...]  # scored targets, reference excluded
    tests: tuple[TestScore, ...]
    groups: tuple[GroupScore, ...]
    totals: tuple[GroupScore, ...]
    excluded: tuple[str, ...]  # miscompared workloads, left out


def group_of(workload: str) -> str:
    base = _BASE.match(workload)
    wid = base.group(1) if base else workload
    if wid in ALIASES:
        return ALIASES[wid]
    prefix = wid.split("-", 1)[0]
    return prefix if prefix in dict(GROUPS) else "other"


def _score(value: float, better: str) -> float:
    """A ratio a/ref of the metric as an XBench score (higher always better)."""
    return 100.0 * value if better == "higher" else 100.0 / value


def xbench_index(doc: RunDoc, *, reference: str = REFERENCE,
                 workloads: Iterable[str] | None = None,
                 extra_metrics: Mapping[str, Sequence[str]] = EXTRA_METRICS,
                 seed: int = 0) -> Index:
    """Score every test of a run document against `reference` (= 100).

    `workloads` limits the tests to these ids (default: every workload of a known group, so the
    index of a `--suite xbench` run covers the suite and nothing else sneaks in).
    """
    metas = doc.workloads
    chosen = list(workloads) if workloads is not None else [
        w for w in metas if group_of(w) != "other"]
    tests: list[TestScore] = []
    # (group, target) -> geomean inputs
    pools: dict[tuple[str, str], list[tuple[Sequence[float], Sequence[float], bool, Better]]] = {}
    excluded: list[str] = []
    targets: list[str] = []
    for wid in chosen:
        meta = metas.get(wid)
        if meta is None:
            continue
        labels = list(meta.targets)
        verdict, _ = validate_checks(*doc.checks(wid), labels)
        if verdict == "miscompare":
            excluded.append(wid)
            continue
        base = _BASE.match(wid)
        extras = tuple(extra_metrics.get(base.group(1) if base else wid, ()))
        metrics = [meta.primary, *(m for m in extras if m in meta.metrics)]
        emulated = doc.emulated_targets(wid)  # an emulator's speed is no score of an ABI
        for metric in metrics:
            info = meta.metrics.get(metric)
            unit, better = (info.unit, info.better) if info else ("", "lower")
            for label in labels:
                if label == reference or label in emulated or reference in emulated:
                    continue
                pair = doc.paired(wid, metric, label, reference)
                a, b, paired = pair.a, pair.b, pair.paired
                if not a or not b:
                    continue
                try:
                    r = stats.ratio_of(a, b, paired=paired, seed=seed)
                except ValueError:
                    continue  # values <= 0 have no ratio; the test is not scored
                lo, hi = sorted((_score(r.ci_low, better), _score(r.ci_high, better)))
                tests.append(TestScore(
                    workload=wid, metric=metric, group=group_of(wid), target=label,
                    score=_score(r.ratio, better), ci_low=lo, ci_high=hi,
                    value=stats.summarize(a).median, reference_value=stats.summarize(b).median,
                    unit=unit, better=better))
                pools.setdefault((group_of(wid), label), []).append((a, b, paired, better))
                if label not in targets:
                    targets.append(label)

    def combine(key: str, target: str,
                items: list[tuple[Sequence[float], Sequence[float], bool, Better]]) -> GroupScore:
        # geomean_ratio returns a's cost relative to b (> 1: b is better); a score is 100/cost.
        gm = stats.geomean_ratio([(a, b, p) for a, b, p, _ in items],
                                 better=[bt for _, _, _, bt in items], seed=seed)
        lo = 100.0 / gm.ci_high if not math.isnan(gm.ci_high) else math.nan
        hi = 100.0 / gm.ci_low if not math.isnan(gm.ci_low) else math.nan
        return GroupScore(key, target, 100.0 / gm.value, lo, hi, gm.n)

    groups = [combine(g, t, items) for (g, t), items in sorted(
        pools.items(), key=lambda kv: (_group_rank(kv[0][0]), kv[0][1]))]
    totals = [combine("total", t, [it for (_, tt), items in pools.items() if tt == t
                                   for it in items]) for t in targets]
    return Index(reference, tuple(targets), tuple(tests), tuple(groups), tuple(totals),
                 tuple(excluded))


def _group_rank(group: str) -> int:
    keys = [g for g, _ in GROUPS]
    return keys.index(group) if group in keys else len(keys)
