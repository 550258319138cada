#!/usr/bin/env python3
"""The guest report's invariant (docs/systems.md), tried for longer than CI does.

"A guest's report is read only as verified whole frames": the generated tests of
tests/test_vm.py (every result reads back; a report cut and garbled anywhere gives exactly the
whole frames before the damage; what a program prints cannot forge a frame) called in a loop,
each call a fresh random seed, until the time is up. Prints how many cases were generated and
how many calls found a violation, with the first failure.

    .venv/bin/python bench/vm_frames.py --minutes 5
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from drawloop import cli
from tests import test_vm as t

CASES = (t.test_every_result_reads_back_exactly,
         t.test_a_report_cut_and_garbled_anywhere_gives_only_whole_frames,
         t.test_what_a_program_prints_cannot_forge_a_frame)


def main() -> int:
    return cli(__doc__, {"A guest's report is read only as verified whole frames": CASES})


if __name__ == "__main__":
    sys.exit(main())
