#!/usr/bin/env python3
"""Which interval for the per-round log ratios: coverage and width on this machine's rounds.

For every workload and ABI pair of the given runs with at least --min-rounds counted rounds, the
recorded per-round log ratios are the population. Many times over, n rounds are drawn from it
(with replacement) and every method of abibench.estimators computes its 95% interval; coverage
is how often the interval holds the method's own centre of the whole population (the mean for
t, the trimmed mean, the Hodges-Lehmann centre, the median), width the interval's median width
in percent. The same on synthetic rounds: normal noise, heavy tails (t with 3 degrees of
freedom), and one-sided outliers (a neighbour's burst slows one target's sample), where the
truth is the clean shift.

    .venv/bin/python bench/estimators.py DB [DB...] [--n 5,10,20] [--draws 2000] [--out FILE]

Prints one table per data set and writes everything to --out (JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from abibench import estimators

FloatArray = estimators.FloatArray
Truth = Callable[[FloatArray], float]


def _trimmed_mean(d: FloatArray) -> float:
    s = np.sort(d)
    g = math.floor(estimators.TRIM * s.size)
    return float(np.mean(s[g:s.size - g]))


def _hl(d: FloatArray) -> float:
    i, j = np.triu_indices(d.size)
    return float(np.median((d[i] + d[j]) / 2.0))


OWN_CENTRE: dict[str, Truth] = {"t": lambda d: float(np.mean(d)), "trimmed": _trimmed_mean,
                                "hl": _hl, "median": lambda d: float(np.median(d))}


def recorded(dbs: list[Path], min_rounds: int) -> dict[str, FloatArray]:
    """name -> per-round log ratios (other/x86_64) of the primary metric, counted rounds only."""
    out: dict[str, FloatArray] = {}
    for db in dbs:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        runs = con.execute("SELECT id, config_json FROM runs").fetchall()
        for run_id, config in runs:
            metas = json.loads(config).get("workloads", {})
            for wid, meta in metas.items():
                primary = meta["primary"]
                rows = con.execute(
                    "SELECT target, round, wall_s, user_s, metrics_json FROM samples WHERE "
                    "run_id=? AND workload=? AND status='ok' AND warmup=0 AND "
                    "kind='timed' AND (discarded IS NULL)", (run_id, wid)).fetchall()
                by: dict[str, dict[int, float]] = {}
                for target, rnd, wall, user, metrics in rows:
                    v = {"wall": wall, "user": user}.get(primary)
                    v = json.loads(metrics).get(primary) if v is None else v
                    if v is not None and v > 0:
                        by.setdefault(target, {})[rnd] = float(v)
                ref = "x86_64" if "x86_64" in by else None
                for target, vals in by.items():
                    if ref is None or target == ref:
                        continue
                    common = sorted(set(vals) & set(by[ref]))
                    if len(common) >= min_rounds:
                        d = np.log([vals[r] for r in common]) - np.log(
                            [by[ref][r] for r in common])
                        out[f"{wid} {target}/{ref} ({run_id[-4:]})"] = np.asarray(d)
    return out


def synthetic(rng: np.random.Generator) -> dict[str, tuple[FloatArray, float]]:
    """name -> (a large population of log ratios, the true shift)."""
    n, shift, sd = 200_000, 0.05, 0.08
    clean = rng.normal(shift, sd, n)
    heavy = shift + sd * rng.standard_t(3, n) / math.sqrt(3)
    bursts = clean.copy()
    hit = rng.random(n) < 0.10  # one round in ten: a neighbour slows one target's sample
    bursts[hit] += rng.exponential(0.4, hit.sum())
    return {"normal": (clean, shift), "heavy tails (t3)": (heavy, shift),
            "10% one-sided bursts": (bursts, shift)}


def study(pop: FloatArray, n: int, draws: int, rng: np.random.Generator,
          truth: float | None) -> dict[str, dict[str, float]]:
    res: dict[str, dict[str, float]] = {}
    for name, method in estimators.METHODS.items():
        target = truth if truth is not None else OWN_CENTRE[name](pop)
        hit = widths = 0
        ws = []
        for _ in range(draws):
            d = pop[rng.integers(0, pop.size, n)]
            iv = method(d, seed=int(rng.integers(0, 2**31)))
            if not (math.isfinite(iv.low) and math.isfinite(iv.high)):
                continue
            widths += 1
            hit += iv.low <= target <= iv.high
            ws.append((math.exp(iv.high) - math.exp(iv.low)) / 2 * 100)
        res[name] = {"coverage": hit / widths if widths else math.nan,
                     "half_width_pct": float(np.median(ws)) if ws else math.nan,
                     "defined": widths / draws}
    return res


def show(title: str, table: dict[int, dict[str, dict[str, float]]]) -> None:
    print(f"\n{title}")
    print(f"{'n':>4}  " + "  ".join(f"{m:>18}" for m in estimators.METHODS))
    for n, row in table.items():
        cells = []
        for m in estimators.METHODS:
            r = row[m]
            mark = "" if r["coverage"] >= 0.945 else "!"
            cells.append(f"{r['coverage'] * 100:5.1f}%{mark:1} ±{r['half_width_pct']:5.2f}%")
        print(f"{n:>4}  " + "  ".join(f"{c:>18}" for c in cells))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dbs", nargs="*", type=Path)
    p.add_argument("--n", default="5,10,20")
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--min-rounds", type=int, default=30)
    p.add_argument("--out", type=Path, default=Path("bench/out/estimators.json"))
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.n.split(",")]
    rng = np.random.default_rng(20261123)
    results: dict[str, object] = {}
    print("coverage of the 95% interval (! below 94.5%) and median half-width, per method")
    for name, (pop, truth) in synthetic(rng).items():
        table = {n: study(pop, n, args.draws, rng, truth) for n in sizes}
        show(f"synthetic: {name} (truth = the clean shift)", table)
        results[f"synthetic: {name}"] = table
    for name, pop in recorded(args.dbs, args.min_rounds).items():
        table = {n: study(pop, n, args.draws, rng, None) for n in sizes}
        show(f"recorded: {name}, {pop.size} rounds, sd {np.std(pop, ddof=1) * 100:.1f}%", table)
        results[f"recorded: {name}"] = table
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
