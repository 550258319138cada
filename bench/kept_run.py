#!/usr/bin/env python3
"""CPU of a tiny `abibench run` of two prebuilt programs, old code against this checkout's.

Two empty C programs (gcc -m32 and gcc) run as `abibench run --binary i386=A --binary
x86_64=B --rounds 5 --no-html`, each variant with a cache and data directory of its own, warmed
by one run first (what a second run of the same programs pays), then N runs of each variant in
alternation. The CPU is the run's process tree (user + sys of the children this script reaps),
which a loaded machine does not inflate the way it does wall time.

    git archive OLD src | tar -x -C /tmp/old
    nice -n 10 .venv/bin/python bench/kept_run.py --before /tmp/old/src --runs 5
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _programs(work: Path) -> tuple[Path, Path]:
    (work / "e.c").write_text("int main(void) { return 0; }\n")
    out = []
    for name, flags in (("e32", ["-m32"]), ("e64", [])):
        subprocess.run(["gcc", "-O2", *flags, "-o", str(work / name), str(work / "e.c")],
                       check=True)
        out.append(work / name)
    return out[0], out[1]


def _run(src: Path, work: Path, a: Path, b: Path) -> tuple[float, float]:
    """(CPU s of the run's process tree, wall s)."""
    env = {**os.environ, "PYTHONPATH": str(src), "ABIBENCH_DATA": str(work / "data"),
           "ABIBENCH_CACHE": str(work / "cache")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "abibench", "run", "--binary", f"i386={a}",
                    "--binary", f"x86_64={b}", "--rounds", "5", "--no-html"], env=env,
                   check=True, capture_output=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime), wall


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="the old code's src directory")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    variants = {"before": args.before.resolve(), "after": HERE / "src"}
    for src in variants.values():  # both from bytecode: none compiles its modules in a run
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
    with tempfile.TemporaryDirectory(prefix="kept-run-") as tmp:
        a, b = _programs(Path(tmp))
        works = {name: Path(tmp, name) for name in variants}
        for name, src in variants.items():
            _run(src, works[name], a, b)  # the first run: caches made
        cpu: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.runs):
            for name, src in variants.items():
                c, w = _run(src, works[name], a, b)
                cpu[name].append(c)
                print(f"{name}: {c:.3f} CPU s, {w:.3f} s wall", flush=True)
    for name, values in cpu.items():
        print(f"{name}: median {statistics.median(values):.3f} CPU s "
              f"({', '.join(f'{v:.2f}' for v in values)})")
    ratio = statistics.median(cpu["after"]) / statistics.median(cpu["before"])
    print(f"after/before: {ratio:.3f}; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
