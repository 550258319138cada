"""abibench.distributions against scipy.stats, longer than the gate's generated test.

Every sample count 2..--n-max at the tails of the usual confidences and of dyadic ones (where
P(X <= k) can equal the tail), then --random random (n, tail) pairs up to 10^6 samples; the
Student-t quantile and tail on a grid of df (0, negative, fractional, large, infinite, nan)
and probabilities (0, 1, outside [0, 1], nan). Prints the number of disagreements (0 expected).

Run: nice -n 10 .venv/bin/python bench/distributions.py --n-max 5000 --random 20000
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import scipy.stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.invariants.test_distributions import reference_rank

from abibench.distributions import sign_test_rank, t_ppf, t_sf

TAILS = (0.025, 0.05, 0.005, 0.0005, 0.0625, 0.125, 0.25, 0.015625, 0.0009765625)


def rank_disagreements(n_max: int, random: int, seed: int) -> int:
    bad = 0
    for n in range(2, n_max + 1):
        for tail in TAILS:
            bad += sign_test_rank(n, tail) != reference_rank(n, tail)
    rng = np.random.default_rng(seed)
    for n, tail in zip(rng.integers(2, 1_000_001, random), rng.uniform(1e-6, 0.5, random),
                       strict=True):
        bad += sign_test_rank(int(n), float(tail)) != reference_rank(int(n), float(tail))
    return bad


def t_disagreements() -> int:
    dfs = [0.0, -1.0, 0.3, 1.0, 2.5, 7.0, 30.0, 1e3, 1e7, 1e300, math.inf, math.nan]
    qs = [0.0, 1.0, -0.1, 1.1, 0.5, 0.975, 0.995, 1e-12, math.nan]
    xs = [0.0, -0.0, 1.96, -3.5, 40.0, math.inf, -math.inf, math.nan]
    bad = 0
    for df in dfs:
        for q in qs:
            a, b = t_ppf(q, df), float(sps.t.ppf(q, df))
            bad += not (a == b or (math.isnan(a) and math.isnan(b)))
        for x in xs:
            a, b = t_sf(x, df), float(sps.t.sf(x, df))
            bad += not (a == b or (math.isnan(a) and math.isnan(b)))
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-max", type=int, default=5000)
    ap.add_argument("--random", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ranks = rank_disagreements(args.n_max, args.random, args.seed)
    ts = t_disagreements()
    print(f"sign-test ranks: {ranks} disagreements; Student t: {ts} disagreements")
    return 1 if ranks or ts else 0


if __name__ == "__main__":
    sys.exit(main())
