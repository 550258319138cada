#!/usr/bin/env python3
"""The chart writer's invariant (docs/reliability.md, "A chart's text is written by one function,
escaped once; its coordinates are finite") tried for minutes instead of seconds.

The same generated charts and checks as tests/report/test_svgplot.py (every chart type with
hostile names and extreme numbers, each SVG parsed and checked), with many examples a test and
a new Hypothesis seed each round, until the time is up:

    .venv/bin/python bench/svgcharts.py --minutes 5 [--examples 2000]

Exit 1 at the first round that fails (its pytest output is printed).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--examples", type=int, default=1000, help="examples a test, each round")
    args = ap.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    # The gate's profile draws the same members every run (tests/drawing.py): fresh ones here.
    env = {**os.environ, "ABIBENCH_SVG_EXAMPLES": str(args.examples),
           "HYPOTHESIS_PROFILE": "explore"}
    rounds = 0
    while time.monotonic() < deadline:
        seed = random.randrange(2**32)
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                               "-p", "no:cacheprovider", f"--hypothesis-seed={seed}",
                               "tests/report/test_svgplot.py"], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=False)
        rounds += 1
        if proc.returncode != 0:
            print(proc.stdout[-6000:], proc.stderr[-2000:], sep="\n")
            print(f"round {rounds} (seed {seed}) failed")
            return 1
        print(f"round {rounds} (seed {seed}): passed, {args.examples} examples a test")
    print(f"{rounds} rounds in {args.minutes:g} min, no violation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
