"""Advice for a deployment: with a memory budget, which ABI gives more throughput?

Seed 001's question for VM hosts: is a 32-bit build's memory saving worth its speed loss? For
every measured workload and ABI, from the stored run alone:

* instances that fit: the memory budget over the median peak RSS of one instance (the
  measured process; a server workload's server);
* speed of one instance: the primary metric as a rate (a time is turned into runs per second);
* total throughput = instances x speed, limited by ``--budget-cores`` when given (each instance
  keeps one core busy) or fixed by ``--instances``; per GiB and per core.

Every ABI is compared with the reference (the 64-bit ABI). The ratio of total throughputs has
the CI of the speed ratio (the instance counts are exact, from the medians). A mix (``--mix
lua=3,sqlite-speedtest1=1``) is a bundle of instances deployed together; its speeds are
normalised to the reference's, and its interval is the bound that each workload's own 95% CI
gives (conservative, not a joint CI).

An ABI built but not run here (x32 on a kernel without it) whose ABI-table row names an
`rss_proxy` of the same data layout (x32's is i386): its peak RSS is estimated as the proxy's
measured one plus the difference of the two builds' static size (text + data + bss), and marked
"estimate, not measured"; its speed is not estimated.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from .. import stats
from ..abi import ABIS
from ..errors import UsageError
from ..records import RunDoc
from .results import WorkloadResult

GIB = 1 << 30
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(i?B?)\s*$", re.I)


def parse_size(text: str) -> int:
    """A memory size: 4GiB, 512MiB, 4G (binary units: a G is a GiB, as memory is sold), or
    bytes."""
    m = _SIZE.match(text)
    if not m:
        raise UsageError(f"memory size '{text}': write it like 4GiB, 512MiB or 1073741824")
    value = float(m.group(1)) * (1 << (10 * "BKMGT".index(m.group(2).upper() or "B")))
    if value < 1 << 20:
        raise UsageError(f"memory size '{text}' is below 1 MiB: give the deployment's memory")
    return int(value)


def parse_mix(text: str) -> dict[str, float]:
    """lua=3,sqlite-speedtest1=1 -> {lua: 3, sqlite-speedtest1: 1}."""
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, weight = part.partition("=")
        try:
            w = float(weight) if sep else 1.0
        except ValueError:
            w = math.nan
        if not name.strip() or not (w > 0 and math.isfinite(w)):
            raise UsageError(f"--mix {text}: write WORKLOAD=WEIGHT,... with weights > 0, e.g. "
                             "lua=3,sqlite-speedtest1=1")
        out[name.strip()] = w
    return out


@dataclass(frozen=True)
class Deployment:
    """What the user deploys: a memory budget, and instances or cores if given, and a mix."""

    memory: int  # bytes
    instances: int | None = None
    cores: int | None = None
    mix: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        parts = [f"{_gib(self.memory)} of memory"]
        if self.instances is not None:
            parts.append(f"{self.instances} instances")
        if self.cores is not None:
            parts.append(f"{self.cores} cores")
        if self.mix:
            parts.append("mix " + ", ".join(f"{k}={stats.short(v, 'g')}"
                                            for k, v in self.mix.items()))
        return ", ".join(parts)


@dataclass(frozen=True)
class AdviceRow:
    """One workload on one ABI in the deployment."""

    workload: str
    target: str
    rss_kb: float
    instances: int  # that fit (or --instances)
    running: int  # that run at once: limited by cores when given
    speed: float | None  # per instance, in `unit` (None: not measured, an estimate row)
    unit: str
    total: float | None  # running x speed
    per_gib: float | None
    per_core: float | None
    fits: bool  # --instances: whether they fit in the memory
    estimate: bool = False  # x32 from sizes: not measured
    binding: str = "memory"  # memory | cores | instances


@dataclass(frozen=True)
class AdviceLine:
    """One workload's (or the mix's) advice: a against the reference b."""

    workload: str
    a: str
    b: str
    text: str
    instances_ratio: float
    speed: stats.Ratio | None  # a's speed per instance over b's
    total: tuple[float, float, float] | None  # a's total throughput over b's, with CI


@dataclass(frozen=True)
class Advice:
    deployment: Deployment
    rows: tuple[AdviceRow, ...]
    lines: tuple[AdviceLine, ...]
    notes: tuple[str, ...] = ()


def _gib(n: float) -> str:
    return f"{stats.short(n / GIB, '.3g')} GiB"


def _speed_values(res: WorkloadResult, values: Sequence[float]) -> list[float]:
    """A primary metric's values as rates (a time becomes runs per second)."""
    return list(values) if res.better == "higher" else [1 / v for v in values if v > 0]


def _unit(res: WorkloadResult) -> str:
    return res.unit if res.better == "higher" else "runs/s"


def _row(res: WorkloadResult, target: str, rss_kb: float, speed: float | None, dep: Deployment,
         estimate: bool = False) -> AdviceRow:
    per = rss_kb * 1024
    fit = int(dep.memory // per) if per > 0 else 0
    instances = dep.instances if dep.instances is not None else fit
    running, binding = instances, "instances" if dep.instances is not None else "memory"
    if dep.cores is not None and dep.cores < running:
        running, binding = dep.cores, "cores"
    if dep.instances is not None and dep.instances > fit:
        running = min(running, fit)
    total = running * speed if speed is not None else None
    used = running * per
    return AdviceRow(res.id, target, rss_kb, instances, running, speed, _unit(res), total,
                     total / (used / GIB) if total is not None and used > 0 else None,
                     speed, dep.instances is None or dep.instances <= fit, estimate, binding)


def _line(res: WorkloadResult, ra: AdviceRow, rb: AdviceRow, speed: stats.Ratio,
          dep: Deployment) -> AdviceLine:
    # rb.running > 0 and ra.running > 0: checked by the caller
    k = ra.running / rb.running
    total = (k * speed.ratio, k * speed.ci_low, k * speed.ci_high)
    inst = (ra.instances / rb.instances - 1) * 100 if rb.instances else math.nan
    where = f"In {_gib(dep.memory)}"
    if dep.instances is not None:
        text = (f"{where}, {dep.instances} {res.id} instances need "
                f"{_gib(ra.rss_kb * 1024 * dep.instances)} on {ra.target} and "
                f"{_gib(rb.rss_kb * 1024 * dep.instances)} on {rb.target}")
        fits = [r.target for r in (ra, rb) if not r.fits]
        if fits:
            text += f" (they do not fit on {', '.join(fits)})"
    else:
        more = "more" if inst >= 0 else "fewer"
        text = (f"{where}, {ra.target} fits {stats.short(abs(inst), '.0f')}% {more} {res.id} "
                f"instances ({ra.instances:,} vs {rb.instances:,})")
        if dep.cores is not None:
            text += f"; {dep.cores} cores run {ra.running:,} vs {rb.running:,} at once"
    sp = (speed.ratio - 1) * 100
    sig = speed.ci_low > 1 or speed.ci_high < 1
    tot = f"{stats.short((total[0] - 1) * 100, '+.0f')}% [{stats.short((total[1] - 1) * 100, '+.0f')}%, " \
          f"{stats.short((total[2] - 1) * 100, '+.0f')}%]"
    speed_words = (f"{stats.short(abs(sp), '.0f')}% {'higher' if sp > 0 else 'lower'} speed per "
                   "instance" if sig else "no significant speed difference per instance")
    joint = "despite" if sig and (sp < 0) != (total[0] < 1) else "with"
    text += f"; total throughput {tot} {joint} {speed_words}"
    if not (total[1] > 1 or total[2] < 1):
        text += " (no significant difference in total)"
    return AdviceLine(res.id, ra.target, rb.target, text, ra.instances / rb.instances
                      if rb.instances else math.nan, speed, total)


def _estimates(doc: RunDoc, res: WorkloadResult, rows: Mapping[str, AdviceRow],
               dep: Deployment) -> list[tuple[AdviceRow, str, AdviceRow]]:
    """Rows for ABIs built but not run here (x32 on a kernel without it): each one's peak RSS
    estimated from its `rss_proxy` of the ABI table (x32's is i386) measured here, plus the
    difference of their static sizes. Returns (estimate, proxy name, the proxy's row)."""
    out = []
    for row in res.rows:
        abi = ABIS.get(row.label)
        if row.n != 0 or abi is None or not abi.rss_proxy:
            continue
        proxy = rows.get(abi.rss_proxy)
        a_proxy, a_self = doc.artifact_of(res.id, abi.rss_proxy), doc.artifact_of(res.id, abi.name)
        if proxy is None or a_proxy is None or a_self is None:
            continue
        s_proxy, s_self = _static(a_proxy.main_sizes()), _static(a_self.main_sizes())
        if s_proxy is None or s_self is None:
            continue
        rss = proxy.rss_kb + (s_self - s_proxy) / 1024
        out.append((_row(res, abi.name, rss, None, dep, estimate=True), abi.rss_proxy, proxy))
    return out


def _static(sizes: Mapping[str, int | None]) -> int | None:
    parts = [sizes.get(k) for k in ("text", "data", "bss")]
    return None if any(p is None for p in parts) else sum(p or 0 for p in parts)


def advise(doc: RunDoc, results: Sequence[WorkloadResult], dep: Deployment) -> Advice:
    rows: list[AdviceRow] = []
    lines: list[AdviceLine] = []
    notes: list[str] = []
    chosen = [r for r in results if not dep.mix or r.id in dep.mix]
    missing = sorted(set(dep.mix) - {r.id for r in results})
    if missing:
        raise UsageError(f"--mix names {', '.join(missing)}, not in this run (it has "
                         f"{', '.join(r.id for r in results)})")
    per_workload: dict[str, dict[str, AdviceRow]] = {}
    for res in chosen:
        if res.validation == "miscompare":
            notes.append(f"{res.id}: left out, its outputs differ between ABIs")
            continue
        mine: dict[str, AdviceRow] = {}
        for row in res.rows:
            if row.n < 2 or row.rss_kb is None or row.summary is None:
                continue
            speed = stats.median(_speed_values(res, doc.values(res.id, row.label,
                                                               res.primary)))
            mine[row.label] = _row(res, row.label, row.rss_kb, speed, dep)
        rows += list(mine.values())
        for est, proxy, proxy_row in _estimates(doc, res, mine, dep):
            rows.append(est)
            notes.append(f"{res.id}: {est.target} was built but not run here: its peak RSS is an "
                         f"estimate, not measured ({proxy}'s {stats.short(proxy_row.rss_kb, '.0f')}"
                         " KiB plus the difference in text+data+bss); its speed is unknown")
        per_workload[res.id] = mine
        for c in res.comparisons:
            ra, rb = mine.get(c.a), mine.get(c.b)
            if ra is None or rb is None or not ra.running or not rb.running:
                if ra is not None and rb is not None:
                    notes.append(f"{res.id}: not one instance fits in {_gib(dep.memory)} on "
                                 f"{c.a if not ra.running else c.b}")
                continue
            # the speed ratio a/b with its CI: the primary comparison, as rates
            r = c.ratio
            rate = r if res.better == "higher" else replace(
                r, ratio=1 / r.ratio, ci_low=1 / r.ci_high, ci_high=1 / r.ci_low,
                hodges_lehmann=1 / r.hodges_lehmann if r.hodges_lehmann else math.nan)
            lines.append(_line(res, ra, rb, rate, dep))
    if dep.mix:
        mixed = _mix_line(results, per_workload, lines, dep)
        if mixed is not None:
            lines.append(mixed)
    return Advice(dep, tuple(rows), tuple(lines), tuple(notes))


def _mix_line(results: Sequence[WorkloadResult], per: Mapping[str, Mapping[str, AdviceRow]],
              lines: Sequence[AdviceLine], dep: Deployment) -> AdviceLine | None:
    """The bundle of the mix: memory per bundle, bundles that fit, speeds normalised to the
    reference's per workload and weighted."""
    by_pair: dict[tuple[str, str], list[AdviceLine]] = {}
    for ln in lines:
        by_pair.setdefault((ln.a, ln.b), []).append(ln)
    for (a, b), mine in by_pair.items():
        if {ln.workload for ln in mine} != set(dep.mix):
            continue
        mem_a = sum(dep.mix[w] * per[w][a].rss_kb * 1024 for w in dep.mix)
        mem_b = sum(dep.mix[w] * per[w][b].rss_kb * 1024 for w in dep.mix)
        n_a, n_b = int(dep.memory // mem_a), int(dep.memory // mem_b)
        if not n_a or not n_b:
            return None
        weight = sum(dep.mix.values())
        sp = {ln.workload: ln.speed for ln in mine if ln.speed is not None}
        mean = [sum(dep.mix[w] * getattr(sp[w], k) for w in dep.mix) / weight
                for k in ("ratio", "ci_low", "ci_high")]
        k = n_a / n_b
        total = (k * mean[0], k * mean[1], k * mean[2])
        mix = ", ".join(f"{w}={stats.short(v, 'g')}" for w, v in dep.mix.items())
        text = (f"In {_gib(dep.memory)}, the mix {mix} fits {n_a:,} bundles on {a} and "
                f"{n_b:,} on {b}; total throughput {stats.short((total[0] - 1) * 100, '+.0f')}% "
                f"[{stats.short((total[1] - 1) * 100, '+.0f')}%, "
                f"{stats.short((total[2] - 1) * 100, '+.0f')}%] (bounds from each workload's "
                f"95% CI; weighted speed per instance {stats.short((mean[0] - 1) * 100, '+.0f')}%)")
        return AdviceLine("mix", a, b, text, k, None, total)
    return None
