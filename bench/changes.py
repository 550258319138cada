"""The change detector's false-alarm rate: synthetic repeated runs of one build.

Every series is RUNS runs of SAMPLES values each, of one level, so any change point found is a
false alarm; the rate is the share of series with at least one (what a user of `abibench
history` sees: "a change" where there was none). Two kinds of noise:

* iid: every sample independent (lognormal, sd --noise): the permutation test's own setting;
* run offsets: each run also shifted by its own lognormal offset (sd --run-noise), as real
  runs are (another boot, another page layout, a neighbour's load): samples of one run are
  then not exchangeable with another run's, and the test is too eager; min_change guards it.

Run: .venv/bin/python bench/changes.py --minutes 2   (or --series N)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from abibench.analyse.changes import detect


def one_series(rng: np.random.Generator, runs: int, samples: int, noise: float,
               run_noise: float) -> tuple[list[float], list[int]]:
    offsets = run_noise * rng.standard_normal(runs)
    values = (np.repeat(offsets, samples) + noise * rng.standard_normal(runs * samples)).tolist()
    return values, [i * samples for i in range(1, runs)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=None)
    ap.add_argument("--series", type=int, default=400, help="per setting (without --minutes)")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--samples", type=int, default=6)
    ap.add_argument("--noise", type=float, default=0.02)
    ap.add_argument("--run-noise", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    settings = [("iid", 0.0, 0.0), ("iid", 0.0, 0.01),
                ("run offsets", args.run_noise, 0.0), ("run offsets", args.run_noise, 0.01),
                ("run offsets", args.run_noise, 0.02)]
    deadline = None if args.minutes is None else time.monotonic() + 60 * args.minutes
    print(f"{args.runs} runs x {args.samples} samples of one level, sample noise sd "
          f"{args.noise:.0%}; alpha 0.05, 499 permutations")
    print(f"{'noise':12s} {'run sd':>6s} {'min_change':>10s} {'series':>7s} "
          f"{'false alarms':>12s} {'rate':>6s}")
    for kind, run_sd, min_change in settings:
        rng = np.random.default_rng(args.seed)
        n = alarms = 0
        stop = None if deadline is None else time.monotonic() + (deadline - time.monotonic()) \
            / (len(settings) - settings.index((kind, run_sd, min_change)))
        while (n < args.series) if stop is None else (time.monotonic() < stop):
            values, bounds = one_series(rng, args.runs, args.samples, args.noise, run_sd)
            alarms += bool(detect(values, bounds, min_change=min_change, seed=n))
            n += 1
        print(f"{kind:12s} {run_sd:6.1%} {min_change:10.1%} {n:7d} {alarms:12d} "
              f"{alarms / max(n, 1):6.1%}")


if __name__ == "__main__":
    main()
