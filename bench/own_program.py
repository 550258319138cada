#!/usr/bin/env python3
"""The generated tests of "your own program" and "sweeps are curves", tried for longer than CI.

Runs the pure generated tests of tests/obtain/test_own_program.py and tests/analyse/test_sweeps.py
(a log's cause, each ABI once, a C++ file's driver, a prebuilt program's runnability; sweep
instance ids, the suite counting a sweep once, the crossover words) in batches with fresh random
seeds until the time is up, and prints per invariant how many cases were generated and how many
batches found a violation (with the first failure of each).

    .venv/bin/python bench/own_program.py --minutes 5
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
SCALE = 5  # each call generates this many times CI's examples, with a fresh random seed
os.environ["ABIBENCH_TEST_SCALE"] = str(SCALE)

from drawloop import cli  # noqa: E402
from tests.analyse import test_sweeps as sweeps  # noqa: E402
from tests.obtain import test_own_program as own  # noqa: E402

CASES: dict[str, Callable[..., Any]] = {
    "a failed build's cause is a few sanitised lines":
        own.test_a_logs_cause_is_few_sanitised_lines_ending_with_its_last_error,
    "each ABI once": own.test_an_abi_list_names_each_abi_once,
    "a C++ file makes a C++ link": own.test_any_cxx_file_makes_the_build_a_cxx_link,
    "every ABI names its C++ packages": own.test_every_abi_names_the_cxx_packages_of_its_compiler,
    "a prebuilt program's runnability is its own":
        own.test_a_prebuilt_programs_runnability_is_its_own,
    "an instance id names its sweep":
        sweeps.test_every_instance_id_names_its_profile_parameter_and_value,
    "the suite counts a sweep once":
        sweeps.test_the_suite_counts_each_sweep_once_at_its_largest_value,
    "the crossover names each run of outcomes":
        sweeps.test_the_crossover_names_one_outcome_per_run_of_values,
}


def main() -> int:
    return cli(__doc__, {name: [fn] for name, fn in CASES.items()})


if __name__ == "__main__":
    sys.exit(main())
