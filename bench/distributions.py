"""abibench.distributions against scipy, longer than the gate's generated tests.

The sign test's rank: every sample count 2..--n-max at the tails of the usual confidences and of
dyadic ones (where P(X <= k) can equal the tail), then --random random (n, tail) pairs up to
10^6 samples, each against scipy.stats' rank. Student's t: --t-random random (x, df) and (q, df)
pairs, df log-uniform over [1e-3, 1e6] and integers, x and q over the centre, the tails and the
far tails, plus a grid of edge values; each against the test's reference (scipy.stats, or scipy
another way where scipy.stats is off the function: tests/invariants/test_distributions.py) within
the module's stated tolerance. Prints the disagreements (0 expected), the largest relative
errors seen and the time per call.

Run: nice -n 10 .venv/bin/python bench/distributions.py --n-max 5000 --random 20000 --t-random 20000
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.invariants.test_distributions import (
    REL,
    close,
    ppf_tolerance,
    reference_ppf,
    reference_rank,
    reference_sf,
)

from abibench.distributions import sign_test_rank, t_ppf, t_sf

TAILS = (0.025, 0.05, 0.005, 0.0005, 0.0625, 0.125, 0.25, 0.015625, 0.0009765625)


def rank_disagreements(n_max: int, random: int, seed: int) -> tuple[int, float]:
    bad, spent, calls = 0, 0.0, 0
    pairs = [(n, tail) for n in range(2, n_max + 1) for tail in TAILS]
    rng = np.random.default_rng(seed)
    pairs += [(int(n), float(t)) for n, t in zip(rng.integers(2, 1_000_001, random),
                                                 rng.uniform(1e-6, 0.5, random), strict=True)]
    for n, tail in pairs:
        start = time.perf_counter()
        ours = sign_test_rank(n, tail)
        spent += time.perf_counter() - start
        calls += 1
        if ours != reference_rank(n, tail):
            bad += 1
            print(f"rank n={n} tail={tail!r}: {ours} != {reference_rank(n, tail)}")
    return bad, spent / calls


def _relative(ours: float, ref: float) -> float:
    if ours == ref or (math.isnan(ours) and math.isnan(ref)):
        return 0.0
    if not (math.isfinite(ours) and math.isfinite(ref)):
        return math.inf
    return abs(ours - ref) / max(abs(ref), 1e-300)


def t_arguments(count: int, seed: int) -> list[tuple[float, float, float]]:
    """(x, q, df) triples: df log-uniform and whole, x and q at the centre, tails, far tails."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        df = float(10 ** rng.uniform(-3, 6)) if rng.random() < 0.7 else float(
            rng.integers(1, 10_001))
        x = float(rng.choice([rng.normal(0, 3), rng.normal(0, 30), 10 ** rng.uniform(-10, 300)])
                  * rng.choice([-1, 1]))
        q = float(rng.choice([rng.random(), 10 ** -rng.uniform(0, 300),
                              1 - 10 ** -rng.uniform(0, 16), 0.5 + rng.normal(0, 1e-5)]))
        out.append((x, q, df))
    grid_df = [0.0, -1.0, 0.3, 1.0, 2.5, 7.0, 30.0, 1e3, 1e6, 1e300, math.inf, math.nan]
    for df in grid_df:
        for x, q in zip([0.0, -0.0, 1.96, -3.5, 40.0, math.inf, -math.inf, math.nan, 1e200],
                        [0.0, 1.0, -0.1, 1.1, 0.5, 0.975, 0.995, 1e-12, math.nan], strict=True):
            out.append((x, q, df))
    return out


def t_disagreements(count: int, seed: int) -> tuple[int, float, float, float]:
    bad, worst_sf, worst_ppf, spent = 0, 0.0, 0.0, 0.0
    args = t_arguments(count, seed)
    for x, q, df in args:
        start = time.perf_counter()
        sf, ppf = t_sf(x, df), t_ppf(q, df)
        spent += time.perf_counter() - start
        ref_sf, ref_ppf = reference_sf(x, df), reference_ppf(q, df)
        if not close(sf, ref_sf):
            bad += 1
            print(f"t_sf({x!r}, {df!r}) = {sf!r}, reference {ref_sf!r}")
        if not close(ppf, ref_ppf, ppf_tolerance(q, df)):
            bad += 1
            print(f"t_ppf({q!r}, {df!r}) = {ppf!r}, reference {ref_ppf!r}")
        if abs(ref_sf) >= 1e-300:
            worst_sf = max(worst_sf, _relative(sf, ref_sf))
        if df >= 1 and math.isfinite(ref_ppf):
            worst_ppf = max(worst_ppf, _relative(ppf, ref_ppf))
    return bad, worst_sf, worst_ppf, spent / len(args)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n-max", type=int, default=5000)
    ap.add_argument("--random", type=int, default=20000)
    ap.add_argument("--t-random", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ranks, per_rank = rank_disagreements(args.n_max, args.random, args.seed)
    ts, worst_sf, worst_ppf, per_t = t_disagreements(args.t_random, args.seed)
    print(f"sign-test ranks: {ranks} disagreements ({per_rank * 1e3:.3f} ms a rank); "
          f"Student t: {ts} disagreements beyond the contract (relative {REL:g}; the quantile "
          f"{REL:g}/df below df = 1); largest relative error t_sf {worst_sf:.2e}, "
          f"t_ppf (df >= 1) {worst_ppf:.2e} ({per_t * 1e3:.3f} ms a t_sf + t_ppf)")
    return 1 if ranks or ts else 0


if __name__ == "__main__":
    sys.exit(main())
