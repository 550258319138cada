#!/usr/bin/env python3
"""abibench measuring itself.

P1 overhead   per-sample wall that abibench's runner reports vs `hyperfine -N`, on /bin/true and on
              a ~50 ms CPU burner, in alternating batches (so a drift of the machine hits both).
P2 drift      two byte-identical binaries compared while a CPU hog starts halfway through: the
              ratio error of abibench's interleaved schedule (schedule.run_workload, its own
              round_order) vs a sequential one (all of A, then all of B).
P4 the issue  an empty C program through `abibench run --binary ... --rounds 40` (its usual
              settings) vs `hyperfine -N --runs 40`, batches interleaved: median and p10 ratios.
P3 precision  wall time for abibench's adaptive schedule to reach a ±1% CI on the foundation
              workloads (ptrtree, nbody, stream; i386 vs x86_64) vs a PTS-like rule, and the
              precision each achieved.

Run from the repository root:

    .venv/bin/python bench/harness.py [--only P1,P2,P3,P4] [--quick] [--out bench/out/harness.json]

Every number is measured while it runs; nothing is hard-coded. The JSON file holds every raw
sample and every summary, plus the host context and a measure of the CPU time that processes
other than this harness used during each part (another benchmark on the machine disturbs results).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from harness_common import (
    CFLAGS,
    FULL,
    GCC,
    QUICK,
    REPO,
    SPIN_TOML,
    CpuMeter,
    Sizes,
    build_spin,
    calibrate_spin,
    clean,
    console,
    cpu_hog,
    disturbance_note,
    fmt_ms,
    fmt_pct,
    fmt_ratio,
    log,
    median,
    ratio_dict,
    round_ratio_ci,
    sample_once,
)
from harness_p3 import part_p3, show_p3
from harness_p4 import part_p4, show_p4
from rich.table import Table

from abibench import __version__, stats
from abibench.abi import ABIS
from abibench.obtain.build import build
from abibench.paths import cache_dir
from abibench.probe import host
from abibench.records import Artifact, HostContext, Run, RunConfig, Sample, Target
from abibench.run.launcher import launcher
from abibench.run.schedule import Plan, run_workload
from abibench.store.sqlite import Store
from abibench.workloads.profile import Workload, load_profile

# --------------------------------------------------------------------------- P1 overhead


def abibench_batch(argv: list[str], k: int, launch: Path, cwd: Path) -> tuple[list[float], float]:
    env = dict(os.environ)
    t0 = time.perf_counter()
    walls = [sample_once(argv, launch, cwd, env).wall_s for _ in range(k)]
    return walls, time.perf_counter() - t0


def hyperfine_batch(argv: list[str], k: int, out_json: Path) -> tuple[list[float], float]:
    cmd = ["hyperfine", "-N", "--runs", str(k), "--style", "none", "--export-json", str(out_json),
           shlex.join(argv)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"hyperfine failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    data = json.loads(out_json.read_text())
    res = data["results"][0]
    if any(c != 0 for c in res.get("exit_codes", [])):
        raise RuntimeError(f"{shlex.join(argv)} failed under hyperfine: {res['exit_codes']}")
    times = [float(t) for t in res["times"]]
    if len(times) != k:
        raise RuntimeError(f"hyperfine reported {len(times)} times for --runs {k}")
    return times, elapsed


def part_p1(sz: Sizes, launch: Path, tmp: Path, busy: int = 0) -> dict[str, Any]:
    """With `busy`, that many busy-loop processes run for the whole part: a neighbour's load,
    to see whether abibench's Python parent suffers from it more than hyperfine does."""
    spin = build_spin(tmp / "p1")
    hog: dict[str, Any] = {}
    with cpu_hog(spin, busy, hog) as start_hog:
        if busy:
            start_hog()
        out = _p1(sz, launch, tmp, spin)
    out["busy_loops"] = busy
    out["hog"] = hog
    return out


def _p1(sz: Sizes, launch: Path, tmp: Path, spin: Path) -> dict[str, Any]:
    cal = calibrate_spin(spin, launch, tmp, sz.p1_spin_s)
    log(f"P1: spin {cal['millions']} takes {fmt_ms(cal['check_median_s'])} here "
        f"(target {fmt_ms(sz.p1_spin_s)})")
    commands = {"/bin/true": ["/bin/true"],
                f"spin {cal['millions']} (~{sz.p1_spin_s * 1000:.0f} ms)": [str(spin),
                                                                          str(cal["millions"])]}
    meter = CpuMeter()
    out: dict[str, Any] = {"calibration": cal, "batches": sz.p1_batches, "k": sz.p1_k,
                           "hyperfine": _first_line(["hyperfine", "--version"]), "commands": {}}
    for name, argv in commands.items():
        rec: dict[str, Any] = {"argv": argv, "batches": []}
        ab_all: list[float] = []
        hf_all: list[float] = []
        ab_elapsed = hf_elapsed = 0.0
        for b in range(sz.p1_batches):
            order = ["abibench", "hyperfine"] if b % 2 == 0 else ["hyperfine", "abibench"]
            batch: dict[str, Any] = {"order": order}
            for tool in order:
                if tool == "abibench":
                    walls, el = abibench_batch(argv, sz.p1_k, launch, tmp)
                    ab_all += walls
                    ab_elapsed += el
                else:
                    walls, el = hyperfine_batch(argv, sz.p1_k, tmp / "hf.json")
                    hf_all += walls
                    hf_elapsed += el
                batch[tool] = {"walls_s": walls, "elapsed_s": el}
            rec["batches"].append(batch)
        n = sz.p1_batches * sz.p1_k
        r = stats.ratio_of(ab_all, hf_all, paired=False)
        rec["summary"] = {
            "abibench": asdict(stats.summarize(ab_all)),
            "hyperfine": asdict(stats.summarize(hf_all)),
            "ratio_abibench_over_hyperfine": ratio_dict(r),
            "verdict": stats.verdict(r, better="lower", name_a="abibench", name_b="hyperfine",
                                     words=("lower", "higher")).text,
            "median_ratio": float(np.median(ab_all) / np.median(hf_all)),
            "abibench_elapsed_per_sample_s": ab_elapsed / n,
            "hyperfine_elapsed_per_sample_s": hf_elapsed / n,
            "goal_met": bool(r.ratio <= 1.0 or r.ci_low <= 1.0),
        }
        out["commands"][name] = rec
        log(f"P1 {name}: ratio {fmt_ratio(r)}")
    out["disturbance"] = meter.read()
    return out


def _first_line(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "unavailable"


def show_p1(res: dict[str, Any]) -> None:
    t = Table(title=f"P1 overhead: per-sample wall, abibench runner vs hyperfine -N "
                    f"({res['batches']} alternating batch pairs x {res['k']} samples per tool)")
    for col in ("command", "abibench median", "hyperfine median", "ratio ab/hf [95% CI]",
                "verdict", "ab elapsed/sample", "hf elapsed/sample", "goal ab<=hf"):
        t.add_column(col)
    for name, rec in res["commands"].items():
        s = rec["summary"]
        r = s["ratio_abibench_over_hyperfine"]
        t.add_row(name, fmt_ms(s["abibench"]["median"]), fmt_ms(s["hyperfine"]["median"]),
                  f"{r['ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]", s["verdict"],
                  fmt_ms(s["abibench_elapsed_per_sample_s"]),
                  fmt_ms(s["hyperfine_elapsed_per_sample_s"]), "met" if s["goal_met"] else "NOT met")
    console.print(t)
    console.print("elapsed/sample = a batch's wall time from the caller's side / samples: "
                  "abibench's includes its Python-side Popen of the launcher, temp files and "
                  "parsing (in-process, no interpreter start-up); hyperfine's includes starting "
                  "hyperfine and writing its JSON, spread over the batch.")
    console.print(disturbance_note(res["disturbance"]))


# --------------------------------------------------------------------------- P2 drift


def _p2_interleaved(wl: Workload, targets: list[tuple[Target, Artifact]], rounds: int,
                    hog_after_round: int, spin: Path, hogs: int, launch: Path, tmp: Path,
                    seed: int) -> dict[str, Any]:
    """abibench's own schedule (run_workload: warm-up round, then round_order), hog via callback."""
    store = Store(tmp / f"p2-{seed}.sqlite")
    run_id = f"p2-interleaved-{seed}"
    store.create_run(Run(run_id, datetime.now(UTC).isoformat(), None, "running", __version__,
                         RunConfig({})), HostContext())
    samples: list[Sample] = []
    hog: dict[str, Any] = {}
    t0 = time.monotonic()
    with cpu_hog(spin, hogs, hog) as start_hog:
        def on_sample(s: Sample) -> None:
            samples.append(s)
            # Round r (1-based, after the warm-up round 0) is complete when its last target ran.
            if s.round == hog_after_round and s.position == len(targets) - 1:
                start_hog()

        outcome = run_workload(wl, targets, Plan(fixed_rounds=rounds, warmup=1, seed=seed), store,
                               run_id, launch, on_sample)
    store.close()
    elapsed = time.monotonic() - t0
    if outcome.failed:
        raise RuntimeError(f"P2 interleaved: {outcome.stop_reason}")
    a_label, b_label = targets[0][0].label, targets[1][0].label
    by: dict[str, dict[int, float]] = {a_label: {}, b_label: {}}
    for s in samples:
        if not s.warmup:
            by[s.target][s.round] = s.wall_s
    rnds = sorted(set(by[a_label]) & set(by[b_label]))
    a = [by[a_label][r] for r in rnds]
    b = [by[b_label][r] for r in rnds]
    return {"a": a, "b": b, "rounds": rnds, "paired": True, "elapsed_s": elapsed,
            "stop_reason": outcome.stop_reason,
            "hog_after": f"counted round {hog_after_round}",
            "hog": hog, "slow_from_index": hog_after_round,
            "samples": [{"target": s.target, "round": s.round, "position": s.position,
                         "warmup": s.warmup, "wall_s": s.wall_s, "started_at": s.started_at}
                        for s in samples]}


def _p2_sequential(bins: dict[str, Path], args: list[str], n: int, spin: Path, hogs: int,
                   launch: Path, tmp: Path, seed: int) -> dict[str, Any]:
    """What a naive tool does: warm-up + n samples of A, then warm-up + n samples of B."""
    rng = random.Random(f"{seed}:sequential")
    base_env = dict(os.environ)
    labels = list(bins)
    values: dict[str, list[float]] = {lab: [] for lab in labels}
    trace: list[dict[str, Any]] = []
    hog: dict[str, Any] = {}
    t0 = time.monotonic()
    with cpu_hog(spin, hogs, hog) as start_hog:
        for i, lab in enumerate(labels):
            if i == len(labels) // 2:
                start_hog()  # halfway: every sample of A done, none of B
            work = tmp / f"seq-{lab.replace('/', '_')}"
            work.mkdir(exist_ok=True)
            for j in range(n + 1):
                env = {**base_env, "ABIBENCH_PAD": "x" * rng.randrange(0, 4096)}
                raw = sample_once([str(bins[lab] / "spin"), *args], launch, work, env)
                trace.append({"target": lab, "index": j, "warmup": j == 0, "wall_s": raw.wall_s})
                if j > 0:
                    values[lab].append(raw.wall_s)
    elapsed = time.monotonic() - t0
    return {"a": values[labels[0]], "b": values[labels[1]], "paired": False, "elapsed_s": elapsed,
            "hog_after": f"all {n + 1} samples of {labels[0]}", "hog": hog, "samples": trace}


def _p2_summary(run: dict[str, Any], hog_split: int | None) -> dict[str, Any]:
    a, b = run["a"], run["b"]
    r = stats.ratio_of(a, b, paired=run["paired"])
    s: dict[str, Any] = {
        "median_a_s": median(a), "median_b_s": median(b), "ratio": ratio_dict(r),
        "error": abs(r.ratio - 1.0),
        "ci_contains_1": bool(r.ci_low <= 1.0 <= r.ci_high),
    }
    if run["paired"]:
        est, lo, hi = round_ratio_ci(a, b)
        s["median_of_round_ratios"] = {"ratio": est, "ci_low": lo, "ci_high": hi,
                                       "half_width": (hi - lo) / 2.0 / est}
        s["median_of_round_ratios_error"] = abs(est - 1.0)
    if hog_split is not None:
        # Before/after the hog, pooled over both copies: how big the disturbance was.
        before = a[:hog_split] + b[:hog_split]
        after = a[hog_split:] + b[hog_split:]
        s["hog_slowdown"] = median(after) / median(before) if before and after else math.nan
    else:
        s["hog_slowdown"] = median(b) / median(a)
    return s


def part_p2(sz: Sizes, launch: Path, tmp: Path, hog_at: float) -> dict[str, Any]:
    base = tmp / "p2"
    x64 = ABIS["x86_64"]
    # Built the way abibench builds a workload (gcc -m64 -O2); the copies and the hog use it.
    proto = build(load_profile(SPIN_TOML), x64, GCC, CFLAGS, tmp / "cache")
    spin = Path(proto.bin_dir) / "spin"
    cal = calibrate_spin(spin, launch, tmp, sz.p2_spin_s)
    log(f"P2: spin {cal['millions']} takes {fmt_ms(cal['check_median_s'])} here "
        f"(target {fmt_ms(sz.p2_spin_s)})")
    wl = load_profile(SPIN_TOML).with_params({"millions": str(cal["millions"])})
    targets: list[tuple[Target, Artifact]] = []
    bins: dict[str, Path] = {}
    for name in ("copy-a", "copy-b"):
        d = base / name
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(spin, d / "spin")
        os.chmod(d / "spin", 0o755)
        t = Target(x64, name)
        targets.append((t, replace(proto, bin_dir=str(d), provenance=name)))
        bins[t.label] = d
    same = (base / "copy-a" / "spin").read_bytes() == (base / "copy-b" / "spin").read_bytes()
    if not same:
        raise RuntimeError("P2: the two copies differ")
    n = sz.p2_rounds
    hog_after = max(1, min(n - 1, round(n * hog_at)))
    meter = CpuMeter()
    reps: list[dict[str, Any]] = []
    for rep in range(sz.p2_reps):
        rec: dict[str, Any] = {"rep": rep}
        order = ["interleaved", "sequential"] if rep % 2 == 0 else ["sequential", "interleaved"]
        rec["order"] = order
        for sched in order:
            log(f"P2 rep {rep + 1}/{sz.p2_reps}: {sched} ({n} samples per copy, hog of "
                f"{sz.p2_hogs} busy loops from {hog_at:.0%})")
            m = CpuMeter()
            if sched == "interleaved":
                run = _p2_interleaved(wl, targets, n, hog_after, spin, sz.p2_hogs, launch, base,
                                      seed=rep)
                run["summary"] = _p2_summary(run, hog_after)
            else:
                # The sequential schedule's hog always starts when A is done (halfway).
                run = _p2_sequential(bins, [str(cal["millions"])], n, spin, sz.p2_hogs, launch,
                                     base, seed=rep)
                run["summary"] = _p2_summary(run, None)
            run["disturbance"] = m.read()
            rec[sched] = run
            r = stats.ratio_of(run["a"], run["b"], paired=run["paired"])
            log(f"P2 rep {rep + 1} {sched}: ratio {fmt_ratio(r)}")
        reps.append(rec)
    summary: dict[str, Any] = {}
    for sched in ("interleaved", "sequential"):
        errs = [r[sched]["summary"]["error"] for r in reps]
        summary[sched] = {"errors": errs, "mean_error": sum(errs) / len(errs), "max_error": max(errs)}
    rr = [r["interleaved"]["summary"]["median_of_round_ratios_error"] for r in reps]
    summary["interleaved_round_ratios"] = {"errors": rr, "mean_error": sum(rr) / len(rr),
                                           "max_error": max(rr)}
    summary["goal_met"] = bool(summary["interleaved"]["max_error"] <= 0.01
                               and summary["sequential"]["mean_error"] >= 0.05)
    return {"calibration": cal, "rounds": n, "hogs": sz.p2_hogs, "hog_at": hog_at,
            "hog_after_counted_round": hog_after, "copies_identical": same, "reps": reps,
            "summary": summary, "disturbance": meter.read()}


def show_p2(res: dict[str, Any]) -> None:
    cal = res["calibration"]
    t = Table(title=f"P2 drift: two identical copies of spin {cal['millions']} "
                    f"(~{fmt_ms(cal['check_median_s'])}), {res['rounds']} samples per copy, "
                    f"{res['hogs']} busy-loop hogs started halfway")
    for col in ("rep", "schedule", "median A", "median B", "ratio A/B [95% CI]", "error |r-1|",
                "CI has 1", "median of round ratios [95% CI]", "hog slowdown", "other CPU"):
        t.add_column(col)
    for rec in res["reps"]:
        for sched in ("interleaved", "sequential"):
            s = rec[sched]["summary"]
            r = s["ratio"]
            mrr = s.get("median_of_round_ratios")
            t.add_row(str(rec["rep"] + 1), sched, fmt_ms(s["median_a_s"]), fmt_ms(s["median_b_s"]),
                      f"{r['ratio']:.4f} [{r['ci_low']:.4f}, {r['ci_high']:.4f}]",
                      fmt_pct(s["error"]), "yes" if s["ci_contains_1"] else "no",
                      f"{mrr['ratio']:.4f} [{mrr['ci_low']:.4f}, {mrr['ci_high']:.4f}], err "
                      f"{fmt_pct(s['median_of_round_ratios_error'])}" if mrr is not None else "-",
                      f"x{s['hog_slowdown']:.2f}",
                      f"{rec[sched]['disturbance']['foreign_cores']:.2f} cores")
    console.print(t)
    sm = res["summary"]
    console.print(f"interleaved error: mean {fmt_pct(sm['interleaved']['mean_error'])}, max "
                  f"{fmt_pct(sm['interleaved']['max_error'])}; sequential error: mean "
                  f"{fmt_pct(sm['sequential']['mean_error'])}, max "
                  f"{fmt_pct(sm['sequential']['max_error'])}; interleaved with the median of "
                  f"round ratios: mean {fmt_pct(sm['interleaved_round_ratios']['mean_error'])}, max "
                  f"{fmt_pct(sm['interleaved_round_ratios']['max_error'])}; goal (interleaved <= 1%, "
                  f"sequential >= 5%): {'met' if sm['goal_met'] else 'NOT met'}")
    console.print("interleaved = schedule.run_workload (1 warm-up round, then round_order A B, "
                  "B A, ...), CI paired by round; sequential = warm-up + all of A, then warm-up + "
                  "all of B, CI unpaired. 'median of round ratios' is median(A_r/B_r), a paired "
                  "estimator abibench does not use, shown for comparison. hog slowdown = median "
                  "after the hog started / median before (sequential: B/A).")
    console.print(disturbance_note(res["disturbance"]))


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--only", default="P1,P2,P3,P4", help="comma-separated parts (P1,P2,P3,P4)")
    ap.add_argument("--quick", action="store_true", help="small sizes: about 1-2 minutes in all")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "harness.json")
    ap.add_argument("--busy", type=int, default=0,
                    help="P1: busy-loop processes running for the whole part (a neighbour)")
    ap.add_argument("--hog-at", type=float, default=0.5,
                    help="P2: fraction of the schedule after which the hog starts (default 0.5)")
    args = ap.parse_args(argv)
    parts = [p.strip().upper() for p in args.only.split(",") if p.strip()]
    bad = [p for p in parts if p not in ("P1", "P2", "P3", "P4")]
    if bad or not parts:
        ap.error(f"--only takes P1, P2, P3, P4; got {args.only!r}")
    if not 0.0 < args.hog_at < 1.0:
        ap.error("--hog-at must be between 0 and 1")
    if shutil.which("hyperfine") is None and ("P1" in parts or "P4" in parts):
        ap.error("P1 and P4 need hyperfine: apt-get install hyperfine")
    sz = QUICK if args.quick else FULL
    ctx = host.capture()
    warnings = host.context_warnings(ctx)
    console.print(f"abibench {__version__} harness ({'quick' if args.quick else 'full'}) on "
                  f"{ctx.cpu_model}, {ctx.cpus_online} CPUs, {ctx.os_release}, kernel "
                  f"{ctx.kernel_release}, governor {ctx.governor}, virtualization "
                  f"{ctx.virtualization}, load {ctx.load_average[0]:.2f}")
    for w in warnings:
        console.print(f"warning: {w}")
    doc: dict[str, Any] = {
        "format": "abibench-harness", "version": 1, "abibench_version": __version__,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shlex.join([sys.executable, *sys.argv]), "quick": args.quick,
        "sizes": asdict(sz), "host": ctx.to_dict(), "host_warnings": warnings, "parts": {},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    launch = launcher(cache_dir())
    t_all = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="abibench-harness-") as tmp_s:
        tmp = Path(tmp_s)
        for part in parts:
            t0 = time.monotonic()
            log(f"{part}: start")
            if part == "P1":
                res = part_p1(sz, launch, tmp, args.busy)
            elif part == "P2":
                res = part_p2(sz, launch, tmp, args.hog_at)
            elif part == "P3":
                res = part_p3(sz, launch, tmp)
            else:
                res = part_p4(sz.p4_batches, sz.p4_rounds, tmp)
            res["part_elapsed_s"] = time.monotonic() - t0
            doc["parts"][part] = res
            # Written after every part, so a crash later keeps what was measured.
            doc["elapsed_s"] = time.monotonic() - t_all
            args.out.write_text(json.dumps(clean(doc), indent=1))
            console.print()
            {"P1": show_p1, "P2": show_p2, "P3": show_p3, "P4": show_p4}[part](res)
            console.print(f"{part} took {res['part_elapsed_s']:.0f} s")
    doc["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    doc["elapsed_s"] = time.monotonic() - t_all
    args.out.write_text(json.dumps(clean(doc), indent=1))
    console.print(f"\nraw numbers and summaries: {args.out} (total {doc['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
