"""Every fault at every checkpoint: the harness of tests/faults/ without its sample.

The tests try each fault (a kill, a full disk, the database deleted, replaced or overwritten,
the program or the build cache replaced) at one checkpoint drawn per day; this tries every
fault after every stored sample of the run, k = 1..N, in a shuffled order (so that a short
budget still reaches every fault), until all are done or the time is up:

    .venv/bin/python bench/faults.py --minutes 20          # all of them: 88 cases, ~10 min
    .venv/bin/python bench/faults.py --minutes 3 --fault db-deleted --fault SIGKILL

Prints per fault how many cases were tried and how many broke an invariant (with what), and
exits 1 if any did. The disk-full cases mount a tmpfs and need root (skipped otherwise).
Everything happens in a temporary directory, removed at the end.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.faults.harness import (
    FAULTS,
    Outcome,
    Unavailable,
    all_cases,
    as_json,
    run_case,
    sandbox,
    summary,
    warm,
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0, help="time budget (default 20)")
    ap.add_argument("--fault", action="append", choices=FAULTS,
                    help="only these faults (repeatable; default all)")
    ap.add_argument("--seed", type=int, default=26, help="order of the cases (default 26)")
    ap.add_argument("--json", type=Path, help="also write every case's outcome here")
    args = ap.parse_args()
    end = time.monotonic() + args.minutes * 60
    outcomes: list[Outcome] = []
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="abibench-faults-") as tmp:
        root = Path(tmp)
        cache, samples = warm(root / "warm")
        cases = [c for c in all_cases(samples) if not args.fault or c.fault in args.fault]
        random.Random(args.seed).shuffle(cases)
        print(f"a run stores {samples} samples: {len(cases)} cases "
              f"({len(cases) // samples} faults x {samples} checkpoints)", flush=True)
        for n, case in enumerate(cases):
            if time.monotonic() > end:
                break
            if case.fault in skipped:
                continue
            try:
                out = run_case(case, sandbox(case, root / f"case{n}", cache), samples)
            except Unavailable as exc:
                skipped[case.fault] = str(exc)
                continue
            outcomes.append(out)
            print(f"{case.id}: exit {out.code}"
                  + "".join(f"\n  VIOLATION {v}" for v in out.violations), flush=True)
    print(f"\n{len(outcomes)} of {len(cases)} cases tried")
    for fault, row in summary(outcomes).items():
        print(f"{fault:>20}: {row['cases']:3d} cases, {row['violations']:3d} violations")
    for fault, why in skipped.items():
        print(f"{fault:>20}: skipped: {why}")
    if args.json:
        args.json.write_text(as_json(outcomes))
    return 1 if any(o.violations for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
