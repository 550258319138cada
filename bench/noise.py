#!/usr/bin/env python3
"""Where the per-round noise comes from: a randomised experiment on the default suite.

    .venv/bin/python bench/noise.py [--minutes 20] [--workloads lua,nbody,ptrtree,...]
                                    [--abis i386,x86_64] [--out bench/out/noise.json]

Every sample of every workload and ABI draws, independently and at random, one level of each
factor abibench could hold fixed or leave free:

    padding   the environment padding: a fixed length (0) or a random one (0..4095 bytes),
              as `abibench run` draws it to protect against layout bias
    aslr      address-space randomisation on, or off (personality ADDR_NO_RANDOMIZE)
    pinned    the program free to move between CPUs, or pinned to CPU 1
    launcher  started by abibench's launcher (native/launch.c), or directly by Python
              (fork, exec, wait4: what a hand-timed loop does)

and records two covariates measured at the same moment: the CPU time every *other* process used
during the sample (from /proc/stat, less the program's own), and the speed of a fixed loop run
just before it (how fast the machine was then). The samples of each workload and ABI are
interleaved in random order, so drift hits every level alike.

The analysis, per workload and ABI, on the logarithm of the wall time: a least-squares fit on all
factors and covariates; each source's share of the variance is what leaving it out of the fit
adds to the residual (so shares need not sum to 100%: the rest is "unexplained"). A factor can
also change the *spread* rather than the mean (random padding does, if it moves the program's
layout across cache-set boundaries): the ratio of the residual variance at its free level to its
fixed level says that. A slow tail is reported as the share of samples more than 10% slower than
the fastest tenth of their cell.

Prints a Markdown table (docs/method.md keeps the one measured on this machine) and writes every
raw sample to the JSON file. Nothing is hard-coded: the table is computed from this run.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from abibench.abi import ABIS  # noqa: E402
from abibench.obtain.build import build  # noqa: E402
from abibench.obtain.inputs import generate_input  # noqa: E402
from abibench.paths import MICRO_DIR, cache_dir  # noqa: E402
from abibench.records import Artifact  # noqa: E402
from abibench.run.launcher import launcher, run_sample  # noqa: E402
from abibench.workloads.profile import Workload, builtin_profiles, load_profile, substitute  # noqa: E402

DEFAULT_WORKLOADS = ("lua", "nbody", "ptrtree", "sqlite-speedtest1", "stream")
GCC = "gcc"
CFLAGS = ("-O2",)
ADDR_NO_RANDOMIZE = 0x0040000
FACTORS = ("padding", "aslr", "pinned", "launcher")
# The level that holds a factor fixed, against the one that leaves it free.
FIXED = {"padding": "fixed", "aslr": "off", "pinned": "yes", "launcher": "direct"}
FREE = {"padding": "random", "aslr": "on", "pinned": "no", "launcher": "launcher"}
COVARIATES = ("neighbour", "machine")

_libc = ctypes.CDLL(None, use_errno=True)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def proc_stat_busy_s() -> float:
    """CPU time of the whole machine so far (every CPU, all but idle and iowait)."""
    with open("/proc/stat") as fh:
        parts = fh.readline().split()[1:]
    ticks = [int(x) for x in parts]
    hz = os.sysconf("SC_CLK_TCK")
    busy = sum(ticks[:3]) + sum(ticks[5:8])  # user nice system | irq softirq steal
    return busy / hz


def machine_speed(iters: int = 200_000) -> float:
    """Iterations a second of a fixed loop, run now: the machine's speed at this moment."""
    t0 = time.perf_counter_ns()
    x = 0
    for i in range(iters):
        x = (x * 31 + i) & 0xFFFFFFFF
    return iters / ((time.perf_counter_ns() - t0) / 1e9)


@dataclass
class Draw:
    padding: str
    aslr: str
    pinned: str
    launcher: str
    pad: int

    @staticmethod
    def random(rng: random.Random) -> Draw:
        levels = {f: rng.choice((FIXED[f], FREE[f])) for f in FACTORS}
        pad = rng.randrange(0, 4096) if levels["padding"] == "random" else 0
        return Draw(pad=pad, **levels)


@dataclass
class Observation:
    workload: str
    abi: str
    draw: Draw
    wall_s: float
    cpu_s: float
    neighbour: float  # other processes' CPU time over the sample, per CPU-second of its wall
    machine: float  # the fixed loop's speed just before the sample, iterations/s
    seq: int


def _with_aslr_off(off: bool) -> int:
    """Sets this process's personality (inherited by every exec that follows); returns the old."""
    old = _libc.personality(0xFFFFFFFF)
    new = (old | ADDR_NO_RANDOMIZE) if off else (old & ~ADDR_NO_RANDOMIZE)
    _libc.personality(new)
    return int(old)


def sample(argv: list[str], work: Path, env: dict[str, str], d: Draw, launch: Path,
           timeout_s: float) -> tuple[float, float, float]:
    """(wall s, the program's CPU s, other processes' CPU s) of one run under draw d."""
    allowed = os.sched_getaffinity(0)
    old = _with_aslr_off(d.aslr == "off")
    try:
        if d.pinned == "yes":
            os.sched_setaffinity(0, {max(allowed)})
        busy0 = proc_stat_busy_s()
        if d.launcher == "launcher":
            raw = run_sample(argv, cwd=work, env=env, timeout_s=timeout_s, launch=launch)
            busy1 = proc_stat_busy_s()
            if not raw.ok:
                raise RuntimeError(f"{argv[0]}: {raw.describe_failure()}")
            wall, cpu = raw.wall_s, raw.user_s + raw.sys_s
        else:
            with open(work / "stdout", "wb") as out:
                t0 = time.perf_counter_ns()
                proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=subprocess.DEVNULL)
                _, status, ru = os.wait4(proc.pid, 0)
                t1 = time.perf_counter_ns()
                proc.returncode = os.waitstatus_to_exitcode(status)
            busy1 = proc_stat_busy_s()
            if proc.returncode != 0:
                raise RuntimeError(f"{argv[0]}: exit {proc.returncode}")
            wall, cpu = (t1 - t0) / 1e9, ru.ru_utime + ru.ru_stime
    finally:
        os.sched_setaffinity(0, allowed)
        _libc.personality(old)
    return wall, cpu, max(0.0, busy1 - busy0 - cpu)


def argv_for(wl: Workload, art: Artifact, abi: str, work: Path) -> list[str]:
    inputs = {name: str(generate_input(name, spec, cache_dir())) for name, spec in wl.inputs.items()}
    values = {"bin": art.bin_dir, "abi": abi, "work": str(work), "micro": str(MICRO_DIR),
              "profile_dir": str(wl.path.parent), **wl.params, **inputs}
    return [substitute(a, values) for a in wl.command]


def prepare(ids: list[str], abis: list[str], tmp: Path) -> list[tuple[Workload, str, list[str], Path]]:
    profiles = builtin_profiles()
    out = []
    for wid in ids:
        wl = load_profile(profiles[wid])
        if wl.short:  # the short design's size: many samples in the time
            wl = wl.with_params(wl.short)
        if wl.setup:
            raise SystemExit(f"{wid} has a [run] setup step; this bench runs plain commands")
        for abi in abis:
            art = build(wl, ABIS[abi], GCC, CFLAGS, cache_dir())
            work = tmp / f"{wid}-{abi}"
            work.mkdir()
            out.append((wl, abi, argv_for(wl, art, abi, work), work))
    return out


def collect(cells: list[tuple[Workload, str, list[str], Path]], minutes: float, seed: int,
            raw_path: Path) -> list[Observation]:
    rng = random.Random(seed)
    launch = launcher(cache_dir())
    base = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C"}
    obs: list[Observation] = []
    deadline = time.monotonic() + minutes * 60
    seq = 0
    with raw_path.open("w") as raw:
        while time.monotonic() < deadline:
            order = list(range(len(cells)))
            rng.shuffle(order)
            for i in order:
                wl, abi, argv, work = cells[i]
                d = Draw.random(rng)
                env = dict(base, ABIBENCH_PAD="x" * d.pad)
                speed = machine_speed()
                wall, cpu, other = sample(argv, work, env, d, launch, wl.timeout)
                o = Observation(wl.id, abi, d, wall, cpu, other / (wall * (os.cpu_count() or 1)),
                                speed, seq)
                seq += 1
                obs.append(o)
                raw.write(json.dumps(asdict(o)) + "\n")  # every sample kept the moment it exists
                raw.flush()
            if len(obs) % (10 * len(cells)) == 0:
                log(f"{len(obs)} samples")
    return obs


def design(rows: list[Observation], drop: str | None = None) -> np.ndarray:
    cols: list[list[float]] = [[1.0] * len(rows)]
    for f in FACTORS:
        if f != drop:
            cols.append([1.0 if getattr(r.draw, f) == FREE[f] else 0.0 for r in rows])
    for c in COVARIATES:
        if c != drop:
            v = np.array([getattr(r, c) for r in rows], dtype=float)
            sd = float(v.std()) or 1.0
            cols.append(list((v - v.mean()) / sd))
    return np.array(cols).T


def rss(x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    return float(resid @ resid), beta


def analyse_cell(rows: list[Observation]) -> dict[str, Any]:
    y = np.log(np.array([r.wall_s for r in rows]))
    total = float(((y - y.mean()) ** 2).sum())
    full, beta = rss(design(rows), y)
    out: dict[str, Any] = {"n": len(rows), "sd_log": float(y.std(ddof=1)),
                           "median_s": float(np.median(np.exp(y))), "share": {}, "effect": {},
                           "spread": {}}
    names = list(FACTORS) + list(COVARIATES)
    for k, name in enumerate(names, start=1):
        without, _ = rss(design(rows, drop=name), y)
        out["share"][name] = (without - full) / total if total > 0 else 0.0
        out["effect"][name] = float(math.expm1(beta[k]))  # factor: free vs fixed; covariate: per sd
    out["share"]["unexplained"] = full / total if total > 0 else 0.0
    resid = y - design(rows) @ beta
    for f in FACTORS:
        free = resid[[getattr(r.draw, f) == FREE[f] for r in rows]]
        fixed = resid[[getattr(r.draw, f) == FIXED[f] for r in rows]]
        if len(free) > 2 and len(fixed) > 2 and fixed.var(ddof=1) > 0:
            out["spread"][f] = float(free.var(ddof=1) / fixed.var(ddof=1))
    fastest = float(np.quantile(np.exp(y), 0.1))
    out["slow_tail"] = float(np.mean(np.exp(y) > fastest * 1.10))
    out["neighbour_median"] = float(np.median([r.neighbour for r in rows]))
    return out


def table(result: dict[str, dict[str, Any]]) -> str:
    head = ("| workload | ABI | n | sd (log) | " + " | ".join(FACTORS) + " | neighbour CPU | "
            "machine speed | unexplained | slow tail (>10% over fastest tenth) | spread x "
            "(random padding, ASLR on, free, launcher) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for key, c in result.items():
        wid, abi = key.split("/")
        sh = c["share"]
        spread = ", ".join(f"{c['spread'].get(f, math.nan):.2f}" for f in FACTORS)
        lines.append(f"| {wid} | {abi} | {c['n']} | {c['sd_log']:.2%} | "
                     + " | ".join(f"{sh[f]:.0%}" for f in FACTORS)
                     + f" | {sh['neighbour']:.0%} | {sh['machine']:.0%} | {sh['unexplained']:.0%}"
                     f" | {c['slow_tail']:.0%} | {spread} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS))
    ap.add_argument("--abis", default="i386,x86_64")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "noise.json")
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="abibench-noise-") as tmp:
        cells = prepare(args.workloads.split(","), args.abis.split(","), Path(tmp))
        log(f"{len(cells)} cells built; sampling for {args.minutes:g} min")
        obs = collect(cells, args.minutes, args.seed, args.out.with_suffix(".samples.jsonl"))
    result = {}
    for wl, abi, _, _ in cells:
        rows = [o for o in obs if o.workload == wl.id and o.abi == abi]
        if len(rows) >= 12:
            result[f"{wl.id}/{abi}"] = analyse_cell(rows)
    doc = {"load_before": load0, "load_after": os.getloadavg(), "cpus": os.cpu_count(),
           "minutes": args.minutes, "seed": args.seed, "cells": result}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"load average before {load0[0]:.1f}, after {os.getloadavg()[0]:.1f}; "
          f"{len(obs)} samples; raw samples in {args.out.with_suffix('.samples.jsonl')}")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
