"""bench/harness.py's part P4: the issue's own comparison (issue 30, "the harness floor").

An empty C program through `abibench run --binary x86_64=empty --binary i386=empty32 --rounds N`
(its usual settings: the design it chooses, the environment padding, the warm-up round) against
`hyperfine -N --runs N empty`, the batches interleaved (A B, B A, ...) so that a drift of the
machine hits both. The x86_64 samples that count are compared with hyperfine's runs of the same
binary: median and 10th percentile of each, and their ratios, per batch and pooled.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from harness_common import GCC, CpuMeter, console, disturbance_note, fmt_ms, log
from rich.table import Table

from abibench.paths import NATIVE_DIR

EMPTY_C = NATIVE_DIR / "empty.c"


def build_empty(out: Path) -> dict[str, Path]:
    """The empty program per ABI, built as a workload is (gcc -O2, -m32 for i386). Without a
    32-bit toolchain only x86_64 is built: the comparison needs that one alone."""
    out.mkdir(parents=True, exist_ok=True)
    bins: dict[str, Path] = {}
    for abi, flags in (("x86_64", ["-m64"]), ("i386", ["-m32"])):
        exe = out / f"empty-{abi}"
        r = subprocess.run([GCC, "-O2", *flags, "-o", str(exe), str(EMPTY_C)],
                           capture_output=True, text=True, check=False)
        if r.returncode == 0:
            bins[abi] = exe
        elif abi == "x86_64":
            raise RuntimeError(f"P4: cannot build the empty program: {r.stderr.strip()[-300:]}")
    return bins


def abibench_run(bins: dict[str, Path], rounds: int, data: Path) -> dict[str, Any]:
    """One `abibench run --binary ...` with its usual settings; the x86_64 samples that count."""
    exe = Path(sys.executable).with_name("abibench")
    cmd = [str(exe), "run", *(a for abi, p in bins.items() for a in ("--binary", f"{abi}={p}")),
           "--rounds", str(rounds), "--no-html", "--json"]
    env = {**os.environ, "ABIBENCH_DATA": str(data)}
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       check=False)
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"P4: abibench run failed ({r.returncode}): {r.stderr.strip()[-300:]}")
    run_id = json.loads(r.stdout)["run"]["id"]
    con = sqlite3.connect(f"file:{data / 'results.sqlite'}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT wall_s, design, env_pad, repeat FROM samples WHERE run_id=? AND target=? AND "
            "status='ok' AND warmup=0 AND kind='timed' ORDER BY round",
            (run_id, "x86_64/prebuilt")).fetchall()
    finally:
        con.close()
    if len(rows) != rounds:
        raise RuntimeError(f"P4: abibench run {run_id} stored {len(rows)} x86_64 samples that "
                           f"count, not {rounds}")
    return {"run_id": run_id, "walls_s": [float(w) for w, *_ in rows], "elapsed_s": elapsed,
            "designs": sorted({d for _, d, _, _ in rows}),
            "pads": [int(p) for _, _, p, _ in rows], "repeats": sorted({int(k) for *_, k in rows})}


def hyperfine_run(exe: Path, runs: int, out_json: Path) -> dict[str, Any]:
    cmd = ["hyperfine", "-N", "--runs", str(runs), "--style", "none", "--export-json",
           str(out_json), str(exe)]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"P4: hyperfine failed ({r.returncode}): {r.stderr.strip()[-300:]}")
    times = [float(t) for t in json.loads(out_json.read_text())["results"][0]["times"]]
    if len(times) != runs:
        raise RuntimeError(f"P4: hyperfine reported {len(times)} times for --runs {runs}")
    return {"walls_s": times, "elapsed_s": elapsed}


def quantiles(xs: list[float]) -> dict[str, float]:
    a = np.asarray(xs, dtype=np.float64)
    return {"min": float(a.min()), "p10": float(np.percentile(a, 10)),
            "median": float(np.median(a)), "p90": float(np.percentile(a, 90)), "n": int(a.size)}


def compare(ab: list[float], hf: list[float]) -> dict[str, Any]:
    qa, qh = quantiles(ab), quantiles(hf)
    return {"abibench": qa, "hyperfine": qh, "median_ratio": qa["median"] / qh["median"],
            "p10_ratio": qa["p10"] / qh["p10"], "min_ratio": qa["min"] / qh["min"]}


def part_p4(batches: int, rounds: int, tmp: Path) -> dict[str, Any]:
    base = tmp / "p4"
    bins = build_empty(base / "bin")
    meter = CpuMeter()
    out: dict[str, Any] = {"rounds": rounds, "batches": batches, "abis": sorted(bins),
                           "batch": []}
    ab_all: list[float] = []
    hf_all: list[float] = []
    for b in range(batches):
        order = ["abibench", "hyperfine"] if b % 2 == 0 else ["hyperfine", "abibench"]
        rec: dict[str, Any] = {"order": order, "load1": os.getloadavg()[0]}
        for tool in order:
            if tool == "abibench":
                rec["abibench"] = abibench_run(bins, rounds, base / f"data-{b}")
                ab_all += rec["abibench"]["walls_s"]
            else:
                rec["hyperfine"] = hyperfine_run(bins["x86_64"], rounds, base / "hf.json")
                hf_all += rec["hyperfine"]["walls_s"]
        rec["summary"] = compare(rec["abibench"]["walls_s"], rec["hyperfine"]["walls_s"])
        out["batch"].append(rec)
        s = rec["summary"]
        log(f"P4 batch {b + 1}/{batches}: median ratio {s['median_ratio']:.3f}, p10 ratio "
            f"{s['p10_ratio']:.3f} (load {rec['load1']:.1f})")
    out["summary"] = compare(ab_all, hf_all)
    out["disturbance"] = meter.read()
    return out


def show_p4(res: dict[str, Any]) -> None:
    t = Table(title=f"P4 the issue's comparison: the empty program, `abibench run --binary "
                    f"{' --binary '.join(res['abis'])} --rounds {res['rounds']}` (x86_64 samples) "
                    f"vs `hyperfine -N --runs {res['rounds']}`, {res['batches']} interleaved "
                    "batch pairs")
    for col in ("batch", "load", "abibench p10", "abibench median", "hyperfine p10",
                "hyperfine median", "p10 ratio", "median ratio", "design"):
        t.add_column(col)
    for i, rec in enumerate(res["batch"]):
        s = rec["summary"]
        t.add_row(str(i + 1), f"{rec['load1']:.1f}", fmt_ms(s["abibench"]["p10"]),
                  fmt_ms(s["abibench"]["median"]), fmt_ms(s["hyperfine"]["p10"]),
                  fmt_ms(s["hyperfine"]["median"]), f"{s['p10_ratio']:.3f}",
                  f"{s['median_ratio']:.3f}", ",".join(rec["abibench"]["designs"]))
    s = res["summary"]
    t.add_row("all", "", fmt_ms(s["abibench"]["p10"]), fmt_ms(s["abibench"]["median"]),
              fmt_ms(s["hyperfine"]["p10"]), fmt_ms(s["hyperfine"]["median"]),
              f"{s['p10_ratio']:.3f}", f"{s['median_ratio']:.3f}", "")
    console.print(t)
    d = res["disturbance"]
    quiet = d["foreign_cores"] <= 0.1
    console.print(f"goal (issue 30): median ratio <= 1.10 on a quiet machine: "
                  f"{'met' if s['median_ratio'] <= 1.10 else 'NOT met'}"
                  f"{'' if quiet else ' (but the machine was not quiet: no verdict)'}")
    console.print(disturbance_note(res["disturbance"]))
