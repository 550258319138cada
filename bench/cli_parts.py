#!/usr/bin/env python3
"""The command line built in parts, tried for longer than CI does.

"A command line built in parts answers as the whole one does" (docs/reliability.md): the
generated tests of tests/invariants/test_cli_parts.py (command lines drawn from the whole
parser, parsed by a lazily built one in this process and in fresh starts) called in a loop, each
call a fresh random draw with SCALE times CI's examples, until the time is up.

    .venv/bin/python bench/cli_parts.py --minutes 5
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ["ABIBENCH_INVARIANTS_SCALE"] = "5"

from drawloop import cli
from tests.invariants import test_cli_parts as t

CASES = (t.test_the_parser_built_in_parts_answers_every_command_line_as_the_whole_one,
         t.test_a_fresh_start_answers_every_command_line_as_the_whole_parser)


def main() -> int:
    return cli(__doc__, {"A command line built in parts answers as the whole one does": CASES})


if __name__ == "__main__":
    sys.exit(main())
