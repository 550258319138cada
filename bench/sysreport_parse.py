#!/usr/bin/env python3
"""The measuring service's /proc parsers (native/sysreport.c), tried for longer than CI does.

"The measuring service reports only what it read whole" (docs/reliability.md): the generated
tests of tests/test_sysreport_parse.py (real zoneinfo, meminfo, iomem, smaps, smaps_rollup and
status texts reordered, cut, lengthened; the sanitizer build's frames against the reference
parser) called in a loop, each
call a fresh random draw, until the time is up.

    .venv/bin/python bench/sysreport_parse.py --minutes 5
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from drawloop import cli
from tests import test_sysreport_parse as t

CASES = (t.test_zoneinfo_variants_read_as_the_reference_reads_them,
         t.test_meminfo_variants_read_as_the_reference_reads_them,
         t.test_iomem_variants_read_as_the_reference_reads_them,
         t.test_a_zoneinfo_cut_anywhere_reports_no_field_beyond_the_cut,
         t.test_a_zoneinfo_cut_inside_a_fields_line_drops_that_line,
         t.test_a_process_texts_variants_read_as_the_reference_reads_them,
         t.test_a_long_file_name_is_never_read_as_lines)


def main() -> int:
    return cli(__doc__, {"The measuring service reports only what it read whole": CASES})


if __name__ == "__main__":
    sys.exit(main())
