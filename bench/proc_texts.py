#!/usr/bin/env python3
"""The guests' own /proc texts, from reports kept by `abibench system run --keep-reports DIR`.

The measuring service sends the raw text of /proc/zoneinfo, meminfo and iomem once per boot
(its "R idle <file hex> <text hex>" frame). This writes each verified one as
OUT/<kernel>-<userspace>.<file> (the first boot of each combination found), the texts
tests/test_sysreport_parse.py feeds the parsers:

    .venv/bin/python bench/proc_texts.py bench/out/reports/*.report --out tests/data/proc
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from abibench.run.vm import verified_frames

_RAW = re.compile(r"R idle ((?:[0-9a-f]{2})+) ((?:[0-9a-f]{2})+)")
_NAME = re.compile(r"boot\d+-([a-z0-9-]+)-([a-z0-9_]+)\.report")
FILES = ("zoneinfo", "meminfo", "iomem")


def raw_texts(data: bytes) -> dict[str, bytes]:
    out = {}
    for frame in verified_frames(data):
        if (m := _RAW.fullmatch(frame)) is not None:
            name = bytes.fromhex(m[1]).decode("ascii", "replace")
            if name in FILES:
                out[name] = bytes.fromhex(m[2])
    return out


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
        for name, text in raw_texts(path.read_bytes()).items():
            dest = args.out / f"{m[1]}-{m[2]}.{name}"
            if not dest.exists():
                dest.write_bytes(text)
                print(f"{dest}: {len(text)} bytes from {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
