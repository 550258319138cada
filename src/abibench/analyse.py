"""From a run's stored samples to per-workload results: summaries, ratios, verdicts, validation.

Works on the versioned run document (store.load_run or an imported JSON file), so every report is
computed from what was stored, never from state that only lived in the measuring process.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from . import stats
from .workloads.profile import BUILTIN_METRICS

# Preferred reference ("b" of every ratio): the 64-bit ABI of the host family.
REFERENCE_ORDER = ("x86_64", "aarch64")


@dataclass(frozen=True)
class TargetRow:
    label: str
    state: str  # ok | failed | timeout | not built | not run
    reason: str | None
    n: int = 0
    summary: stats.Summary | None = None  # of the primary metric, counted samples only
    rss_kb: float | None = None  # median peak RSS
    size: int | None = None  # bytes of the main artifact
    text: int | None = None
    data: int | None = None
    bss: int | None = None
    stripped: int | None = None
    outliers: int = 0
    instructions: int | None = None  # from one run under valgrind, when --counters asked


@dataclass(frozen=True)
class Comparison:
    metric: str
    a: str
    b: str
    ratio: stats.Ratio
    verdict: stats.Verdict
    p_adjusted: float
    values_a: tuple[float, ...] = ()
    values_b: tuple[float, ...] = ()


@dataclass(frozen=True)
class SuiteSummary:
    """Geometric mean over workloads of a's cost relative to b (> 1: b is better overall)."""

    a: str
    b: str
    geomean: stats.GeoMean
    workloads: tuple[str, ...]
    excluded: tuple[str, ...]  # miscompared workloads: never averaged in
    text: str


@dataclass
class WorkloadResult:
    id: str
    title: str
    primary: str
    unit: str
    better: str
    rows: list[TargetRow]
    comparisons: list[Comparison] = field(default_factory=list)
    memory: list[Comparison] = field(default_factory=list)
    validation: str = "unchecked"  # ok | miscompare | unchecked
    validation_detail: str = ""
    stop_reason: str = ""
    warnings: list[str] = field(default_factory=list)
    provenance: list[str] = field(default_factory=list)  # e.g. the Debian versions compared


def _better(value: str) -> stats.Better:
    return "higher" if value == "higher" else "lower"


def pick_reference(labels: list[str]) -> str:
    for ref in REFERENCE_ORDER:
        if ref in labels:
            return ref
    return labels[-1]


def _paired(samples: list[dict[str, Any]], metric: str, a: str, b: str) -> tuple[
        list[float], list[float], bool]:
    """Values of a and b; paired by round when both have every round, else unpaired."""
    va = {s["round"]: _value(s, metric) for s in samples if s["target"] == a}
    vb = {s["round"]: _value(s, metric) for s in samples if s["target"] == b}
    common = sorted(set(va) & set(vb))
    if common and len(common) == len(va) == len(vb):
        return [va[r] for r in common], [vb[r] for r in common], True
    return list(va.values()), list(vb.values()), False


def _value(s: dict[str, Any], metric: str) -> float:
    if metric == "wall":
        return float(s["wall_s"])
    if metric == "max_rss":
        return float(s["max_rss_kb"])
    if metric in ("user", "sys"):
        return float(s[f"{metric}_s"])
    return float(s["metrics"][metric])


def validate_outputs(samples: list[dict[str, Any]], labels: list[str]) -> tuple[str, str]:
    checks: dict[str, set[str]] = {}
    for s in samples:
        if s["status"] == "ok" and s["check"] is not None:
            checks.setdefault(s["target"], set()).add(s["check"])
    if not checks:
        return "unchecked", "no validation value (the profile has no [validate])"
    for t, values in checks.items():
        if len(values) > 1:
            return "miscompare", f"{t} gave {len(values)} different outputs across its own runs"
    distinct = {t: next(iter(v)) for t, v in checks.items()}
    if len(set(distinct.values())) > 1:
        shown = ", ".join(f"{t}={v[:24]}" for t, v in distinct.items())
        return "miscompare", f"outputs differ between ABIs: {shown}"
    missing = [t for t in labels if t not in checks]
    detail = f"identical on {', '.join(sorted(checks))}"
    return "ok", detail + (f" (not checked: {', '.join(missing)})" if missing else "")


def debian_versions(artifacts: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """What Debian's builds of one workload were: the package versions per target, and whether
    the closures were identical; allowed version skew comes back as warnings."""
    debs = [a for a in artifacts if a.get("debian_packages")]
    if not debs:
        return [], []
    notes, warnings = [], []
    versions = {a["target"]: a["debian_packages"] for a in debs}
    distinct = {json.dumps(v, sort_keys=True) for v in versions.values()}
    if len(distinct) == 1:
        pkgs = ", ".join(f"{k} {v}" for k, v in sorted(debs[0]["debian_packages"].items()))
        notes.append(f"Debian packages: {pkgs} on {', '.join(versions)}")
    else:
        for target, v in versions.items():
            notes.append(f"Debian packages on {target}: "
                         + ", ".join(f"{k} {ver}" for k, ver in sorted(v.items())))
    closures = [a.get("debian_closure") or {} for a in debs]
    names = set.intersection(*(set(c) for c in closures))
    differ = sorted(n for n in names if len({c[n] for c in closures}) > 1)
    sizes = "/".join(str(len(c)) for c in closures)
    notes.append(f"dependency closure: {sizes} packages, "
                 + ("every shared package at the same version" if not differ
                    else f"{len(differ)} at different versions: {', '.join(differ)}"))
    for skew in sorted({s for a in debs for s in a.get("version_skew") or []}):
        warnings.append(f"version skew allowed (--allow-version-skew): {skew}")
    return notes, warnings


def _builtin_metric(name: str) -> dict[str, str]:
    """Unit and direction of a runner-measured metric (wall, user, ...) used as the primary:
    run documents list only the metrics a profile declares."""
    known = BUILTIN_METRICS.get(name)
    if known is None:
        return {"unit": "", "better": "lower"}
    return {"unit": known.unit, "better": known.better}


def analyse(doc: dict[str, Any]) -> list[WorkloadResult]:
    config = doc["run"]["config"]
    workloads: dict[str, Any] = config.get("workloads", {})
    samples_all = doc["samples"]
    statuses = doc.get("target_status", [])
    artifacts = doc.get("artifacts", [])
    results: list[WorkloadResult] = []
    for wid, meta in workloads.items():
        primary = meta["primary"]
        minfo = meta["metrics"].get(primary) or _builtin_metric(primary)
        counted = [s for s in samples_all
                   if s["workload"] == wid and not s["warmup"] and s["status"] == "ok"
                   and s.get("kind", "timed") == "timed"]
        counts = {s["target"]: s["instructions"] for s in samples_all
                  if s["workload"] == wid and s.get("kind") == "counters"
                  and s["instructions"] is not None}
        labels = list(meta.get("targets", []))
        rows: list[TargetRow] = []
        for label in labels:
            st = [x for x in statuses if x["workload"] == wid and x["target"] == label]
            state, reason = (st[-1]["state"], st[-1]["reason"]) if st else ("ok", None)
            art = next((a for a in artifacts if a["workload"] == wid and a["target"] == label),
                       None)
            sizes = {}
            if art and art.get("sizes"):
                sizes = art["sizes"][art["files"][0]]
            values = [_value(s, primary) for s in counted if s["target"] == label]
            rss = [float(s["max_rss_kb"]) for s in counted if s["target"] == label]
            summary = stats.summarize(values) if values else None
            rows.append(TargetRow(
                label=label, state=state, reason=reason, n=len(values), summary=summary,
                rss_kb=stats.summarize(rss).median if rss else None,
                size=sizes.get("file"), text=sizes.get("text"), data=sizes.get("data"),
                bss=sizes.get("bss"), stripped=sizes.get("stripped"),
                outliers=sum(stats.outliers(values)) if len(values) >= 5 else 0,
                instructions=counts.get(label)))
        res = WorkloadResult(id=wid, title=meta.get("title", wid), primary=primary,
                             unit=minfo["unit"], better=minfo["better"], rows=rows,
                             stop_reason=_stop_reason(doc, wid))
        res.warnings.extend(_sample_warnings(rows, counted, res.stop_reason))
        notes, skew = debian_versions([a for a in artifacts if a["workload"] == wid])
        res.provenance.extend(notes)
        res.warnings.extend(skew)
        res.validation, res.validation_detail = validate_outputs(
            [s for s in samples_all if s["workload"] == wid], labels)
        measured = [r.label for r in rows if r.n >= 2]
        if len(measured) >= 2:
            ref = pick_reference(measured)
            for other in measured:
                if other == ref:
                    continue
                # Memory is a reduction ("30% smaller" = 0.70x), time a speed-up.
                for metric, better, words, reduction, bucket in (
                        (primary, _better(minfo["better"]), ("faster", "slower"), False,
                         res.comparisons),
                        ("max_rss", "lower", ("smaller", "larger"), True, res.memory)):
                    a, b, paired = _paired(counted, metric, other, ref)
                    try:
                        ratio = stats.compare(a, b, paired=paired)
                    except ValueError as exc:
                        res.warnings.append(f"{metric} {other} vs {ref}: {exc}")
                        continue
                    bucket.append(Comparison(metric, other, ref, ratio,
                                             stats.verdict(ratio, better=_better(better),
                                                           name_a=other,
                                                           name_b=ref, words=words,
                                                           as_reduction=reduction),
                                             ratio.p_value, tuple(a), tuple(b)))
        results.append(res)
    _apply_holm(results)
    return results


SHORT_SAMPLE_S = 0.005  # below this, timer resolution and spawn cost are a visible share
HIGH_CV = 0.10


def _sample_warnings(rows: list[TargetRow], counted: list[dict[str, Any]],
                     stop_reason: str) -> list[str]:
    out = []
    for row in rows:
        walls = [float(s["wall_s"]) for s in counted if s["target"] == row.label]
        if walls and stats.summarize(walls).median < SHORT_SAMPLE_S:
            out.append(f"{row.label}: samples take under 5 ms: spawn cost and timer resolution "
                       "are part of what is measured; give the workload more work")
        if row.summary and row.summary.n >= 3 and row.summary.cv == row.summary.cv \
                and abs(row.summary.cv) > HIGH_CV:
            out.append(f"{row.label}: coefficient of variation {abs(row.summary.cv) * 100:.0f}% "
                       "> 10%: a noisy machine or workload; more rounds narrow the CI")
    if stop_reason.startswith(("time budget", "max ")):
        out.append(f"stopped by budget before reaching the asked precision ({stop_reason})")
    return out


def _stop_reason(doc: dict[str, Any], wid: str) -> str:
    o = doc.get("outcomes", {}).get(wid)
    return f"{o['stop_reason']} ({o['rounds']} counted rounds)" if o else ""


def _apply_holm(results: list[WorkloadResult]) -> None:
    """Adjust p-values across all primary comparisons of the run and redo their verdicts."""
    comps = [(r, i) for r in results for i in range(len(r.comparisons))]
    if not comps:
        return
    adjusted = stats.holm([r.comparisons[i].ratio.p_value for r, i in comps])
    for (r, i), p in zip(comps, adjusted, strict=True):
        c = r.comparisons[i]
        v = stats.verdict(c.ratio, better=_better(r.better), name_a=c.a, name_b=c.b,
                          p_adjusted=p)
        r.comparisons[i] = Comparison(c.metric, c.a, c.b, c.ratio, v, p, c.values_a, c.values_b)


def suite_summary(results: list[WorkloadResult]) -> list[SuiteSummary]:
    """One geometric mean per ABI pair over the primary metrics of every valid workload."""
    pairs: dict[tuple[str, str], list[tuple[WorkloadResult, Comparison]]] = {}
    for r in results:
        for c in r.comparisons:
            pairs.setdefault((c.a, c.b), []).append((r, c))
    out = []
    for (a, b), items in pairs.items():
        valid = [(r, c) for r, c in items if r.validation != "miscompare"]
        excluded = tuple(r.id for r, _ in items if r.validation == "miscompare")
        if not valid:
            continue
        gm = stats.geomean_ratio(
            [(c.values_a, c.values_b, c.ratio.paired) for _, c in valid],
            better=[_better(r.better) for r, _ in valid])
        out.append(SuiteSummary(a, b, gm, tuple(r.id for r, _ in valid), excluded,
                                _suite_text(a, b, gm)))
    return out


def _suite_text(a: str, b: str, gm: stats.GeoMean) -> str:
    # gm is a's cost relative to b: > 1 means b is better.
    if math.isnan(gm.ci_low) or gm.ci_low <= 1.0 <= gm.ci_high:
        return "no significant difference overall"
    if gm.value > 1:
        return (f"{b} is {(gm.value - 1) * 100:.1f}% faster overall "
                f"[{(gm.ci_low - 1) * 100:.1f}%, {(gm.ci_high - 1) * 100:.1f}%]")
    return (f"{a} is {(1 / gm.value - 1) * 100:.1f}% faster overall "
            f"[{(1 / gm.ci_high - 1) * 100:.1f}%, {(1 / gm.ci_low - 1) * 100:.1f}%]")
