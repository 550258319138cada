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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from drawloop import cli
from tests import test_system_store as resume
from tests.store import test_push_system as push

# Outside pytest the default Hypothesis profile draws afresh at every call (the gate's
# derandomized profile is loaded by tests/conftest.py only).
CASES = (push.test_a_system_run_pushed_after_any_cut_holds_each_boot_once,
         resume.test_a_run_resumed_after_any_interruptions_boots_each_place_once)


def main() -> int:
    return cli(__doc__, {"A push carries every boot once; a resume boots every place once": CASES})


if __name__ == "__main__":
    sys.exit(main())
