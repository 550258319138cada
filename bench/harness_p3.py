"""bench/harness.py's part P3: time to precision, abibench's adaptive schedule against a
PTS-like rule, on the foundation workloads."""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness_common import (
    CFLAGS,
    GCC,
    P3_ABIS,
    P3_WORKLOADS,
    CpuMeter,
    Sizes,
    console,
    disturbance_note,
    fmt_pct,
    log,
    ratio_dict,
    sample_once,
)
from rich.table import Table

from abibench import __version__, stats
from abibench.abi import ABIS
from abibench.obtain.build import build
from abibench.paths import MICRO_DIR, cache_dir
from abibench.records import Artifact, HostContext, Run, RunConfig, Sample, Target
from abibench.run.samples import ParseError, parse_metrics
from abibench.run.schedule import Plan, run_workload
from abibench.run.stopping import widest_interval
from abibench.store.sqlite import Store
from abibench.workloads.profile import Workload, builtin_profiles, load_profile, substitute

# --------------------------------------------------------------------------- P3 time to precision


def _argv_for(wl: Workload, art: Artifact, abi: str, work: Path) -> list[str]:
    """The command line exactly as schedule.run_workload builds it."""
    values = {"bin": art.bin_dir, "abi": abi, "work": str(work), "micro": str(MICRO_DIR),
              "profile_dir": str(wl.path.parent), **wl.params}
    return [substitute(a, values) for a in wl.command]


def _p3_abibench(wl: Workload, targets: list[tuple[Target, Artifact]], sz: Sizes, launch: Path,
                 tmp: Path) -> dict[str, Any]:
    store = Store(tmp / f"p3-{wl.id}.sqlite")
    run_id = f"p3-{wl.id}"
    store.create_run(Run(run_id, datetime.now(UTC).isoformat(), None, "running", __version__,
                         RunConfig({})), HostContext())
    plan = Plan(precision=0.01, min_rounds=sz.p3_min_rounds, max_rounds=sz.p3_max_rounds,
                max_time_s=sz.p3_max_time_s)
    samples: list[Sample] = []
    done_at: list[float] = []  # seconds since the start when each sample finished
    t0 = time.monotonic()

    def on_sample(smp: Sample) -> None:
        samples.append(smp)
        done_at.append(time.monotonic() - t0)

    outcome = run_workload(wl, targets, plan, store, run_id, launch, on_sample)
    elapsed = time.monotonic() - t0
    store.close()
    labels = [t.label for t, _ in targets]
    # The stopping rule's half-width after every counted round, recomputed on the samples the
    # schedule had then: when would a looser precision (±5%, ±2%) have been reached?
    trajectory: list[dict[str, float]] = []
    for rnd in range(plan.min_rounds, outcome.rounds + 1):
        upto = [i for i, smp in enumerate(samples) if smp.round <= rnd]
        hw = widest_interval([samples[i] for i in upto], wl.primary, labels)
        trajectory.append({"round": rnd, "elapsed_s": done_at[upto[-1]], "half_width": hw})
    first_at = {f"{p:g}%": next((t["elapsed_s"] for t in trajectory if t["half_width"] <= p / 100),
                                None) for p in (5.0, 2.0, 1.0)}
    by: dict[str, dict[int, float]] = {lab: {} for lab in labels}
    for s in samples:
        v = s.value(wl.primary)
        if not s.warmup and s.status == "ok" and v is not None:
            by[s.target][s.round] = v
    rnds = sorted(set(by[labels[0]]) & set(by[labels[1]]))
    ref = [by[labels[0]][r] for r in rnds]
    other = [by[labels[1]][r] for r in rnds]
    paired = stats.ratio_of(other, ref, paired=True)
    unpaired = stats.ratio_of(other, ref, paired=False)
    return {
        "plan": asdict(plan), "elapsed_s": elapsed, "rounds": outcome.rounds,
        "samples_run": len(samples), "stop_reason": outcome.stop_reason,
        "failed": outcome.failed,
        "stopping_half_width": widest_interval(samples, wl.primary, labels),
        "ratio_paired": ratio_dict(paired), "ratio_unpaired": ratio_dict(unpaired),
        "values": {labels[0]: ref, labels[1]: other},
        "reached": bool(outcome.stop_reason.startswith("precision reached")),
        "trajectory": trajectory, "first_reached_s": first_at,
        "samples": [{"target": s.target, "round": s.round, "position": s.position,
                     "warmup": s.warmup, "status": s.status, "wall_s": s.wall_s,
                     "value": s.value(wl.primary), "done_at_s": at}
                    for s, at in zip(samples, done_at, strict=True)],
    }


def _p3_pts(wl: Workload, targets: list[tuple[Target, Artifact]], sz: Sizes, launch: Path,
            tmp: Path) -> dict[str, Any]:
    """PTS-like: per target, sequentially (all of A, then all of B), no warm-up: run 3 times;
    while the sample stdev (ddof=1) of the primary metric is >= 3.5% of its mean and fewer than
    4 x 3 = 12 runs were made, run once more."""
    max_runs = sz.p3_pts_runs * sz.p3_pts_max_factor
    values: dict[str, list[float]] = {}
    walls: dict[str, list[float]] = {}
    cvs: dict[str, list[float]] = {}
    env = dict(os.environ)
    t0 = time.monotonic()
    for target, art in targets:
        work = tmp / f"pts-{wl.id}-{target.label}"
        work.mkdir(parents=True, exist_ok=True)
        argv = _argv_for(wl, art, target.abi.name, work)
        vals: list[float] = []
        trace: list[float] = []
        cv_trace: list[float] = []
        while True:
            raw = sample_once(argv, launch, work, env, timeout_s=wl.timeout)
            try:
                vals.append(parse_metrics(wl.metrics, raw.stdout)[wl.primary])
            except (ParseError, KeyError) as exc:
                raise RuntimeError(f"P3 PTS {wl.id} {target.label}: {exc}") from exc
            trace.append(raw.wall_s)
            if len(vals) < sz.p3_pts_runs:
                continue
            cv = stats.summarize(vals).cv
            cv_trace.append(cv)
            if len(vals) >= max_runs or cv < sz.p3_pts_threshold:
                break
        values[target.label] = vals
        walls[target.label] = trace
        cvs[target.label] = cv_trace
    elapsed = time.monotonic() - t0
    labels = [t.label for t, _ in targets]
    r = stats.ratio_of(values[labels[1]], values[labels[0]], paired=False)
    return {
        "rule": (f"per target, sequentially, no warm-up: {sz.p3_pts_runs} runs; while "
                 f"stdev(ddof=1)/mean of the primary metric >= {sz.p3_pts_threshold:.1%} and "
                 f"runs < {max_runs}, one more run"),
        "elapsed_s": elapsed, "runs": {k: len(v) for k, v in values.items()},
        "values": values, "walls_s": walls, "cv_after_each_run": cvs,
        "ratio_unpaired": ratio_dict(r), "reached": bool(r.half_width() <= 0.01),
    }


def part_p3(sz: Sizes, launch: Path, tmp: Path) -> dict[str, Any]:
    profiles = builtin_profiles()
    cache = cache_dir()
    meter = CpuMeter()
    out: dict[str, Any] = {"workloads": {}, "abis": list(P3_ABIS), "cflags": list(CFLAGS),
                           "cc": GCC}
    for i, wid in enumerate(P3_WORKLOADS):
        wl = load_profile(profiles[wid])
        if sz.p3_params.get(wid):
            wl = wl.with_params(sz.p3_params[wid])
        targets = []
        for abi in P3_ABIS:
            art = build(wl, ABIS[abi], GCC, CFLAGS, cache)
            targets.append((Target(ABIS[abi]), art))
        rec: dict[str, Any] = {"params": wl.params, "primary": wl.primary,
                               "unit": wl.metric(wl.primary).unit,
                               "binaries": {t.label: a.bin_dir for t, a in targets}}
        order = ["abibench", "pts"] if i % 2 == 0 else ["pts", "abibench"]
        rec["order"] = order
        for method in order:
            log(f"P3 {wid}: {method} ({', '.join(f'{k}={v}' for k, v in wl.params.items())})")
            m = CpuMeter()
            if method == "abibench":
                rec["abibench"] = _p3_abibench(wl, targets, sz, launch, tmp)
                log(f"P3 {wid} abibench: {rec['abibench']['elapsed_s']:.1f} s, "
                    f"{rec['abibench']['stop_reason']}")
            else:
                rec["pts"] = _p3_pts(wl, targets, sz, launch, tmp)
                log(f"P3 {wid} pts: {rec['pts']['elapsed_s']:.1f} s, runs {rec['pts']['runs']}, "
                    f"±{fmt_pct(rec['pts']['ratio_unpaired']['half_width'])}")
            rec[method]["disturbance"] = m.read()
        out["workloads"][wid] = rec
    out["disturbance"] = meter.read()
    return out


def fmt_s(x: float | None) -> str:
    return "never" if x is None else f"{x:.0f} s"


def short_reason(reason: str) -> str:
    for prefix, short in (("precision reached", "precision"), ("time budget", "time budget"),
                          ("max ", "max rounds")):
        if reason.startswith(prefix):
            return short
    return reason


def show_p3(res: dict[str, Any]) -> None:
    a, b = res["abis"]
    t = Table(title=f"P3 time to precision: {b}/{a} ratio of the primary metric, asked ±1% "
                    "(95% CI half-width)")
    for col in ("workload", "method", "wall time", "runs per target", "stop", f"ratio {b}/{a}",
                "±CI paired", "±CI unpaired", "±1% reached", "±5% / ±2% first at",
                "other CPU"):
        t.add_column(col)
    for wid, rec in res["workloads"].items():
        ab, pts = rec["abibench"], rec["pts"]
        rp, ru = ab["ratio_paired"], ab["ratio_unpaired"]
        t.add_row(f"{wid} ({rec['primary']})", "abibench adaptive", f"{ab['elapsed_s']:.1f} s",
                  f"{ab['rounds']} (+1 warm-up)", short_reason(ab["stop_reason"]),
                  f"{rp['ratio']:.4f}",
                  fmt_pct(rp["half_width"]), fmt_pct(ru["half_width"]),
                  "yes" if ab["reached"] else "no",
                  " / ".join(fmt_s(ab["first_reached_s"][k]) for k in ("5%", "2%")),
                  f"{ab['disturbance']['foreign_cores']:.2f} cores")
        pr = pts["ratio_unpaired"]
        t.add_row("", "PTS-like", f"{pts['elapsed_s']:.1f} s",
                  ", ".join(f"{k} {v}" for k, v in pts["runs"].items()), "σ rule", f"{pr['ratio']:.4f}",
                  "-", fmt_pct(pr["half_width"]), "yes" if pts["reached"] else "no", "-",
                  f"{pts['disturbance']['foreign_cores']:.2f} cores")
    console.print(t)
    first = next(iter(res["workloads"].values()), None)
    if first:
        console.print(f"PTS-like rule: {first['pts']['rule']}. abibench: Plan(precision=0.01, "
                      f"min_rounds={first['abibench']['plan']['min_rounds']}, max_rounds="
                      f"{first['abibench']['plan']['max_rounds']}, max_time_s="
                      f"{first['abibench']['plan']['max_time_s']:g}), its stopping rule uses the "
                      "paired CI; 'unpaired' is the same bootstrap ignoring rounds, as for PTS. "
                      "'first at' recomputes abibench's stopping half-width after every round. "
                      "'other CPU' = average cores used by other processes during that method.")
    console.print(disturbance_note(res["disturbance"]))
