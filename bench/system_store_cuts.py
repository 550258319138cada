#!/usr/bin/env python3
"""The system store's two invariants (docs/reliability.md), tried for longer than CI does.

"A push carries every record of a run, each once" and "a resumed system run boots each place
of its order exactly once": the generated tests of tests/store/test_push_system.py (a system run
cut at any row of any table, pushed, pushed again) and tests/test_system_store.py (any
interruptions and resumes through the command's sink and plan) called in a loop, each call with
fresh random draws, until the time is up. Prints how many cases were generated and how many
calls found a violation, with the first failure.

    .venv/bin/python bench/system_store_cuts.py --minutes 5
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import test_system_store as resume
from tests.store import test_push_system as push

# Outside pytest the default Hypothesis profile draws afresh at every call (the gate's
# derandomized profile is loaded by tests/conftest.py only).
CASES = (push.test_a_system_run_pushed_after_any_cut_holds_each_boot_once,
         resume.test_a_run_resumed_after_any_interruptions_boots_each_place_once)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    args = ap.parse_args()
    end = time.monotonic() + args.minutes * 60
    cases = violations = calls = 0
    first = ""
    while time.monotonic() < end:
        fn = CASES[calls % len(CASES)]
        calls += 1
        cases += fn._hypothesis_internal_use_settings.max_examples  # type: ignore[attr-defined]
        try:
            fn()
        except Exception:  # a violation: counted, the first one kept whole
            violations += 1
            first = first or traceback.format_exc()
    print(f"A push carries every boot once; a resume boots every place once: {cases} generated "
          f"cases, {calls} calls, {violations} violating")
    if first:
        print(first)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
