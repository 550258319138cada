"""`abibench export --format hyperfine|pyperf`: a run's timed samples in the JSON two tools
people already plot and compare with, so their scripts work on abibench's data.

Both tools time whole processes, as abibench does; what is exported is every counted sample's
wall time (Sample.counted: no warm-up, no failed, discarded or counter sample), whatever the
workload's primary metric (a rate a program prints has no place in either format), one entry
per workload and target:

* hyperfine (`--export-json`): {"results": [{"command", "mean", "stddev", "median", "user",
  "system", "min", "max", "times", "exit_codes"}]}, seconds; stddev is the sample standard
  deviation (n - 1), null for one time, as hyperfine writes it;
* pyperf (a BenchmarkSuite, format "1.0"): {"version": "1.0", "metadata": {...}, "benchmarks":
  [{"metadata": {"name", "unit": "second", "loops": 1, ...}, "runs": [{"metadata": {"date"},
  "values": [wall]}]}]}: one pyperf run per sample, since every sample is its own process as a
  pyperf worker is. A benchmark is named "WORKLOAD [TARGET]", or WORKLOAD alone when one target
  is exported (`--abi`), so that `pyperf compare_to i386.json x86_64.json` pairs them.

Names come from the run (an import may hold anything): they pass `text.one_line`; pyperf refuses
an empty metadata value or one with a line break, so such values are left out.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence

from ..errors import UsageError
from ..records import RunDoc, Sample
from ..text import one_line

FORMATS = ("hyperfine", "pyperf")
JSONDict = dict[str, object]


def _timed(doc: RunDoc, workload: str, target: str) -> list[Sample]:
    return [s for s in doc.counted(workload, target)
            if math.isfinite(s.wall_s) and s.wall_s > 0]


def series(doc: RunDoc, workload: str | None = None,
           abi: str | None = None) -> list[tuple[str, str, list[Sample]]]:
    """(workload, target, samples) of every pair the selection names that has timed samples;
    UsageError naming what the run has when the selection matches nothing."""
    if workload is not None and workload not in doc.workloads:
        raise UsageError(f"--workload {one_line(workload)} is not in run {doc.id} (it has "
                         f"{one_line(', '.join(sorted(doc.workloads)))})")
    out = []
    for w in sorted(doc.workloads):
        if workload is not None and w != workload:
            continue
        for t in doc.workloads[w].targets:
            if abi is not None and t != abi:
                continue
            samples = _timed(doc, w, t)
            if samples:
                out.append((w, t, samples))
    if not out:
        targets = sorted({t for m in doc.workloads.values() for t in m.targets})
        raise UsageError(f"run {doc.id} has no counted timed samples"
                         + (f" of --abi {one_line(abi)} (its targets: "
                            f"{one_line(', '.join(targets))})" if abi is not None else "")
                         + ": nothing to export in this format")
    return out


def _label(workload: str, target: str, one_target: bool) -> str:
    return one_line(workload if one_target else f"{workload} [{target}]")


def hyperfine_result(name: str, samples: Sequence[Sample]) -> JSONDict:
    times = [s.wall_s for s in samples]
    return {"command": name, "mean": statistics.fmean(times),
            "stddev": statistics.stdev(times) if len(times) > 1 else None,
            "median": statistics.median(times),
            "user": statistics.fmean([s.user_s for s in samples]),
            "system": statistics.fmean([s.sys_s for s in samples]),
            "min": min(times), "max": max(times), "times": times,
            "exit_codes": [s.exit_code for s in samples]}


def hyperfine(doc: RunDoc, workload: str | None = None, abi: str | None = None) -> JSONDict:
    return {"results": [hyperfine_result(_label(w, t, abi is not None), ss)
                        for w, t, ss in series(doc, workload, abi)]}


def _metadata(items: dict[str, object]) -> dict[str, object]:
    """What pyperf accepts as metadata: numbers, and strings that are one non-empty line."""
    out: dict[str, object] = {}
    for key, value in items.items():
        if isinstance(value, str):
            value = one_line(value).strip()
            if not value:
                continue
        elif not isinstance(value, int | float) or isinstance(value, bool):
            continue
        out[key] = value
    return out


def pyperf(doc: RunDoc, workload: str | None = None, abi: str | None = None) -> JSONDict:
    host = doc.host
    common = _metadata({"hostname": host.hostname or "", "cpu_model_name": host.cpu_model or "",
                        "cpu_count": host.cpus_online or 0,
                        "platform": f"{host.kernel_release or ''} {host.machine or ''}".strip(),
                        "abibench_run": doc.id, "abibench_version": doc.run.tool_version})
    if not isinstance(common.get("cpu_count"), int) or common.get("cpu_count") == 0:
        common.pop("cpu_count", None)
    benchmarks = []
    for w, t, samples in series(doc, workload, abi):
        meta = _metadata({"name": _label(w, t, abi is not None), "unit": "second", "loops": 1,
                          "description": doc.workloads[w].title, "abibench_target": t})
        runs = [{"metadata": _metadata({"date": s.started_at}), "values": [s.wall_s]}
                for s in samples]
        benchmarks.append({"metadata": meta, "runs": runs})
    return {"version": "1.0", "metadata": common, "benchmarks": benchmarks}


def render(doc: RunDoc, fmt: str, workload: str | None = None, abi: str | None = None) -> str:
    """The run in one of FORMATS, as JSON text."""
    made = hyperfine(doc, workload, abi) if fmt == "hyperfine" else pyperf(doc, workload, abi)
    return json.dumps(made, indent=1, allow_nan=False) + "\n"
