#!/usr/bin/env python3
"""What a short program's sample costs beyond the program: one thing varied at a time.

Issue 30 ("the harness floor"): an empty program measured by abibench took longer than under
`hyperfine -N`. This runs the variants below on one program, every variant once per round in a
fresh random order (so a neighbour's load or a drift hits them all alike), and `hyperfine -N` in
batches between the rounds, then reports for each: min, p10, median and p90 of the wall time, the
program's own CPU time (user+sys from wait4, which a neighbour's load does not inflate) and its
page faults.

  now        run_sample as a run calls it: the launcher started per sample, through the gate
  no-gate    the program starts as soon as the launcher is up (launcher.GATE_ALONE off)
  pad-4k     the run's environment padding at its largest (4095 bytes; a run draws 0-4095)
  static     the launcher linked statically (no dynamic loading of its own)
  cpu-0/1    the launcher and the program pinned to one CPU (How.cpu)
  repeat-10  one launcher runs the program 10 times back to back (a launcher kept alive across
             runs); its value is the mean of the 10, so compare its median with care
  kept-alive one process started once (bench/floor_server.c) starts the program per request
             line from this process over a pipe, as launch.c starts and reaps it: a long-lived
             launcher fed sample requests
  kept-alive-spin  the same, polling wait4 instead of sleeping while the program runs: its CPU
             never goes idle (a diagnosis of what waking an idle CPU costs; it takes a CPU)
  sh-loop    the launcher started per sample by a shell loop, no Python around it (in batches,
             like hyperfine's): what abibench's Python parent adds

    .venv/bin/python bench/harness_floor.py [--rounds 200] [--program /bin/true] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from harness_common import CpuMeter, console, disturbance_note, log
from rich.table import Table

from abibench.paths import cache_dir
from abibench.run import launcher as launcher_mod
from abibench.run.launcher import How, RawResult, parse_result_line, run_sample
from abibench.run.schedule import PAD_RANGE
from abibench.tools import native_tool

Variant = Callable[[], RawResult]
SERVER_C = Path(__file__).resolve().parent / "floor_server.c"


def variants(program: str, work: Path) -> dict[str, Variant]:
    dynamic = launcher_mod.launcher(cache_dir())
    static = native_tool("launch", cache_dir(), static=True)
    env = dict(os.environ)
    padded = {**env, "ABIBENCH_PAD": "x" * (PAD_RANGE - 1)}

    def one(launch: Path, e: dict[str, str], how: How | None = None, gate: bool = True) -> Variant:
        def run() -> RawResult:
            launcher_mod.GATE_ALONE = gate
            try:
                raw = run_sample([program], cwd=work, env=e, timeout_s=60, launch=launch,
                                 how=how or How())
            finally:
                launcher_mod.GATE_ALONE = True
            if not raw.ok:
                raise RuntimeError(f"{program}: {raw.describe_failure()}")
            return raw
        return run

    return {"now": one(dynamic, env), "no-gate": one(dynamic, env, gate=False),
            "pad-4k": one(dynamic, padded), "static": one(static, env),
            "cpu-0": one(dynamic, env, How(cpu=0)), "cpu-1": one(dynamic, env, How(cpu=1)),
            "repeat-10": one(dynamic, env, How(repeat=10))}


class KeptAlive:
    """bench/floor_server.c, built and started once; stopped by its PID (closing its input)."""

    def __init__(self, program: str, work: Path, spin: bool = False) -> None:
        exe = work / "floor-server"
        if not exe.exists():
            subprocess.run(["gcc", "-O2", "-Wall", "-o", str(exe), str(SERVER_C)], check=True)
        self.proc = subprocess.Popen([str(exe), *(["-s"] if spin else []), program],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

    def sample(self) -> dict[str, float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        wall, user, sys_, minflt, status = (int(x) for x in self.proc.stdout.readline().split())
        if status != 0:
            raise RuntimeError(f"kept-alive: wait status {status}")
        return {"wall": wall / 1e9, "cpu": (user + sys_) / 1e6, "minflt": float(minflt)}

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def hyperfine(program: str, runs: int, out: Path) -> list[dict[str, float]]:
    subprocess.run(["hyperfine", "-N", "--runs", str(runs), "--style", "none", "--export-json",
                    str(out), program], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    res = json.loads(out.read_text())["results"][0]
    # hyperfine keeps every run's wall time but only the mean user and system time
    cpu = float(res["user"]) + float(res["system"])
    return [{"wall": float(t), "cpu": cpu, "minflt": -1.0} for t in res["times"]]


def sh_loop(program: str, runs: int, work: Path) -> list[dict[str, float]]:
    """`runs` samples, each a fresh launcher started by a shell loop (no Python parent)."""
    launch = launcher_mod.launcher(cache_dir())
    script = ('for i in $(seq "$1"); do "$2" "$3/r$i" 60000 "$4" || exit 1; done')
    subprocess.run(["/bin/sh", "-c", script, "sh", str(runs), str(launch), str(work), program],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
    rows = []
    for i in range(1, runs + 1):
        f = parse_result_line((work / f"r{i}").read_text())
        if f["status"] != "exited" or f["code"] != "0":
            raise RuntimeError(f"{program} under the shell loop: {f['status']} {f['code']}")
        rows.append({"wall": int(f["wall_ns"]) / 1e9,
                     "cpu": (int(f["user_us"]) + int(f["sys_us"])) / 1e6,
                     "minflt": float(f["minflt"])})
    return rows


def summary(rows: list[dict[str, float]]) -> dict[str, float]:
    w = np.asarray([r["wall"] for r in rows]) * 1e3
    return {"n": float(w.size), "min_ms": float(w.min()), "p10_ms": float(np.percentile(w, 10)),
            "median_ms": float(np.median(w)), "p90_ms": float(np.percentile(w, 90)),
            "cpu_ms": float(np.mean([r["cpu"] for r in rows]) * 1e3),
            "minflt": float(np.median([r["minflt"] for r in rows]))}


def measure(program: str, rounds: int, hf_every: int, work: Path) -> dict[str, Any]:
    kept = {"kept-alive": KeptAlive(program, work)}
    try:
        kept["kept-alive-spin"] = KeptAlive(program, work, spin=True)
        return _measure(program, rounds, hf_every, work, kept)
    finally:
        for k in kept.values():
            k.stop()


def _measure(program: str, rounds: int, hf_every: int, work: Path,
             kept: dict[str, KeptAlive]) -> dict[str, Any]:
    vs = variants(program, work)
    rows: dict[str, list[dict[str, float]]] = {k: [] for k in [*vs, *kept, "sh-loop",
                                                                 "hyperfine -N"]}
    rng = random.Random(0)
    loads = [os.getloadavg()[0]]
    for r in range(rounds):
        names = [*vs, *kept]
        rng.shuffle(names)
        for name in names:
            if name in kept:
                rows[name].append(kept[name].sample())
                continue
            raw = vs[name]()
            rows[name].append({"wall": raw.wall_s, "cpu": raw.user_s + raw.sys_s,
                               "minflt": float(raw.minflt)})
        if (r + 1) % hf_every == 0:
            rows["hyperfine -N"] += hyperfine(program, hf_every, work / "hf.json")
            rows["sh-loop"] += sh_loop(program, hf_every, work)
            loads.append(os.getloadavg()[0])
            log(f"round {r + 1}/{rounds}, load {loads[-1]:.1f}")
    return {"program": program, "rounds": rounds, "loads": loads,
            "summary": {k: summary(v) for k, v in rows.items() if v}, "rows": rows}


def show(res: dict[str, Any]) -> None:
    loads = res["loads"]
    t = Table(title=f"{res['program']}: {res['rounds']} rounds, every variant once a round in a "
                    f"random order (load {min(loads):.1f}-{max(loads):.1f})")
    for col in ("variant", "min", "p10", "median", "p90", "median / hyperfine",
                "program CPU (user+sys)", "page faults"):
        t.add_column(col)
    hf = res["summary"]["hyperfine -N"]["median_ms"]
    for name, s in res["summary"].items():
        t.add_row(name, f"{s['min_ms']:.3f}", f"{s['p10_ms']:.3f}", f"{s['median_ms']:.3f}",
                  f"{s['p90_ms']:.3f}", f"{s['median_ms'] / hf:.3f}", f"{s['cpu_ms']:.3f} ms",
                  "-" if s["minflt"] < 0 else f"{s['minflt']:.0f}")
    console.print(t)
    console.print("times in ms; hyperfine's CPU time is its mean (it keeps no per-run CPU time)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--hyperfine-every", type=int, default=20,
                    help="a hyperfine batch of this many runs after every this many rounds")
    ap.add_argument("--program", default="/bin/true")
    ap.add_argument("--out", type=Path, default=Path("bench/out/harness_floor.json"))
    args = ap.parse_args(argv)
    if args.rounds < args.hyperfine_every or args.hyperfine_every < 1:
        ap.error("--rounds must be at least --hyperfine-every (and that at least 1)")
    meter = CpuMeter()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="abibench-floor-") as tmp:
        res = measure(args.program, args.rounds, args.hyperfine_every, Path(tmp))
    res["disturbance"] = meter.read()
    res["elapsed_s"] = time.monotonic() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1))
    show(res)
    console.print(disturbance_note(res["disturbance"]))
    console.print(f"raw numbers: {args.out} ({res['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
