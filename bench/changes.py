"""The change detector's false-alarm and detection rates: synthetic repeated runs of builds.

A series is BUILDS builds measured RUNS_PER_BUILD times each, SAMPLES values a run (log values,
oldest first), as `abibench history` sees one series of one host. Noise:

* sample noise: every sample independent, lognormal sd --noise (2%);
* run offsets: each run shifted by its own normal offset on the log scale (another boot,
  another page layout, a neighbour's load), sd 1% ("quiet") or, per series, drawn uniformly
  from 3% to 8% ("loaded": what the acceptance run saw on the shared machine).

Detection is a change point found at the planted step (every build from the middle one on
moved by --steps); a false alarm is a change point anywhere else (in a series of one level:
any change point), such as between two runs of one build beside a real step. The prior the detector
uses where a segment has too few runs of its own is what `abibench history` gives it: the
within-build spread of run means of the same host (`pooled_spread`), here from the series'
own builds and --other more series of the same noise (other workloads of the host). "undecided"
counts series with a cut the runs could not decide ("cannot tell"), which is not a change.

Run: nice -n 10 .venv/bin/python bench/changes.py --series 400
"""

from __future__ import annotations

import argparse

import numpy as np

from abibench.analyse.changes import MIN_DF, Spread, pooled_spread, scan


def run_offsets(rng: np.random.Generator, kind: str, n: int) -> np.ndarray:
    sd = 0.01 if kind == "quiet" else rng.uniform(0.03, 0.08)
    return sd * rng.standard_normal(n)


def one_series(rng: np.random.Generator, kind: str, builds: int, per_build: int,
               samples: int, noise: float, step: float
               ) -> tuple[list[float], list[int], list[list[float]]]:
    """Values, run boundaries, and the run means grouped by build."""
    runs = builds * per_build
    levels = np.repeat([0.0 if b < builds // 2 else np.log1p(step) for b in range(builds)],
                       per_build)
    means = levels + run_offsets(rng, kind, runs)
    values = np.repeat(means, samples) + noise * rng.standard_normal(runs * samples)
    run_means = values.reshape(runs, samples).mean(axis=1)
    groups = [run_means[b * per_build:(b + 1) * per_build].tolist() for b in range(builds)]
    return values.tolist(), [i * samples for i in range(1, runs)], groups


def prior_of(rng: np.random.Generator, args: argparse.Namespace, kind: str,
             own: list[list[float]]) -> Spread | None:
    groups = list(own)
    for _ in range(args.other):
        groups += one_series(rng, kind, args.builds, args.per_build, args.samples,
                             args.noise, 0.0)[2]
    return pooled_spread(groups)


# The rules compared: the one `history` uses (the prior where a segment's own runs cannot
# estimate their spread), none ("cannot tell" there), and the rule before it, where the sample
# test decided alone: a prior of no spread at MIN_DF does exactly that.
RULES = ("prior", "none", "samples alone")


def rate(args: argparse.Namespace, kind: str, step: float, rule: str
         ) -> tuple[int, int, int, int]:
    """(series, with a change at the step, with a change anywhere else (a false alarm), with
    an undecided cut)."""
    rng = np.random.default_rng(args.seed)
    hits = wrong = undecided = 0
    at = (args.builds // 2) * args.per_build * args.samples
    for n in range(args.series):
        values, bounds, groups = one_series(rng, kind, args.builds, args.per_build,
                                            args.samples, args.noise, step)
        prior = (prior_of(rng, args, kind, groups) if rule == "prior" else
                 Spread(0.0, MIN_DF) if rule == "samples alone" else None)
        got = scan(values, bounds, seed=n, prior=prior)
        found = [c.index for c in got.changes]
        hits += step > 0 and at in found
        wrong += any(i != at or step == 0 for i in found)
        undecided += bool(got.undecided)
    return args.series, hits, wrong, undecided


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=400, help="per setting")
    ap.add_argument("--builds", type=int, default=2)
    ap.add_argument("--per-build", type=int, default=2)
    ap.add_argument("--samples", type=int, default=6)
    ap.add_argument("--noise", type=float, default=0.02)
    ap.add_argument("--other", type=int, default=0,
                    help="series of other workloads of the host pooled into the prior")
    ap.add_argument("--steps", type=float, nargs="*", default=[0.0, 0.10, 0.20])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(f"{args.builds} builds x {args.per_build} runs x {args.samples} samples, sample "
          f"noise sd {args.noise:.0%}; prior from the series' builds and {args.other} other "
          "series; alpha 0.05, 499 permutations")
    print(f"{'runs offset':12s} {'rule':>13s} {'step':>5s} {'series':>6s} "
          f"{'found':>7s} {'false alarm':>12s} {'undecided':>10s}")
    for kind in ("quiet", "loaded"):
        for rule in RULES:
            for step in args.steps:
                n, hits, wrong, und = rate(args, kind, step, rule)
                found = "-" if step == 0 else f"{hits / n:.1%}"
                print(f"{kind:12s} {rule:>13s} {step:5.0%} {n:6d} {found:>7s} "
                      f"{wrong / n:12.1%} {und / n:10.1%}", flush=True)


if __name__ == "__main__":
    main()
