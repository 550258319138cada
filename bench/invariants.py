"""The invariant tests of tests/invariants/ run for longer: more generated cases, new seeds.

    .venv/bin/python bench/invariants.py --minutes 10 [--scale 5]

Runs the generated tests again and again (each round with `--scale` times the examples CI runs
and a new random seed) until the time is up, and prints per invariant how many cases were
generated and how many rounds found a violation (with the failing test's output kept in
bench/out/invariants-ROUND.log).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INVARIANTS = {
    "test_outputs.py": "Outputs never touch inputs",
    "test_ids.py": "Identifiers are never paths",
    "test_one_line.py": "Every error is one line",
    "test_like_with_like.py": "A row compares named with named",
    "test_host_libraries.py": "A verdict is about the program",
    "test_memory_registry.py": "A memory metric is written once",
    "test_columnar.py": "A fast path gives exactly what its definition gives",
    "test_file_columns.py": "A fast path gives exactly what its definition gives (a file)",
}
# Hypothesis's statistics: the test's name, then per phase "- N passing, M failing, and K invalid
# test cases".
_TEST = re.compile(r"^tests/invariants/(test_\w+\.py)::(\w+):", re.M)
_COUNTS = re.compile(r"- (\d+) passing, (\d+) failing")


def one_round(scale: int, seed: int, log: Path) -> tuple[dict[str, int], set[str]]:
    """(generated cases per module, modules with a violation) of one pytest run."""
    env = {**os.environ, "ABIBENCH_INVARIANTS_SCALE": str(scale)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/invariants",
         "--hypothesis-show-statistics", f"--hypothesis-seed={seed}"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    out = done.stdout + done.stderr
    cases: dict[str, int] = {}
    marks = list(_TEST.finditer(out))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(out)
        for passed, failed in _COUNTS.findall(out[mark.end():end]):
            cases[mark.group(1)] = cases.get(mark.group(1), 0) + int(passed) + int(failed)
    failed_modules = {m for m in INVARIANTS if re.search(rf"FAILED tests/invariants/{m}", out)}
    if done.returncode != 0:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(out)
        if not failed_modules:  # pytest itself failed (a collection error): every invariant
            failed_modules = set(INVARIANTS)
    return cases, failed_modules


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--scale", type=int, default=5, help="examples per round, times CI's")
    args = p.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    totals = dict.fromkeys(INVARIANTS, 0)
    violations = dict.fromkeys(INVARIANTS, 0)
    rounds = 0
    while rounds == 0 or time.monotonic() < deadline:
        rounds += 1
        cases, failed = one_round(args.scale, int.from_bytes(os.urandom(4), "big"),
                                  ROOT / "bench" / "out" / f"invariants-{rounds}.log")
        for module, n in cases.items():
            totals[module] = totals.get(module, 0) + n
        for module in failed:
            violations[module] += 1
        print(f"round {rounds}: {sum(cases.values())} cases, violations in: "
              f"{', '.join(INVARIANTS[m] for m in sorted(failed)) or 'none'}", flush=True)
    print(f"\n{'invariant':32s} {'cases':>8s} {'rounds with a violation':>24s}")
    for module, name in INVARIANTS.items():
        print(f"{name:32s} {totals[module]:8d} {violations[module]:>24d}")
    return 1 if any(violations.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
