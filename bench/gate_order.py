#!/usr/bin/env python3
"""(Re)write tests/gate_order.json, the longest-first order of the gate, from a recorded run.

The record is one whole gate, best run quiet (wall seconds under load rank the tests by how much
they wait for a core, not by how long they hold a worker):

    CI=true bash scripts/test.sh --cpu-json=gate.json           # then:
    .venv/bin/python bench/gate_order.py gate.json
    .venv/bin/python bench/gate_order.py durations.txt          # or pytest's --durations text

A --cpu-json record gives each test's wall seconds (setup, call and teardown); a --durations
text gives the phases it lists, summed per test. Tests under --min seconds are left out: their
order does not change when the gate ends, and a test missing from the file goes after the listed
ones, in collection order. A test the record names that this checkout no longer has (its file or
its function gone) is left out too.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.cputime import ORDER_FILE  # noqa: E402  (after the path above)

DURATION = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S.*?)\s*$")


def from_record(text: str) -> dict[str, float]:
    """Each test's seconds on its worker, from a --cpu-json record or a --durations text."""
    try:
        rows = json.loads(text)
    except ValueError:
        rows = None
    out: dict[str, float] = {}
    if isinstance(rows, dict):
        for nodeid, row in rows.items():
            if isinstance(row, list) and len(row) == 2 and isinstance(row[1], int | float):
                out[nodeid] = float(row[1])
        return out
    for line in text.splitlines():
        m = DURATION.match(line)
        if m:
            out[m[3]] = out.get(m[3], 0.0) + float(m[1])
    return out


def still_here(nodeid: str, root: Path = ROOT) -> bool:
    """The test's file exists and still defines its function (a record may predate a rename)."""
    path, _, rest = nodeid.partition("::")
    name = rest.split("::")[-1].split("[", 1)[0]
    try:
        text = (root / path).read_text()
    except OSError:
        return False
    return re.search(rf"^\s*(async )?def {re.escape(name)}\(", text, re.MULTILINE) is not None


def order_json(seconds: dict[str, float], least: float) -> str:
    kept = sorted(((n, s) for n, s in seconds.items() if math.isfinite(s) and s >= least),
                  key=lambda r: (-r[1], r[0]))
    lines = [f"{json.dumps(n)}: {s:.1f}" for n, s in kept]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("record", type=Path, help="a --cpu-json file or a --durations text")
    ap.add_argument("--min", type=float, default=5.0, help="leave out tests under this (s)")
    ap.add_argument("-o", type=Path, default=ORDER_FILE, help="where (tests/gate_order.json)")
    args = ap.parse_args()
    seconds = from_record(args.record.read_text())
    gone = [n for n in seconds if not still_here(n)]
    for n in gone:
        del seconds[n]
    if not seconds:
        print(f"gate_order: {args.record}: no test durations found (give a --cpu-json file "
              f"or pytest's --durations output)", file=sys.stderr)
        return 2
    args.o.write_text(order_json(seconds, args.min))
    print(f"gate_order: {sum(s >= args.min for s in seconds.values())} of {len(seconds)} tests "
          f"written to {args.o}" + (f"; {len(gone)} no longer here" if gone else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
