#!/usr/bin/env python3
"""Which sampling design buys the most precision a minute here: a study on real workloads.

For each workload, each design (sequential A B / B A rounds, simultaneous pairs on two CPUs,
sequential with a covariate loop on the other CPU, and the short design where the profile has
[run] short) runs the same number of counted rounds with `abibench run --rounds N --design D`,
in blocks that take the designs in turn (twice by default), so a drift of the machine falls on
each alike. From the stored samples:

* sd: the spread of a round's log ratio (the paired estimator's input); for the covariate design
  also what is left after the regression on the loop's speed (the adjustment the analysis uses
  when it predicts the rounds);
* round: the seconds one counted round took (from the samples' own start times);
* ±/min: the CI half-width a minute of such rounds would give (1.96 sd / sqrt(60 / round));
* foreign: the CPU time other processes used per round (what a neighbour took).

    .venv/bin/python bench/designs.py [WORKLOAD...] [--rounds 8] [--blocks 2] [--out FILE]

Prints the table (Markdown) and writes everything to --out (JSON). Nothing here is a test:
the numbers are this machine's, at the moment of the run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from abibench import estimators
from abibench.workloads.profile import load_workloads

DESIGNS = ("sequential", "simultaneous", "covariate", "short")
DEFAULT_WORKLOADS = ("nbody", "ptrtree", "lua", "stream", "sqlite-speedtest1")


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def read_rounds(db: Path, run_id: str) -> dict[str, Any]:
    """The run's per-round log ratios (first target over x86_64), covariates, round times."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    (config,) = con.execute("SELECT config_json FROM runs WHERE id=?", (run_id,)).fetchone()
    (wid, meta), = json.loads(config)["workloads"].items()
    primary = meta["primary"]
    rows = con.execute(
        "SELECT target, round, wall_s, user_s, metrics_json, started_at, covariate, "
        "foreign_cpu_s, design, repeat FROM samples WHERE run_id=? AND status='ok' AND "
        "warmup=0 AND kind='timed'", (run_id,)).fetchall()
    by: dict[str, dict[int, tuple[float, Any, float, float]]] = {}
    designs, repeats = set(), set()
    for target, rnd, wall, user, metrics, started, cov, foreign, design, rep in rows:
        v = {"wall": wall, "user": user}.get(primary)
        v = json.loads(metrics).get(primary) if v is None else v
        if v is None or v <= 0:
            continue
        by.setdefault(target, {})[rnd] = (float(v), cov, _ts(started) + wall * rep,
                                          foreign or 0.0)
        designs.add(design)
        repeats.add(rep)
    ref = by.get("x86_64", {})
    other: Any = next((t for t in by if t != "x86_64"), None)
    rounds = sorted(set(ref) & set(by.get(other, {}))) if other else []
    d = np.log([by[other][r][0] for r in rounds]) - np.log([ref[r][0] for r in rounds]) \
        if other else np.zeros(0)
    starts = [min(_ts(s) for (t, rn, *_x, s, _c, _f, _dz, _rp) in rows if rn == r)
              for r in rounds]
    ends = [max(by[other][r][2], ref[r][2]) for r in rounds] if other else []
    round_s = float(np.median(np.diff(starts))) if len(starts) > 2 else \
        float(np.median([e - s for s, e in zip(starts, ends, strict=True)])) if starts else math.nan
    cov = None
    if other and all(by[other][r][1] and ref[r][1] for r in rounds):
        cov = np.log([by[other][r][1] for r in rounds]) - np.log([ref[r][1] for r in rounds])
    foreign = float(np.mean([by[other][r][3] + ref[r][3] for r in rounds])) if rounds else 0.0
    return {"workload": wid, "pair": f"{other}/x86_64", "d": d, "cov": cov,
            "round_s": round_s, "foreign_s": foreign, "designs": sorted(designs),
            "repeat": sorted(repeats)}


def summarise(d: np.ndarray, cov: np.ndarray | None, round_s: float) -> dict[str, Any]:
    sd = float(np.std(d, ddof=1)) if d.size > 1 else math.nan
    out: dict[str, Any] = {"rounds": int(d.size), "sd": sd, "round_s": round_s}
    if cov is not None and d.size >= 4:
        iv = estimators.covariate_interval(d, cov)
        out["adjusted"] = iv.method == "t+covariate"
        c = cov - cov.mean()
        slope = float(np.dot(c, d - d.mean()) / np.dot(c, c)) if np.dot(c, c) > 0 else 0.0
        r = d - d.mean() - slope * c
        out["sd_residual"] = float(math.sqrt(np.dot(r, r) / max(1, d.size - 2)))
    eff = out.get("sd_residual", sd) if out.get("adjusted") else sd
    out["pm_per_min"] = 1.96 * eff / math.sqrt(60.0 / round_s) * 100 if round_s > 0 else math.nan
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workloads", nargs="*", default=list(DEFAULT_WORKLOADS))
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path("bench/out/designs.json"))
    args = p.parse_args(argv)
    abibench = Path(sys.executable).with_name("abibench")
    data = Path(tempfile.mkdtemp(prefix="abibench-designs-"))
    env = {**os.environ, "ABIBENCH_DATA": str(data)}
    wls = {w.id: w for w in load_workloads(args.workloads, None, {})}
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    t0 = time.monotonic()
    for block in range(args.blocks):
        for wid in args.workloads:
            for design in DESIGNS:
                if design == "short" and not wls[wid].short:
                    continue
                cmd = [str(abibench), "run", wid, "--abi", "i386,x86_64", "--rounds",
                       str(args.rounds), "--design", design, "--no-html", "--json"]
                r = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{wid} {design}: exit {r.returncode}: {r.stderr.strip()[-300:]}",
                          file=sys.stderr)
                    continue
                run_id = json.loads(r.stdout)["run"]["id"]
                got = read_rounds(data / "results.sqlite", run_id)
                s = summarise(got["d"], got["cov"], got["round_s"])
                s.update(block=block, foreign_s=got["foreign_s"], used=got["designs"],
                         repeat=got["repeat"])
                results.setdefault(wid, {}).setdefault(design, []).append(s)
                print(f"[{time.monotonic() - t0:6.0f}s] {wid:18s} {design:12s} "
                      f"sd {s['sd'] * 100:5.1f}%  round {s['round_s']:.2f}s  "
                      f"±{s['pm_per_min']:.1f}%/min  used {got['designs']}", file=sys.stderr)
    print("\n| workload | design | rounds | per-round sd | s/round | ±% in 1 min | foreign CPU s/round |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for wid, per in results.items():
        for design, runs in per.items():
            sd = float(np.sqrt(np.mean([float(r["sd"]) ** 2 for r in runs])))
            rs = float(np.mean([float(r["round_s"]) for r in runs]))
            pm = float(np.mean([float(r["pm_per_min"]) for r in runs]))
            fo = float(np.mean([float(r["foreign_s"]) for r in runs]))
            n = sum(int(r["rounds"]) for r in runs)
            extra = ""
            if design == "covariate":
                adj = [r for r in runs if r.get("adjusted")]
                extra = f" (adjusted in {len(adj)}/{len(runs)})"
            print(f"| {wid} | {design}{extra} | {n} | {sd * 100:.1f}% | {rs:.2f} | ±{pm:.1f}% | "
                  f"{fo:.2f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rounds": args.rounds, "blocks": args.blocks,
                                    "results": results}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
