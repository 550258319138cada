"""Run documents made for tests: synthetic runs, documents whose every string is rewritten
(hostile text), and typed documents from partial samples. Plain functions, so that bench/ scripts
use them too; tests/conftest.py hands them to tests as fixtures and re-exports them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from abibench.records import BUILTIN_METRICS, HostContext, Run, RunConfig, RunDoc, Sample, WorkloadMeta


def synthetic_doc(*, run_id: str = "20260101-000000-aaaa", host: str = "vm", kernel_bits: int = 64,
             targets: tuple[str, ...] = ("i386", "x86_64"),
             workloads: dict[str, dict[str, float]] | None = None, rounds: int = 8,
             noise: float = 0.01, seed: int = 1, started: str = "2026-01-01T00:00:00+00:00",
             params: dict[str, str] | None = None) -> dict[str, Any]:
    """A valid run document: ``workloads`` maps workload id -> {target: true rate}.

    Every workload has a primary metric ``rate`` (higher is better), a secondary ``time``
    (lower is better, 1/rate) and a constant check value, so outputs validate.
    """
    workloads = workloads or {"alpha": {"i386": 90.0, "x86_64": 100.0},
                              "beta": {"i386": 120.0, "x86_64": 100.0}}
    rng = np.random.default_rng(seed)
    config_workloads: dict[str, Any] = {}
    samples: list[dict[str, Any]] = []
    artifacts: list[dict[str, Any]] = []
    for wid, rates in workloads.items():
        config_workloads[wid] = {
            "title": f"{wid} workload", "primary": "rate", "params": dict(params or {"n": "1"}),
            "seeds": [], "targets": list(targets),
            "metrics": {"rate": {"unit": "ops/s", "better": "higher"},
                        "time": {"unit": "s", "better": "lower"},
                        "wall": {"unit": "s", "better": "lower"},
                        "max_rss": {"unit": "KiB", "better": "lower"}}}
        for t in targets:
            bits = 32 if t != "x86_64" else 64
            artifacts.append({
                "workload": wid, "target": t, "cached": False, "abi": t, "provenance": "source",
                "files": [wid], "compiler_version": "gcc 12", "cflags": ["-O2"],
                "abi_flags": ["-m32" if bits == 32 else "-m64"], "commands": [f"gcc {wid}.c"],
                "effective": {"-march": "i686" if bits == 32 else "x86-64"},
                "build_seconds": 0.1,
                "sizes": {wid: {"file": 15000 + bits * 40, "text": 3000 + bits * 10, "data": 600,
                                "bss": 8, "stripped": 14000}},
                "elf": {wid: {"elf_class": bits, "machine": "EM_386" if bits == 32 else
                              "EM_X86_64", "interpreter": "/lib/ld", "needed": ["libc.so.6"]}}})
        for r in range(rounds + 1):
            order = list(targets) if r % 2 == 0 else list(reversed(targets))
            for pos, t in enumerate(order):
                if t not in rates:
                    continue
                rate = rates[t] * (1 + noise * float(rng.standard_normal()))
                samples.append({
                    "run_id": run_id, "workload": wid, "target": t, "round": r, "position": pos,
                    "warmup": r == 0, "status": "ok", "exit_code": 0, "wall_s": 1.0 / rate,
                    "user_s": 0.9 / rate, "sys_s": 0.0,
                    "max_rss_kb": 2000 if t != "x86_64" else 3000,
                    "stdout_digest": "d" * 64, "check": "42",
                    "metrics": {"rate": rate, "time": 1.0 / rate}, "error": None,
                    "started_at": started, "env_pad": pos, "instructions": None,
                    "kind": "timed"})
    status = [{"workload": wid, "target": t, "state": "not run", "reason": "cannot run here"}
              for wid, rates in workloads.items() for t in targets if t not in rates]
    assert all(math.isfinite(s["wall_s"]) for s in samples)
    return {
        "format": "abibench-run", "version": 1,
        "run": {"id": run_id, "started": started, "finished": started, "status": "complete",
                "tool_version": "0.1.0",
                "config": {"abis": list(targets), "cflags": ["-O2"], "cc": None,
                           "plan": {"min_rounds": rounds}, "workloads": config_workloads}},
        "host": {"hostname": host, "cpu_model": "Test CPU", "cpus_online": 2,
                 "machine": "x86_64" if kernel_bits == 64 else "i686",
                 "kernel_release": "6.1.0", "kernel_version": "#1", "kernel_bits": kernel_bits,
                 "kernel_x32": "n", "governor": "performance", "turbo": None,
                 "virtualization": None, "mem_total_kb": 4_000_000,
                 "load_average": [0.1, 0.1, 0.1], "libc": "glibc 2.36",
                 "compilers": {"gcc": "gcc 12"}, "python": "3.11", "os_release": "Debian 12"},
        "artifacts": artifacts, "target_status": status, "warnings": [],
        "outcomes": {wid: {"rounds": rounds, "stop_reason": "fixed rounds"} for wid in workloads},
        "samples": samples,
    }


# What a hostile program, profile or exported file can put into any string: a screen clear, a
# window title, an OSC 8 hyperlink, an 8-bit CSI, a bidi override, rich markup and an emoji code.
# Once cleaned (abibench.text) and escaped for rich, HOSTILE_SHOWN is what must still be visible.
HOSTILE = ("\x1b[2J\x1b]0;pwned\x07\x1b]8;;https://evil.example/\x1b\\L\x1b]8;;\x1b\\\x9b31m"
           "\u202e[bold]{}[/bold][link=file:///etc/passwd]:x:")
HOSTILE_SHOWN = "L\ufffd[bold]{}[/bold][link=file:///etc/passwd]:x:"
# Values whose meaning the reports rely on stay as they are (a sample's status, a direction),
# and the sampling designs, which the import takes only by name (a bent sample names one).
_FIXED = {"abibench-run", "ok", "higher", "lower", "timed", "counters", "sequential",
          "simultaneous", "covariate", "short"}
# Objects whose keys are data (workload ids, metric names, parameters, file names), not fields.
_DATA_KEYS = {"workloads", "metrics", "params", "compilers", "sizes", "effective", "elf",
              "outcomes", "digests", "plan"}


# Identifiers and timestamps: an import refuses any that a run could not have written
# (codec.py: ids.check_id, real timestamps), so they are kept as they are.
_IDS = {"id", "workload", "target", "targets", "abis", "primary", "started", "finished",
        "started_at"}
_ID_KEYS = {"workloads", "metrics", "outcomes"}


def rewrite_strings(value: Any, wrap: Callable[[str], str], parent: str = "") -> Any:
    """A copy of a run document with ``wrap`` applied to every string but identifiers and
    timestamps, keys that are data (parameters, file names) included."""
    if isinstance(value, str):
        return value if value in _FIXED or parent in _IDS else wrap(value)
    if isinstance(value, list):
        return [rewrite_strings(v, wrap, parent) for v in value]
    if isinstance(value, dict):
        if parent in BUILTIN_METRICS:  # a built-in metric is itself or refused
            return value
        return {(wrap(k) if parent in _DATA_KEYS - _ID_KEYS else k): rewrite_strings(v, wrap, k)
                for k, v in value.items()}
    return value


def strings_doc(wrap: Callable[[str], str]) -> dict[str, Any]:
    """A valid run document with ``wrap`` applied to every string: also a failed sample's
    reason, a target's state, the warnings and a host field this version does not know."""
    doc = synthetic_doc()
    failed = dict(doc["samples"][-1], status="failed", exit_code=2, round=99,
                  error="exit code 2: stderr tail")
    doc["samples"].append(failed)
    doc["target_status"].append({"workload": "alpha", "target": "i386", "state": "failed",
                                 "reason": "exit code 2: stderr tail"})
    doc["warnings"] += [{"workload": None, "target": None, "message": "run warning"},
                        {"workload": "beta", "target": "i386", "message": "workload warning"}]
    doc["host"]["extra_field"] = "extra value"
    out: dict[str, Any] = rewrite_strings(doc, wrap)
    return out


SAMPLE_DEFAULTS: dict[str, Any] = {
    "run_id": "r", "position": 0, "warmup": False, "status": "ok", "exit_code": 0,
    "wall_s": 1.0, "user_s": 1.0, "sys_s": 0.0, "max_rss_kb": 1, "stdout_digest": "",
    "check": None, "metrics": {}, "error": None, "started_at": "", "env_pad": 0,
    "instructions": None, "kind": "timed"}


def partial_doc(workloads: dict[str, dict[str, Any]], samples: list[dict[str, Any]]) -> RunDoc:
    """A typed run document from only the fields a test cares about; the rest are defaults."""
    metas = {wid: WorkloadMeta.from_dict(wid, {"metrics": {}, **meta})
             for wid, meta in workloads.items()}
    run = Run("r", "2026-01-01T00:00:00+00:00", None, "complete", "test", RunConfig(metas))
    return RunDoc(run, HostContext(), tuple(Sample.from_dict({**SAMPLE_DEFAULTS, **s})
                                            for s in samples))
