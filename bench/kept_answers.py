#!/usr/bin/env python3
"""Kept answers, tried for longer than CI does.

"A kept answer goes through kept.py" (docs/reliability.md): the generated tests of
tests/invariants/test_kept_answers.py (every cache's entry damaged, writes and locks that fail,
makers at once) and tests/obtain/test_elf_facts.py (damaged ELF files read alike with their
facts kept or not), called in a loop, each call a fresh random draw with SCALE times CI's
examples, until the time is up.

    .venv/bin/python bench/kept_answers.py --minutes 5
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ["ABIBENCH_INVARIANTS_SCALE"] = "5"

from drawloop import cli
from tests.invariants import test_kept_answers as k
from tests.obtain import test_elf_facts as e


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="kept-answers-") as tmp:
        deb = k.make_probe_deb(Path(tmp, "deb"))
        bases = e.make_bases(Path(tmp))
        cases = (functools.partial(k.test_a_damaged_entry_of_any_cache_is_read_from_its_source_again,
                                   probe_deb=deb),
                 k.test_a_write_that_fails_costs_only_a_re_ask,
                 k.test_two_makers_at_once_read_the_source_once,
                 k.test_the_check_finds_every_drawn_writer_of_json,
                 functools.partial(e.test_a_damaged_elf_gets_the_answer_and_the_error_it_got_before,
                                   bases=bases))
        return cli(__doc__, {"A kept answer goes through kept.py": cases})


if __name__ == "__main__":
    sys.exit(main())
