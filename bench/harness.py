#!/usr/bin/env python3
"""abibench measuring itself.

P1 overhead   per-sample wall that abibench's runner reports vs `hyperfine -N`, on /bin/true and on
              a ~50 ms CPU burner, in alternating batches (so a drift of the machine hits both).
P2 drift      two byte-identical binaries compared while a CPU hog starts halfway through: the
              ratio error of abibench's interleaved schedule (schedule.run_workload, its own
              round_order) vs a sequential one (all of A, then all of B).
P3 precision  wall time for abibench's adaptive schedule to reach a ±1% CI on the foundation
              workloads (ptrtree, nbody, stream; i386 vs x86_64) vs a PTS-like rule, and the
              precision each achieved.

Run from the repository root:

    .venv/bin/python bench/harness.py [--only P1,P2,P3] [--quick] [--out bench/out/harness.json]

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
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from abibench import __version__, stats
from abibench.abi import ABIS
from abibench.obtain.build import build
from abibench.paths import MICRO_DIR, cache_dir
from abibench.probe import host
from abibench.records import Artifact, HostContext, Run, RunConfig, Sample, Target
from abibench.run.launcher import RawResult, launcher, run_sample
from abibench.run.samples import ParseError, parse_metrics
from abibench.run.schedule import Plan, run_workload
from abibench.run.stopping import widest_interval
from abibench.store.sqlite import Store
from abibench.workloads.profile import Workload, builtin_profiles, load_profile, substitute

REPO = Path(__file__).resolve().parent.parent
SPIN_C = REPO / "tests" / "fixtures" / "spin.c"
SPIN_TOML = REPO / "tests" / "fixtures" / "spin.toml"
GCC = "/usr/bin/gcc"
CFLAGS = ("-O2",)
P3_WORKLOADS = ("ptrtree", "nbody", "stream")
P3_ABIS = ("i386", "x86_64")

# Wide enough for the tables when the output goes to a file or a pipe (rich would use 80 columns).
console = Console(highlight=False, width=None if sys.stdout.isatty() else 170)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Sizes:
    p1_batches: int  # batch pairs per command (abibench k samples, hyperfine k samples)
    p1_k: int  # samples per batch
    p1_spin_s: float  # target duration of the CPU-burner command
    p2_spin_s: float
    p2_rounds: int  # counted rounds (interleaved) = samples per target (sequential); even
    p2_reps: int
    p2_hogs: int  # busy-loop processes started halfway
    p3_params: dict[str, dict[str, str]]  # workload -> parameter overrides ({} = defaults)
    p3_min_rounds: int
    p3_max_rounds: int
    p3_max_time_s: float  # abibench's time budget per workload
    p3_pts_runs: int = 3
    p3_pts_max_factor: int = 4
    p3_pts_threshold: float = 0.035


QUICK = Sizes(p1_batches=3, p1_k=10, p1_spin_s=0.05, p2_spin_s=0.04, p2_rounds=12, p2_reps=1,
              p2_hogs=2,
              p3_params={"ptrtree": {"nodes": "100000"}, "nbody": {"steps": "1000000"},
                         "stream": {"elements": "2000000", "times": "10"}},
              p3_min_rounds=5, p3_max_rounds=30, p3_max_time_s=10.0)
FULL = Sizes(p1_batches=10, p1_k=30, p1_spin_s=0.05, p2_spin_s=0.15, p2_rounds=30, p2_reps=3,
             p2_hogs=2, p3_params={}, p3_min_rounds=5, p3_max_rounds=100, p3_max_time_s=300.0)


# --------------------------------------------------------------------------- disturbance meter


def _proc_stat() -> tuple[float, float]:
    """(busy, steal) CPU seconds of the whole machine since boot, from /proc/stat."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    v = [int(x) for x in fields]
    hz = os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq = v[:7]
    steal = v[7] if len(v) > 7 else 0
    return (user + nice + system + irq + softirq) / hz, steal / hz


def _own_cpu() -> float:
    """CPU seconds of this process plus every descendant it (or they) waited for."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    return total


@dataclass
class CpuMeter:
    """CPU time used on the machine by anything other than this harness (and its children)."""

    t0: float = field(default_factory=time.monotonic)
    busy0: float = 0.0
    steal0: float = 0.0
    own0: float = 0.0
    load0: float = 0.0

    def __post_init__(self) -> None:
        self.busy0, self.steal0 = _proc_stat()
        self.own0 = _own_cpu()
        self.load0 = os.getloadavg()[0]

    def read(self) -> dict[str, float]:
        busy, steal = _proc_stat()
        elapsed = time.monotonic() - self.t0
        foreign = max(0.0, (busy - self.busy0) - (_own_cpu() - self.own0))
        return {
            "elapsed_s": elapsed,
            "foreign_cpu_s": foreign,
            "foreign_cores": foreign / elapsed if elapsed > 0 else 0.0,
            "steal_s": steal - self.steal0,
            "load1_start": self.load0,
            "load1_end": os.getloadavg()[0],
        }


def disturbance_note(d: dict[str, float]) -> str:
    text = (f"other processes used {d['foreign_cpu_s']:.1f} CPU-s in {d['elapsed_s']:.0f} s "
            f"(avg {d['foreign_cores']:.2f} cores), steal {d['steal_s']:.1f} s, "
            f"load {d['load1_start']:.2f} -> {d['load1_end']:.2f}")
    if d["foreign_cores"] > 0.1:
        text += "  ** DISTURBED: another process competed for the CPU; treat these numbers with care"
    return text


# --------------------------------------------------------------------------- helpers


def clean(obj: Any) -> Any:
    """JSON-safe copy: nan/inf become null, tuples lists, paths strings."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def ratio_dict(r: stats.Ratio) -> dict[str, Any]:
    return {**asdict(r), "half_width": r.half_width()}


def fmt_ratio(r: stats.Ratio) -> str:
    return f"{r.ratio:.4f} [{r.ci_low:.4f}, {r.ci_high:.4f}]"


def fmt_pct(x: float) -> str:
    return f"{x * 100:.2f}%" if math.isfinite(x) else "n/a"


def fmt_ms(s: float) -> str:
    return f"{s * 1000:.3f} ms"


def median(xs: Sequence[float]) -> float:
    return float(stats.summarize(xs).median)


def round_ratio_ci(a: Sequence[float], b: Sequence[float], resamples: int = 4000,
                   seed: int = 0) -> tuple[float, float, float]:
    """median over rounds of a_r / b_r with a bootstrap (over rounds) percentile 95% CI.

    Not what abibench computes (it takes median(a) / median(b)); shown next to it in P2 because
    a per-round ratio cancels a drift that hits both targets of a round alike.
    """
    lr = np.log(np.asarray(a, dtype=np.float64) / np.asarray(b, dtype=np.float64))
    rng = np.random.default_rng(seed)
    reps = np.median(lr[rng.integers(0, lr.size, size=(resamples, lr.size))], axis=1)
    lo, hi = np.quantile(reps, [0.025, 0.975])
    return math.exp(float(np.median(lr))), math.exp(float(lo)), math.exp(float(hi))


def build_spin(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = out_dir / "spin"
    subprocess.run([GCC, "-O2", "-o", str(exe), str(SPIN_C)], check=True)
    return exe


def sample_once(argv: list[str], launch: Path, cwd: Path, env: dict[str, str] | None = None,
                timeout_s: float = 120.0) -> RawResult:
    raw = run_sample(argv, cwd=cwd, env=env if env is not None else dict(os.environ),
                     timeout_s=timeout_s, launch=launch)
    if not raw.ok:
        raise RuntimeError(f"{shlex.join(argv)}: {raw.describe_failure()}")
    return raw


def calibrate_spin(spin: Path, launch: Path, cwd: Path, target_s: float) -> dict[str, Any]:
    """The spin argument (millions of steps) that takes about target_s here, measured now."""
    probe_n = 20
    walls = [sample_once([str(spin), str(probe_n)], launch, cwd).wall_s for _ in range(5)]
    # The fastest probe: another process competing for the CPU only ever makes a run slower.
    per_million = min(walls) / probe_n
    n = max(1, round(target_s / per_million))
    check = [sample_once([str(spin), str(n)], launch, cwd).wall_s for _ in range(3)]
    return {"millions": n, "per_million_s": per_million, "probe_walls_s": walls,
            "check_walls_s": check, "check_median_s": median(check), "target_s": target_s}


@contextmanager
def cpu_hog(spin: Path, count: int, record: dict[str, Any]) -> Iterator[Callable[[], None]]:
    """Yields start(); whatever happens, every hog started is killed by PID on exit."""
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        if procs:
            return
        record["started_at"] = time.monotonic()
        for _ in range(count):
            # spin with a huge count is a pure busy loop that runs for hours.
            procs.append(subprocess.Popen([str(spin), "100000000"], stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
        record["pids"] = [p.pid for p in procs]

    try:
        yield start
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for p in procs:
            p.wait()
        if procs:
            record["stopped_at"] = time.monotonic()


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


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--only", default="P1,P2,P3", help="comma-separated parts (P1,P2,P3)")
    ap.add_argument("--quick", action="store_true", help="small sizes: about 1-2 minutes in all")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "harness.json")
    ap.add_argument("--busy", type=int, default=0,
                    help="P1: busy-loop processes running for the whole part (a neighbour)")
    ap.add_argument("--hog-at", type=float, default=0.5,
                    help="P2: fraction of the schedule after which the hog starts (default 0.5)")
    args = ap.parse_args(argv)
    parts = [p.strip().upper() for p in args.only.split(",") if p.strip()]
    bad = [p for p in parts if p not in ("P1", "P2", "P3")]
    if bad or not parts:
        ap.error(f"--only takes P1, P2, P3; got {args.only!r}")
    if not 0.0 < args.hog_at < 1.0:
        ap.error("--hog-at must be between 0 and 1")
    if shutil.which("hyperfine") is None and "P1" in parts:
        ap.error("P1 needs hyperfine: apt-get install hyperfine")
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
            else:
                res = part_p3(sz, launch, tmp)
            res["part_elapsed_s"] = time.monotonic() - t0
            doc["parts"][part] = res
            # Written after every part, so a crash later keeps what was measured.
            doc["elapsed_s"] = time.monotonic() - t_all
            args.out.write_text(json.dumps(clean(doc), indent=1))
            console.print()
            {"P1": show_p1, "P2": show_p2, "P3": show_p3}[part](res)
            console.print(f"{part} took {res['part_elapsed_s']:.0f} s")
    doc["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    doc["elapsed_s"] = time.monotonic() - t_all
    args.out.write_text(json.dumps(clean(doc), indent=1))
    console.print(f"\nraw numbers and summaries: {args.out} (total {doc['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
