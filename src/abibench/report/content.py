"""What every report says, computed once: the HTML, Markdown, CSV and JSON renderers only format it.

A report is built from one run document (``from_run``) or from several result sets merged into
one N-way comparison (``from_sets``, see :mod:`abibench.compare`). Either way the per-workload
statistics come from :func:`abibench.analyse.analyse`; this module adds what only the reports
show: every metric of a workload (not only the primary one) compared with the reference, the
per-target bars of the charts (median with a bootstrap 95% CI), and the tables of memory,
sizes, host context and provenance.
"""

from __future__ import annotations

import json
import math
import warnings as _warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from scipy import stats as _sps

from .. import __version__, analyse, footprint, stats, xbench
from ..analyse import SuiteSummary, TargetRow, WorkloadResult
from ..compare import ResultSet, Series, merge
from ..errors import AbibenchError
from . import formatting as fmt
from .sizes import size_rows

REPORT_FORMAT = "abibench-report"
REPORT_VERSION = 1
BUILTIN = ("wall", "user", "sys", "max_rss")
UNITS = {"wall": "s", "user": "s", "sys": "s", "max_rss": "KiB"}


@dataclass(frozen=True)
class SetInfo:
    tag: str
    source: str
    run: dict[str, Any]
    host: dict[str, Any]
    artifacts: list[dict[str, Any]]


@dataclass(frozen=True)
class Bar:
    """One target's median of one metric with the bootstrap 95% CI of that median."""

    label: str
    state: str
    n: int
    median: float
    low: float
    high: float


@dataclass(frozen=True)
class Panel:
    metric: str
    unit: str
    better: str
    primary: bool
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Diff:
    """One metric of one series relative to the reference, in the metric's better direction.

    ``percent`` > 0 means ``label`` is better than the reference by that much: for "higher is
    better" (ratio - 1), for "lower is better" (1 / ratio - 1), both times 100; the CI bounds are
    transformed the same way. Primary metrics carry the Holm-adjusted p-value of the run; the
    other metrics their own p-value, unadjusted.
    """

    workload: str
    metric: str
    unit: str
    better: str
    primary: bool
    label: str
    reference: str
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    percent: float
    pct_low: float
    pct_high: float
    significant: bool
    verdict: str
    valid: bool


@dataclass
class WorkloadBlock:
    result: WorkloadResult
    reference: str | None
    params: dict[str, Any]
    panels: list[Panel]
    diffs: list[Diff]
    notes: list[str] = field(default_factory=list)  # stored warnings about this workload
    stop: list[tuple[str, str]] = field(default_factory=list)  # (set tag, stop reason)


@dataclass
class Report:
    kind: str  # run | comparison
    title: str
    sets: list[SetInfo]
    series: list[Series]
    workloads: list[WorkloadBlock]
    suites: list[SuiteSummary]
    warnings: list[str]
    samples: list[dict[str, Any]]  # one row per stored sample, tagged with set and series
    generated: str = ""
    tool_version: str = __version__
    # Footprint curves and the XBench-style index: a single run's only (empty in comparisons).
    footprint_series: list[footprint.Series] = field(default_factory=list)
    footprint_diffs: list[footprint.Difference] = field(default_factory=list)
    index: xbench.Index | None = None  # None unless at least two micro workloads were scored

    def series_index(self, label: str) -> int:
        for i, s in enumerate(self.series):
            if s.label == label:
                return i
        return len(self.series)


# --------------------------------------------------------------------------- statistics helpers


def median_ci(values: list[float], seed: int = 0) -> tuple[float, float]:
    """Bootstrap percentile 95% CI of the median (nan without at least two distinct values)."""
    if len(values) < 2:
        return math.nan, math.nan
    arr = np.asarray(values, dtype=np.float64)
    if float(arr.min()) == float(arr.max()):
        return float(arr[0]), float(arr[0])
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        res = _sps.bootstrap((arr,), np.median, n_resamples=2000, method="percentile",
                             confidence_level=0.95, rng=np.random.default_rng(seed),
                             vectorized=True)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def percent_better(ratio: float, low: float, high: float, better: str,
                   reduction: bool = False) -> tuple[float, float, float]:
    """(percent, low, high) of a relative to b, positive when a is better.

    A time is a speed-up (b's time over a's, minus one); a ``reduction`` such as
    memory is the share of b's value that a saves, as the verdict words it.
    """
    if better == "higher":
        return (ratio - 1) * 100, (low - 1) * 100, (high - 1) * 100
    if reduction:
        return (1 - ratio) * 100, (1 - high) * 100, (1 - low) * 100
    inv = [1 / x if x else math.nan for x in (ratio, high, low)]
    return (inv[0] - 1) * 100, (inv[1] - 1) * 100, (inv[2] - 1) * 100


def _counted(s: dict[str, Any]) -> bool:
    return s["status"] == "ok" and not s["warmup"] and s.get("kind", "timed") == "timed"


def _value(s: dict[str, Any], metric: str) -> float | None:
    if metric == "max_rss":
        return float(s["max_rss_kb"])
    if metric in ("wall", "user", "sys"):
        return float(s[f"{metric}_s"])
    v = s["metrics"].get(metric)
    return None if v is None else float(v)


def _by_round(samples: list[dict[str, Any]], label: str, metric: str) -> dict[int, float]:
    out = {}
    for s in samples:
        if s["target"] == label:
            v = _value(s, metric)
            if v is not None and math.isfinite(v):
                out[int(s["round"])] = v
    return out


MEMORY_UNITS = ("B", "bytes", "KiB", "MiB", "GiB", "kB", "KB", "MB", "GB")
TIME_UNITS = ("s", "ms", "us", "µs", "ns", "cycles")


def _words(unit: str, better: str) -> tuple[str, str]:
    """How a verdict names the winner's advantage for a metric of this unit."""
    if unit in MEMORY_UNITS:
        return ("smaller", "larger") if better == "lower" else ("larger", "smaller")
    if unit in TIME_UNITS or (better == "higher" and "/s" in unit):
        return ("faster", "slower")
    return ("better", "worse")


def _secondary_diff(samples: list[dict[str, Any]], wid: str, metric: str, unit: str, better: str,
                    label: str, ref: str, valid: bool) -> Diff | None:
    va, vb = _by_round(samples, label, metric), _by_round(samples, ref, metric)
    if len(va) < 2 or len(vb) < 2:
        return None
    common = sorted(set(va) & set(vb))
    paired = bool(common) and len(common) == len(va) == len(vb)
    a = [va[r] for r in common] if paired else list(va.values())
    b = [vb[r] for r in common] if paired else list(vb.values())
    try:
        r = stats.compare(a, b, paired=paired)
    except ValueError:
        return None
    words = _words(unit, better)
    reduction = words[0] == "smaller"
    v = stats.verdict(r, better="higher" if better == "higher" else "lower", name_a=label,
                      name_b=ref, words=words, as_reduction=reduction)
    pct = percent_better(r.ratio, r.ci_low, r.ci_high, better, reduction=reduction)
    return Diff(wid, metric, unit, better, False, label, ref, r.ratio, r.ci_low, r.ci_high,
                r.p_value, *pct, v.significant, v.text, valid)


# --------------------------------------------------------------------------- building


def _block(res: WorkloadResult, meta: dict[str, Any], samples: list[dict[str, Any]],
           reference: str | None) -> WorkloadBlock:
    counted = [s for s in samples if s["workload"] == res.id and _counted(s)]
    valid = res.validation != "miscompare"
    metrics: dict[str, dict[str, str]] = meta.get("metrics", {})
    order = [res.primary] + [m for m in metrics if m != res.primary and m not in BUILTIN]
    panels: list[Panel] = []
    for metric in [*order, "max_rss"]:
        info = metrics.get(metric, {})
        unit = info.get("unit", UNITS.get(metric, ""))
        better = "lower" if metric == "max_rss" else info.get("better", "lower")
        bars = []
        for row in res.rows:
            vals = list(_by_round(counted, row.label, metric).values())
            if vals:
                lo, hi = median_ci(vals)
                bars.append(Bar(row.label, row.state, len(vals), float(np.median(vals)), lo, hi))
            else:
                bars.append(Bar(row.label, state_of(row), 0, math.nan, math.nan, math.nan))
        panels.append(Panel(metric, unit, better, metric == res.primary, tuple(bars)))

    diffs: list[Diff] = []
    for c in res.comparisons:
        pct = percent_better(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high, res.better)
        diffs.append(Diff(res.id, res.primary, res.unit, res.better, True, c.a, c.b,
                          c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high, c.p_adjusted, *pct,
                          c.verdict.significant, c.verdict.text, valid))
    if reference is not None:
        for metric in order[1:]:
            info = metrics[metric]
            for row in res.rows:
                if row.label == reference:
                    continue
                d = _secondary_diff(counted, res.id, metric, info.get("unit", ""),
                                    info.get("better", "lower"), row.label, reference, valid)
                if d is not None:
                    diffs.append(d)
    return WorkloadBlock(res, reference, dict(meta.get("params", {})), panels, diffs)


def _reference_of(res: WorkloadResult) -> str | None:
    if res.comparisons:
        return res.comparisons[0].b
    measured = [r.label for r in res.rows if r.n >= 2]
    return analyse.pick_reference(measured) if measured else None


def _set_info(rs: ResultSet) -> SetInfo:
    doc = rs.doc
    return SetInfo(rs.tag, rs.source, doc["run"], doc.get("host", {}), doc.get("artifacts", []))


def _sample_rows(sets: list[ResultSet], series: list[Series]) -> list[dict[str, Any]]:
    label = {(s.set_index, s.target): s.label for s in series}
    rows = []
    for i, rs in enumerate(sets):
        host = rs.doc.get("host", {})
        for s in rs.doc["samples"]:
            rows.append({"set": rs.tag, "run_id": rs.doc["run"]["id"],
                         "host": host.get("hostname"), "kernel_bits": host.get("kernel_bits"),
                         "series": label.get((i, s["target"]), s["target"]), **s})
    return rows


def _single_series(doc: dict[str, Any]) -> list[Series]:
    host = doc.get("host", {})
    labels: list[str] = []
    for meta in doc["run"]["config"].get("workloads", {}).values():
        labels += [t for t in meta.get("targets", []) if t not in labels]
    return [Series(t, 0, "", t, t.split("/", 1)[0], str(host.get("hostname") or "?"),
                   host.get("kernel_bits")) for t in labels]


def from_run(doc: dict[str, Any], source: str = "",
             results: list[WorkloadResult] | None = None) -> Report:
    """The report of one run; ``results`` may be passed when analyse already ran."""
    results = analyse.analyse(doc) if results is None else results
    workloads = doc["run"]["config"].get("workloads", {})
    blocks = [_block(r, workloads.get(r.id, {}), doc["samples"], _reference_of(r))
              for r in results]
    for b in blocks:
        b.notes = [w["message"] for w in doc.get("warnings", [])
                   if w.get("workload") == b.result.id]
        o = doc.get("outcomes", {}).get(b.result.id)
        if o:
            b.stop = [("", f"{o['stop_reason']} ({o['rounds']} counted rounds)")]
    rs = ResultSet(doc, source or f"run {doc['run']['id']}")
    series = _single_series(doc)
    curves = footprint.series(doc)
    return Report(
        kind="run", title=f"abibench run {doc['run']['id']}", sets=[_set_info(rs)],
        series=series, workloads=blocks, suites=analyse.suite_summary(results),
        warnings=[w["message"] for w in doc.get("warnings", []) if not w.get("workload")],
        samples=_sample_rows([rs], series), generated=_now(),
        footprint_series=curves, footprint_diffs=footprint_differences(curves),
        index=index_of(doc))


def footprint_differences(curves: list[footprint.Series]) -> list[footprint.Difference]:
    """Every other ABI against the 64-bit one at the largest N both measured."""
    abis = sorted({c.abi for c in curves})
    if len(abis) < 2:
        return []
    ref = analyse.pick_reference(abis)
    return [d for a in abis if a != ref for d in footprint.largest_n_difference(curves, a, ref)]


def index_of(doc: dict[str, Any]) -> xbench.Index | None:
    """The XBench-style index when it scores at least two workloads (as the CLI prints it)."""
    index = xbench.xbench_index(doc)
    return index if len({t.workload for t in index.tests}) >= 2 else None


def from_sets(sets: list[ResultSet], baseline: str | None = None,
              tags: list[str] | None = None) -> Report:
    """One report over several result sets (an N-way comparison), or of one run."""
    if len(sets) == 1:
        if baseline:
            raise AbibenchError("--baseline needs two or more result sets; a single run is "
                                "always compared with its 64-bit ABI")
        return from_run(sets[0].doc, sets[0].source)
    merged = merge(sets, baseline, tags)
    tagged = [ResultSet(rs.doc, rs.source, tag) for rs, tag in zip(sets, merged.tags, strict=True)]
    results = analyse.analyse(merged.doc)
    order = {s.label: i for i, s in enumerate(merged.series)}
    blocks = []
    for res in results:
        ref = merged.references.get(res.id)
        if any(c.b != ref for c in res.comparisons):
            raise AbibenchError(f"internal: {res.id} was compared with another reference than "
                                f"{ref}; please report this bug")
        res.rows.sort(key=lambda r: order.get(r.label, len(order)))
        blk = _block(res, merged.doc["run"]["config"]["workloads"][res.id],
                     merged.doc["samples"], ref)
        blk.notes = [w["message"] for w in merged.doc["warnings"] if w.get("workload") == res.id]
        for rs in tagged:
            o = rs.doc.get("outcomes", {}).get(res.id)
            if o:
                blk.stop.append((rs.tag, f"{o['stop_reason']} ({o['rounds']} counted rounds)"))
        blocks.append(blk)
    n = len(sets)
    return Report(
        kind="comparison", title=f"abibench comparison of {n} result sets",
        sets=[_set_info(rs) for rs in tagged], series=merged.series, workloads=blocks,
        suites=analyse.suite_summary(results),
        warnings=[w["message"] for w in merged.doc["warnings"] if not w.get("workload")]
        + merged.warnings,
        samples=_sample_rows(tagged, merged.series), generated=_now())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- shared views


def score_text(score: float, low: float, high: float) -> str:
    """An XBench score with its 95% CI: "95.3 [93.1, 97.0]"."""
    if not math.isfinite(score):
        return "-"
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{score:.1f} (no CI)"
    return f"{score:.1f} [{low:.1f}, {high:.1f}]"


def index_rows(index: xbench.Index) -> list[tuple[str, str, list[str]]]:
    """The index as (kind, name, one score per target) rows: kind total | group | test."""
    names = dict(xbench.GROUPS)

    def cells(items: list[xbench.TestScore] | list[xbench.GroupScore]) -> list[str]:
        by = {x.target: x for x in items}
        return [score_text(by[t].score, by[t].ci_low, by[t].ci_high) if t in by else "-"
                for t in index.targets]

    rows = [("total", "Results (all tests)", cells(list(index.totals)))]
    for group in dict.fromkeys(g.group for g in index.groups):
        rows.append(("group", f"{names.get(group, group.title())} Test",
                     cells([g for g in index.groups if g.group == group])))
        mine = [t for t in index.tests if t.group == group]
        several = {w for w in (t.workload for t in mine)
                   if len({t.metric for t in mine if t.workload == w}) > 1}
        for key in dict.fromkeys((t.workload, t.metric) for t in mine):
            name = f"{key[0]} {key[1]}" if key[0] in several else key[0]
            rows.append(("test", name, cells([t for t in mine if (t.workload, t.metric) == key])))
    return rows


def footprint_percent(d: footprint.Difference) -> str:
    """The largest-N peak RSS change of a against b with its 95% CI."""
    r = d.ratio
    if not (math.isfinite(r.ci_low) and math.isfinite(r.ci_high)):
        return f"{d.percent:+.1f}% (no CI)"
    return f"{d.percent:+.1f}% [{(r.ci_low - 1) * 100:+.1f}%, {(r.ci_high - 1) * 100:+.1f}%]"


def state_of(row: TargetRow) -> str:
    """A target's state in words; "ok" without a single counted sample says so."""
    if row.state == "ok" and row.n == 0:
        return "no samples"
    return row.state


def better_words(better: str) -> str:
    return "higher is better" if better == "higher" else "lower is better"


def primary_diff(block: WorkloadBlock, label: str) -> Diff | None:
    return next((d for d in block.diffs if d.primary and d.label == label), None)


def references(report: Report) -> list[str]:
    refs: list[str] = []
    for b in report.workloads:
        if b.reference and b.reference not in refs:
            refs.append(b.reference)
    return refs


def _kv(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


KNOWN_HOST = ("hostname", "cpu_model", "cpus_online", "mem_total_kb", "machine",
              "kernel_release", "kernel_version", "kernel_bits", "kernel_x32", "governor", "turbo",
              "virtualization", "load_average", "os_release", "libc", "compilers", "python",
              "probe")


def _abi_flags(artifacts: list[dict[str, Any]]) -> str:
    seen: dict[str, str] = {}
    for a in artifacts:
        t = a["target"]
        if t not in seen:
            eff = a.get("effective") or {}
            picked = [f"{k}={v}" if v not in ("enabled", "disabled") else
                      (k if v == "enabled" else "")
                      for k, v in sorted(eff.items()) if k in ("-march", "-mfpmath", "-msse2")]
            flags = " ".join(a.get("abi_flags") or [])
            extra = " ".join(p for p in picked if p)
            seen[t] = f"{t}: {flags}" + (f" (effective {extra})" if extra else "")
    return "; ".join(seen.values()) or "-"


def _probe(host: dict[str, Any]) -> str:
    parts = []
    for p in host.get("probe") or []:
        if not isinstance(p, dict):
            continue
        can = "build and run" if p.get("can_run") else (
            "build only" if p.get("can_build") else "neither build nor run")
        why = f" ({p['reason']})" if p.get("reason") else ""
        parts.append(f"{p.get('abi')}: {can}{why}")
    return "; ".join(parts) or "-"


def context_rows(report: Report) -> list[tuple[str, list[str]]]:
    """The host context as (label, one value per result set) rows."""
    rows: list[tuple[str, list[str]]] = []

    def add(label: str, values: list[str]) -> None:
        if any(v not in ("", "-") for v in values):
            rows.append((label, values))

    hosts = [s.host for s in report.sets]
    add("host", [_kv(h.get("hostname")) for h in hosts])
    add("CPU", [f"{_kv(h.get('cpu_model'))}, {_kv(h.get('cpus_online'))} CPUs online"
                for h in hosts])
    add("memory", [fmt.kib(h["mem_total_kb"]) if isinstance(h.get("mem_total_kb"), int) else "-"
                   for h in hosts])
    add("kernel", [f"{_kv(h.get('kernel_release'))} ({_kv(h.get('kernel_bits'))}-bit "
                   f"{_kv(h.get('machine'))}) {_kv(h.get('kernel_version'))}" for h in hosts])
    add("x32 system calls", [{"y": "enabled", "n": "not enabled"}.get(str(h.get("kernel_x32")),
                                                                     _kv(h.get("kernel_x32")))
                             for h in hosts])
    add("CPU governor", [_kv(h.get("governor")) if h.get("governor") else "not exposed"
                         for h in hosts])
    add("turbo / boost", [_kv(h.get("turbo")) if h.get("turbo") is not None else "not exposed"
                          for h in hosts])
    add("virtualization", [_kv(h.get("virtualization")) if h.get("virtualization")
                           else "none detected" for h in hosts])
    add("load at start", [" ".join(f"{x:.2f}" for x in h.get("load_average") or [])
                          for h in hosts])
    add("OS", [_kv(h.get("os_release")) for h in hosts])
    add("C library", [_kv(h.get("libc")) for h in hosts])
    add("compilers", ["; ".join(f"{k}: {v}" for k, v in (h.get("compilers") or {}).items())
                      for h in hosts])
    add("Python", [_kv(h.get("python")) for h in hosts])
    add("ABIs on this host", [_probe(h) for h in hosts])
    add("abibench", [_kv(s.run.get("tool_version")) for s in report.sets])
    add("flags (every ABI)", [" ".join(s.run["config"].get("cflags") or []) or "-"
                              for s in report.sets])
    add("flags per ABI", [_abi_flags(s.artifacts) for s in report.sets])
    add("compiler used", ["; ".join(sorted({a["compiler_version"] for a in s.artifacts
                                            if a.get("compiler_version")})) for s in report.sets])
    add("workload sources", ["; ".join(sorted({
        f"{a['workload']}: {a['source_package']} {a.get('source_version') or ''}".strip()
        for a in s.artifacts if a.get("source_package")})) for s in report.sets])
    # A program's own account of how it was built, e.g. OpenSSL's "options:" line of
    # `openssl version -a`, recorded by its profile as the artifact's build_options.
    add("build options", ["; ".join(sorted({
        f"{a['workload']} ({a['target']}): {_kv(a['build_options'])}"
        for a in s.artifacts if a.get("build_options")})) or "-" for s in report.sets])
    add("run", [f"{s.run.get('started')} → {_kv(s.run.get('finished'))}, "
                f"{_kv(s.run.get('status'))}" for s in report.sets])
    add("plan", [", ".join(f"{k}={v}" for k, v in (s.run["config"].get("plan") or {}).items())
                 for s in report.sets])
    extra = sorted({k for h in hosts for k in h if k not in KNOWN_HOST})
    for key in extra:
        add(key, [_kv(h.get(key)) for h in hosts])
    return rows


KNOWN_ARTIFACT = ("workload", "target", "cached", "abi", "provenance", "bin_dir", "files",
                  "cache_key", "compiler", "compiler_version", "cflags", "abi_flags", "commands",
                  "effective", "build_seconds", "sizes", "elf", "log", "source_package",
                  "source_version", "data", "debian_packages", "debian_closure", "version_skew")


def provenance_rows(artifact: dict[str, Any]) -> list[tuple[str, str]]:
    """What one artifact is and how it was made, as (label, text) rows."""
    a = artifact
    rows: list[tuple[str, str]] = [("provenance", _kv(a.get("provenance", "source")))]
    if a.get("source_package"):
        rows.append(("source", f"{a['source_package']} {a.get('source_version') or ''}".strip()))
    for key, label in (("compiler_version", "compiler"), ("build_seconds", "build seconds"),
                       ("cached", "reused from cache"), ("cache_key", "cache key")):
        if a.get(key) is not None:
            rows.append((label, _kv(a[key])))
    if a.get("cflags") is not None:
        rows.append(("flags", " ".join([*(a.get("abi_flags") or []), *a["cflags"]])))
    if a.get("effective"):
        rows.append(("effective target options", " ".join(
            f"{k}={v}" for k, v in sorted(a["effective"].items()))))
    for cmd in a.get("commands") or []:
        rows.append(("command", _kv(cmd)))
    for key, label in (("debian_packages", "Debian packages"),
                       ("debian_closure", "sysroot packages")):
        pkgs = a.get(key)
        if isinstance(pkgs, dict) and pkgs:
            rows.append((f"{label} ({len(pkgs)})",
                         ", ".join(f"{k} {v}" for k, v in sorted(pkgs.items()))))
    if a.get("version_skew"):
        rows.append(("version skew allowed", "; ".join(map(str, a["version_skew"]))))
    for name, elf in (a.get("elf") or {}).items():
        if isinstance(elf, dict):
            rows.append((f"ELF {name}", f"class {_kv(elf.get('elf_class'))}, "
                         f"{_kv(elf.get('machine'))}, interpreter {_kv(elf.get('interpreter'))},"
                         f" needs {', '.join(map(str, elf.get('needed') or [])) or '-'}"))
    for key in sorted(k for k in a if k not in KNOWN_ARTIFACT):
        rows.append((key, _kv(a[key])))
    return rows


# --------------------------------------------------------------------------- JSON


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _summary_dict(s: stats.Summary | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"n": s.n, "median": s.median, "mean": s.mean, "stdev": s.stdev, "min": s.min,
            "max": s.max, "mad": s.mad, "cv": s.cv}


def to_json(report: Report) -> dict[str, Any]:
    """The report as data: the same numbers as every other format, NaN written as null."""
    out = {
        "format": REPORT_FORMAT, "version": REPORT_VERSION, "kind": report.kind,
        "title": report.title, "generated": report.generated, "tool_version": report.tool_version,
        "sets": [{"tag": s.tag, "source": s.source, "run_id": s.run["id"],
                  "started": s.run.get("started"), "status": s.run.get("status"),
                  "host": s.host} for s in report.sets],
        "series": [{"label": s.label, "set": s.tag, "target": s.target, "abi": s.abi,
                    "host": s.host, "kernel_bits": s.kernel_bits} for s in report.series],
        "context": [{"label": k, "values": v} for k, v in context_rows(report)],
        # seed 000's size factor: every artifact per ABI, % the 64-bit build is larger
        "sizes": [{"set": s.tag, **r.to_dict()} for s in report.sets
                  for r in size_rows({"artifacts": s.artifacts})],
        "suite": [{"a": sm.a, "b": sm.b, "geomean": sm.geomean.value,
                   "ci_low": sm.geomean.ci_low, "ci_high": sm.geomean.ci_high,
                   "workloads": list(sm.workloads), "excluded": list(sm.excluded),
                   "verdict": sm.text} for sm in report.suites],
        "warnings": report.warnings,
        "workloads": [{
            "id": b.result.id, "title": b.result.title, "primary": b.result.primary,
            "unit": b.result.unit, "better": b.result.better, "reference": b.reference,
            "params": b.params, "validation": b.result.validation,
            "validation_detail": b.result.validation_detail,
            "stop": [{"set": t, "reason": r} for t, r in b.stop],
            "warnings": b.result.warnings + b.notes,
            "provenance": list(b.result.provenance),
            "targets": [{"label": r.label, "state": r.state, "reason": r.reason, "n": r.n,
                         "summary": _summary_dict(r.summary), "outliers": r.outliers,
                         "peak_rss_kb": r.rss_kb, "file": r.size, "text": r.text,
                         "data": r.data, "bss": r.bss, "stripped": r.stripped,
                         "instructions": r.instructions} for r in b.result.rows],
            "comparisons": [{
                "metric": d.metric, "unit": d.unit, "better": d.better, "primary": d.primary,
                "a": d.label, "b": d.reference, "ratio": d.ratio, "ci_low": d.ci_low,
                "ci_high": d.ci_high, "p_value": d.p_value,
                "p_adjustment": "holm" if d.primary else "none", "percent_better": d.percent,
                "percent_low": d.pct_low, "percent_high": d.pct_high,
                "significant": d.significant, "verdict": d.verdict, "valid": d.valid}
                for d in b.diffs],
            "memory": [{"a": c.a, "b": c.b, "ratio": c.ratio.ratio, "ci_low": c.ratio.ci_low,
                        "ci_high": c.ratio.ci_high, "p_value": c.ratio.p_value,
                        "verdict": c.verdict.text} for c in b.result.memory],
            "charts": [{"metric": p.metric, "unit": p.unit, "better": p.better,
                        "bars": [{"label": x.label, "state": x.state, "n": x.n,
                                  "median": x.median, "ci_low": x.low, "ci_high": x.high}
                                 for x in p.bars]} for p in b.panels],
        } for b in report.workloads],
        "samples": report.samples,
    }
    cleaned: dict[str, Any] = _clean(out)
    return cleaned


def json_text(report: Report) -> str:
    return json.dumps(to_json(report), indent=1, allow_nan=False, default=str) + "\n"
