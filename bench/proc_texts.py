#!/usr/bin/env python3
"""The guests' own /proc texts, from reports kept by `abibench system run --keep-reports DIR`.

The measuring service sends the raw text of /proc/zoneinfo, meminfo and iomem once per boot
(its "R idle <file hex> <text hex>" frame). This writes each verified one as
OUT/<kernel>-<userspace>.<file> (the first boot of each combination found), the texts
tests/test_sysreport_parse.py feeds the parsers. It also checks each report's idle Z, M and K
frames (what the guest's own build of the parsers read) against the frames the host's build
of the same parsers reads from the same raw texts, and says whether they agree:

    .venv/bin/python bench/proc_texts.py bench/out/reports/*.report --out tests/data/proc
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.test_sysreport_parse import guest_agrees, raw_texts

_NAME = re.compile(r"boot\d+-([a-z0-9-]+)-([a-z0-9_]+)\.report")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", type=Path, nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for path in sorted(args.reports):
        m = _NAME.fullmatch(path.name)
        if m is None:
            continue
        data = path.read_bytes()
        print(f"{path.name}: the guest's frames "
              + ("agree with" if guest_agrees(data) else "DIFFER from") + " the host build's")
        for name, text in raw_texts(data).items():
            dest = args.out / f"{m[1]}-{m[2]}.{name}"
            if not dest.exists():
                dest.write_bytes(text)
                print(f"{dest}: {len(text)} bytes from {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
