#!/usr/bin/env python3
"""How abibench's analysis scales with the size of a run: time and peak memory per command.

    .venv/bin/python bench/scale.py [--sizes 1000,10000,100000,1000000] [--workloads 10]

For each size N a synthetic run of N samples (tests/conftest.py's `synthetic_doc`: the shape
`abibench export` writes, two targets, `--workloads` workloads, N / workloads / 2 rounds each)
is written to a file, imported into a fresh results database, and then every reading command
runs on it in its own process, timed with GNU time's wall clock and maximum RSS: `import`,
`report` (terminal), `report --html`, `report --csv`, `report --samples-csv`, `report --json`,
`explain`, `advise --memory 4GiB`, `compare` of the run with itself, and `export`. A command
that fails or passes the limit is shown as such. The fitted exponent of each command's time
(least squares of log time on log N over the sizes above 10,000) says whether it is linear.
Prints a table and writes bench/out/scale.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.conftest import synthetic_doc  # noqa: E402
from tests.readingcommands import READING_COMMANDS  # noqa: E402

COMMANDS = READING_COMMANDS


def _timed(argv: list[str], env: dict[str, str], limit: float) -> dict[str, Any]:
    """Wall seconds and peak RSS (KiB) of one command, by GNU time, or why it has none."""
    fmt = "@@time %e %M %U %S"
    t0 = time.monotonic()
    try:
        done = subprocess.run(["/usr/bin/time", "-f", fmt, *argv], capture_output=True,
                              text=True, env=env, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        return {"ok": False, "why": f"over {limit:.0f} s", "seconds": time.monotonic() - t0}
    line = next((ln for ln in done.stderr.splitlines() if ln.startswith("@@time ")), "")
    parts = line.split()
    if len(parts) != 5:
        return {"ok": False, "why": "no timing (killed?)", "seconds": time.monotonic() - t0}
    # CPU seconds beside wall seconds: on a shared machine the wall clock also counts the
    # neighbours' work; the load average says how much of that there was.
    out: dict[str, Any] = {"ok": done.returncode in (0, 1), "seconds": float(parts[1]),
                           "peak_kb": int(parts[2]), "cpu_s": float(parts[3]) + float(parts[4]),
                           "load": os.getloadavg()[0]}
    if not out["ok"]:
        out["why"] = (done.stderr.strip().splitlines() or ["?"])[0][:120]
    return out


def _seed(data: Path, doc: dict[str, Any], doc_file: Path) -> None:
    """Store the run through the store's own import when `import` failed (over the time
    limit, or an abibench before the streamed import refused 511 MiB); untimed, so that the
    reading commands are still measured."""
    from abibench.records import RunDoc
    from abibench.store.exchange import import_doc
    from abibench.store.sqlite import Store

    data.mkdir(parents=True, exist_ok=True)
    store = Store(data / "results.sqlite")
    try:
        import_doc(store, RunDoc.from_dict(doc), str(doc_file))
    finally:
        store.close()
    print("  (stored through the store's import, untimed)", flush=True)


def _exponent(points: list[tuple[int, float]]) -> float:
    pts = [(math.log(n), math.log(s)) for n, s in points if n >= 10_000 and s > 0]
    if len(pts) < 2:
        return math.nan
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    num = sum((x - mx) * (y - my) for x, y in pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return num / den if den else math.nan


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--workloads", type=int, default=10)
    ap.add_argument("--limit", type=float, default=600.0, help="seconds per command")
    ap.add_argument("--only", default="", help="comma-separated commands (default: all)")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "scale.json"))
    ap.add_argument("--keep", default="", help="keep each size's run file and database in "
                    "DIR/nN and read them from there next time (import then not measured)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    chosen = [c for c in COMMANDS if not args.only or c in args.only.split(",")]
    abibench = str(Path(sys.executable).with_name("abibench"))
    results: dict[str, dict[int, dict[str, Any]]] = {c: {} for c in ["import", *chosen]}
    for n in sizes:
        rounds = max(1, n // (args.workloads * 2))
        workloads = {f"w{i:02d}": {"i386": 90.0 + i, "x86_64": 100.0}
                     for i in range(args.workloads)}
        with contextlib.ExitStack() as stack:
            out = (Path(args.keep) / f"n{n}" if args.keep else
                   Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="abibench-scale-"))))
            run_id, doc_file = f"20260101-000000-n{n}", out / "run.json"
            env = dict(os.environ, ABIBENCH_DATA=str(out / "data"), CI="true", COLUMNS="120")
            if (out / "data" / "results.sqlite").exists() and doc_file.exists():
                results["import"][n] = {"ok": False, "why": "kept from before"}
            else:
                out.mkdir(parents=True, exist_ok=True)
                doc = synthetic_doc(run_id=run_id, workloads=workloads, rounds=rounds - 1)
                doc_file.write_text(json.dumps(doc), encoding="utf-8")
                results["import"][n] = _timed([abibench, "import", str(doc_file)], env,
                                              args.limit)
                if not results["import"][n]["ok"]:
                    _seed(out / "data", doc, doc_file)  # so that the reading commands still run
                del doc
            print(f"N={n:>9,} import: {results['import'][n]}", flush=True)
            for name in chosen:
                argv = [abibench, *(a.format(run=run_id, out=out, file=doc_file)
                                    for a in COMMANDS[name])]
                results[name][n] = _timed(argv, env, args.limit)
                print(f"N={n:>9,} {name}: {results[name][n]}", flush=True)
    print()
    print("each cell: wall seconds, CPU seconds (user+sys), peak RSS; exponent of CPU time")
    print(f"{'command':<22}" + "".join(f"{n:>24,}" for n in sizes) + "  exponent")
    summary: dict[str, Any] = {}
    for name, per in results.items():
        cells = []
        for n in sizes:
            r = per.get(n, {})
            cells.append(f"{r['seconds']:6.1f}s {r['cpu_s']:6.1f}c {r['peak_kb'] / 1024:5.0f}MB"
                         if r.get("ok") else f"{r.get('why', '-')[:22]:>22}")
        exp = _exponent([(n, per[n]["cpu_s"]) for n in sizes if per.get(n, {}).get("ok")])
        summary[name] = {"exponent": exp, "by_size": per}
        print(f"{name:<22}" + "".join(f"{c:>24}" for c in cells) + f"  {exp:8.2f}")
    dest = Path(args.out)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
