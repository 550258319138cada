#!/usr/bin/env python3
"""The two build invariants of docs/reliability.md, tried for longer than CI does.

Runs the generated tests of tests/obtain/test_build_inputs.py ("A build's cache key covers every
input") and tests/obtain/test_build_processes.py ("Nothing abibench starts outlives it") in
batches with fresh random seeds until the time is up, sandboxed and unconfined, and prints how
many cases each invariant generated and how many calls found a violation (with the first
failure of each). Real builds, real signals; nothing is mocked.

    .venv/bin/python bench/build_invariants.py --minutes 10
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
SCALE = 3  # each call generates this many times CI's examples, with a fresh random seed
os.environ["ABIBENCH_TEST_SCALE"] = str(SCALE)

from drawloop import cli  # noqa: E402
from tests.obtain import test_build_inputs as inputs  # noqa: E402
from tests.obtain import test_build_processes as kills  # noqa: E402

MODES = ("sandboxed", "unconfined")
CASES: dict[str, list[tuple[str, Callable[..., Any], dict[str, str]]]] = {
    "A build's cache key covers every input": [
        *((f"reads ({m})", inputs.test_a_build_never_reuses_what_it_read_before_a_change,
           {"how": m}) for m in MODES),
        *((f"declared changes ({m})", inputs.test_every_change_to_a_declared_input_changes_the_key,
           {"how": m}) for m in MODES),
        ("tools named", inputs.test_every_tool_a_command_names_is_recorded, {}),
    ],
    "Nothing abibench starts outlives it": [
        (f"killed ({m})", kills.test_no_build_process_or_staging_dir_outlives_abibench,
         {"how": m}) for m in MODES],
}


def main() -> int:
    return cli(__doc__, {inv: [functools.partial(fn, **kw) for _label, fn, kw in items]
                         for inv, items in CASES.items()})


if __name__ == "__main__":
    sys.exit(main())
