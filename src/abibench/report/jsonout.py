"""The report as JSON: the same numbers as every other format, NaN written as null."""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Iterator

from ..analyse.advise import Advice
from ..analyse.explain import Explanation, Interval
from ..analyse.report import CleanRows, Report, SampleRow, WorkloadBlock
from ..codec import spec
from ..jsontext import encoder
from ..records import JSON, JSONDict, Sample
from .samplerows import json_batches

REPORT_FORMAT = "abibench-report"
REPORT_VERSION = 1


def _clean(value: object) -> JSON:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    return str(value)


def to_json(report: Report) -> JSONDict:
    """The whole report as JSON data (samples included)."""
    out = _head(report)
    out["samples"] = [_clean(r.to_dict()) for r in report.samples]
    return out


def _head(report: Report) -> JSONDict:
    """Everything but the samples (an empty list at the end stands for them)."""
    out: dict[str, object] = {
        "format": REPORT_FORMAT, "version": REPORT_VERSION, "kind": report.kind,
        "title": report.title, "generated": report.generated, "tool_version": report.tool_version,
        "sets": [{"tag": s.tag, "source": s.source, "run_id": s.run.id,
                  "started": s.run.started, "status": s.run.status,
                  "host": s.host.to_dict()} for s in report.sets],
        "series": [{"label": s.label, "set": s.tag, "target": s.target, "abi": s.abi,
                    "host": s.host, "kernel_bits": s.kernel_bits} for s in report.series],
        "context": [{"label": r.label, "values": list(r.values)} for r in report.context],
        "calibration": [{"label": r.label, "values": list(r.values)}
                        for r in report.calibration],
        # seed 000's size factor: every artifact per ABI, % the 64-bit build is larger
        "sizes": [{"set": s.tag, **r.to_dict()} for s in report.sets for r in s.sizes],
        "suite": [{"a": sm.a, "b": sm.b, "geomean": sm.geomean.value,
                   "ci_low": sm.geomean.ci_low, "ci_high": sm.geomean.ci_high,
                   "workloads": list(sm.workloads), "excluded": list(sm.excluded),
                   "verdict": sm.text} for sm in report.suites],
        "warnings": report.warnings,
        "workloads": [_workload(b) for b in report.workloads],
        "explanations": [explanation_json(x) for x in report.explanations],
        "advice": advice_json(report.advice) if report.advice is not None else None,
        "samples": [],
    }
    cleaned = _clean(out)
    assert isinstance(cleaned, dict)
    return cleaned


def _workload(b: WorkloadBlock) -> dict[str, object]:
    return {
        "id": b.result.id, "title": b.result.title, "primary": b.result.primary,
        "unit": b.result.unit, "better": b.result.better, "reference": b.reference,
        "params": b.params, "validation": b.result.validation,
        "validation_detail": b.result.validation_detail,
        "stop": [{"set": t, "reason": r} for t, r in b.stop],
        "warnings": b.result.warnings + b.notes,
        "provenance": list(b.result.provenance),
        "targets": [{"label": r.label, "state": r.state, "reason": r.reason, "n": r.n,
                     "summary": r.summary.to_dict() if r.summary else None, "outliers": r.outliers,
                     "peak_rss_kb": r.rss_kb, "tree_peak_rss_kb": r.tree_kb,
                     "memory_kb": dict(r.memory),
                     "file": r.size, "text": r.text,
                     "data": r.data, "bss": r.bss, "stripped": r.stripped,
                     "instructions": r.instructions,
                     "counter": r.counter if r.instructions else None,
                     "emulated": r.emulated, "emulator_peak_rss_kb": r.baseline_rss_kb,
                     "net_peak_rss_kb": r.net_rss_kb} for r in b.result.rows],
        "emulation": list(b.result.emulation),
        "instruction_counts": [{"a": c.a, "b": c.b, "instructions_a": c.count_a,
                                "instructions_b": c.count_b, "ratio": c.ratio,
                                "verdict": c.text} for c in b.result.counts],
        "emulated_memory": [{"a": c.a, "b": c.b, "ratio": c.ratio.ratio,
                             "ci_low": c.ratio.ci_low, "ci_high": c.ratio.ci_high,
                             "verdict": c.verdict.text} for c in b.result.emulated_memory],
        "comparisons": [{
            "metric": d.metric, "unit": d.unit, "better": d.better, "primary": d.primary,
            "a": d.label, "b": d.reference, "ratio": d.ratio, "ci_low": d.ci_low,
            "ci_high": d.ci_high, "p_value": d.p_value,
            "p_adjustment": "holm" if d.primary else "none", "percent_better": d.percent,
            "percent_low": d.pct_low, "percent_high": d.pct_high,
            "significant": d.significant, "verdict": d.verdict, "valid": d.valid}
            for d in b.diffs],
        "memory": [{"metric": c.metric, "a": c.a, "b": c.b, "ratio": c.ratio.ratio,
                    "ci_low": c.ratio.ci_low,
                    "ci_high": c.ratio.ci_high, "p_value": c.ratio.p_value,
                    "verdict": c.verdict.text} for c in b.result.memory],
        "charts": [{"metric": p.metric, "unit": p.unit, "better": p.better,
                    "bars": [{"label": x.label, "state": x.state, "n": x.n,
                              "median": x.median, "ci_low": x.low, "ci_high": x.high}
                             for x in p.bars]} for p in b.panels],
    }


def _interval(r: Interval | None) -> JSON:
    if r is None:
        return None
    return _clean({"ratio": r.value, "low": r.low, "high": r.high})


def explanation_json(x: Explanation) -> JSONDict:
    """One explanation: the words, the rule that chose them, and every number behind them."""
    out = {
        "workload": x.workload, "a": x.a, "b": x.b, "rule": x.rule, "text": x.text,
        "winner": x.winner, "significant": x.significant, "time_ratio": _interval(x.cost),
        "instruction_ratio": _interval(x.instructions),
        "instructions_exact": x.instructions_exact,
        "time_per_instruction_ratio": _interval(x.per_instruction),
        "instructions_a": x.instructions_a, "instructions_b": x.instructions_b,
        "simulation": x.simulation, "cache_model": list(x.cache_model),
        "evidence": [{"name": e.name, "a": e.a, "b": e.b, "ratio": _interval(e.ratio),
                      "simulated": e.simulated, "favours": e.favours} for e in x.evidence],
        "functions": [{"name": f.name, "object": f.object, "whole_object": f.whole,
                       "without_symbols_in": list(f.unnamed), "a": f.a, "b": f.b,
                       "difference": f.diff, "share": f.share, "ratio": f.ratio}
                      for f in x.functions],
    }
    cleaned = _clean(out)
    assert isinstance(cleaned, dict)
    return cleaned


def advice_json(advice: Advice) -> JSONDict:
    dep = advice.deployment
    out = {
        "memory_bytes": dep.memory, "instances": dep.instances, "cores": dep.cores,
        "mix": dict(dep.mix),
        "rows": [{"workload": r.workload, "target": r.target, "peak_rss_kb": r.rss_kb,
                  "instances": r.instances, "running": r.running, "binding": r.binding,
                  "speed": r.speed, "unit": r.unit, "total": r.total, "per_gib": r.per_gib,
                  "per_core": r.per_core, "fits": r.fits, "estimate": r.estimate}
                 for r in advice.rows],
        "advice": [{"workload": ln.workload, "a": ln.a, "b": ln.b, "text": ln.text,
                    "instances_ratio": ln.instances_ratio,
                    "total_ratio": list(ln.total) if ln.total else None} for ln in advice.lines],
        "notes": list(advice.notes),
    }
    cleaned = _clean(out)
    assert isinstance(cleaned, dict)
    return cleaned


def render(report: Report) -> str:
    return "".join(chunks(report))


_SAMPLE = json.JSONEncoder(allow_nan=False, default=str)  # the C encoder: one line a sample
_LINE = encoder(allow_nan=False, default=str)  # the same, made once (jsontext.py)
_BATCH = 2000  # samples per chunk written
_KEYS = tuple(f.key for f in spec(Sample))
_FIELDS = operator.attrgetter(*(f.name for f in spec(Sample)))


def _sample_line(row: SampleRow) -> str:
    """One sample's line: `row.to_dict()` as JSON, a value that is not finite as null."""
    data = row.to_dict()
    try:
        return _SAMPLE.encode(data)
    except ValueError:  # a value that is not finite: null, as everywhere in the report
        return _SAMPLE.encode(_clean(data))


def _fast_line(row: SampleRow) -> str:
    """`_sample_line(row)`, the row's dictionary built from the record's fields in one call
    (the record's own encoder makes a dictionary of each nested value first: 10^6 of them).
    A sample with a nested record (counters) or a value that is not finite takes the general
    way; tests/report/test_sample_lines.py holds the two equal on generated rows."""
    s = row.sample
    if s.counters is not None:
        return _sample_line(row)
    data = {"set": row.set, "run_id": row.run_id, "host": row.host,
            "kernel_bits": row.kernel_bits, "series": row.series}
    data.update(zip(_KEYS, _FIELDS(s), strict=True))
    try:
        return _LINE(data)
    except ValueError:
        return _sample_line(row)


def chunks(report: Report) -> Iterator[str]:
    """The JSON report in pieces, for a stream: the report indented, except its samples,
    each of which is one line (a run holds up to millions of them: the C encoder writes a
    line in microseconds, the indenting one in ten times that, and a stream never holds the
    whole text)."""
    head = json.dumps(_head(report), indent=1, allow_nan=False, default=str)
    tail = '"samples": []\n}'
    assert head.endswith(tail)  # "samples" is the last key, empty: the place for the lines
    if not report.samples:
        yield head + "\n"
        return
    yield head[:-len(tail)] + '"samples": [\n'
    rows = report.samples
    groups = rows.uncleaned_parts() if isinstance(rows, CleanRows) else None
    if groups is not None:  # a report's own rows: written by a plan, cleaned where needed
        first = True
        for text in json_batches(groups, _fast_line):
            yield ("" if first else ",\n") + text
            first = False
        yield "\n ]\n}\n"
        return
    for start in range(0, len(rows), _BATCH):
        lines = ",\n".join(f"  {_fast_line(r)}" for r in rows[start:start + _BATCH])
        yield lines + (",\n" if start + _BATCH < len(rows) else "\n")
    yield " ]\n}\n"
