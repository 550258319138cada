#!/usr/bin/env python3
"""Issue 31's acceptance, run for real: two builds of one program, history, a baseline, the gate,
and the site of a store of real runs from two host identities.

    nice -n 10 .venv/bin/python bench/history_acceptance.py --work /tmp/h31 [--rounds 12]
        [--steps 1000000] [--out bench/out/history_acceptance.json] [--phase all|store|site]

Every step is `abibench` as a user types it, each its own process, into one SQLite store
(WORK/results.sqlite; data and cache directories under WORK):

1. nbody.c (abibench's own micro source) compiled by the host's gcc at -O1 and at -O2, for i386
   (-m32) and x86_64, each pair in a profile of prebuilt binaries (WORK/profiles/nbody-O?.toml,
   primary metric the user CPU time, parameter `steps`); each build measured twice (`run
   PROFILE --label O1|O2 --set steps=N`), then `history nbody-bin --by version` (two levels,
   one change) and `compare O2-RUN --against O1` (the change with its CI);
2. the gate: `run ... --label O2-rerun --against O2 --fail-on-slowdown 5%` unchanged (exit 0
   expected), then with 10% more work (`--set steps=1.1N`: exit 13 expected);
3. more real runs (built-in nbody and ptrtree, small sizes) until the store holds at least 20,
   some of them on a second host identity: the same machine in its own UTS namespace
   (`unshare --uts`, hostname `abibench-hostb`), so its runs record another host name;
4. (--phase site) `abibench site WORK/site`, its page count and size, then `site` again (the
   incremental site: nothing new, nothing written; CPU seconds of each), and screenshots of
   the index, a workload page and a host page by headless Chromium (WORK/shots/*.png).

Prints what each step shows and writes every figure to the JSON file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
NBODY = REPO / "src" / "abibench" / "micro" / "nbody.c"
HOST_B = "abibench-hostb"
CHROMIUM = "/usr/bin/chromium"


def abibench(work: Path, *args: str, host_b: bool = False, timeout: float = 1800) -> dict[str, Any]:
    env = dict(os.environ, ABIBENCH_DATA=str(work / "data"), ABIBENCH_CACHE=str(work / "cache"),
               CI="true")
    argv = [sys.executable, "-m", "abibench", "--db", str(work / "results.sqlite"), *args]
    if host_b:  # the same machine under another host name: its own UTS namespace
        argv = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', HOST_B, *argv]
    t0 = time.monotonic()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=timeout, check=False)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    shown = ["abibench", *args]
    step: dict[str, Any] = {"argv": shown, "host": HOST_B if host_b else socket.gethostname(),
            "exit": done.returncode, "wall_s": round(time.monotonic() - t0, 1),
            # user + system CPU of the command's process tree: what load does not inflate
            "cpu_s": round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 1),
            "load": os.getloadavg()[0], "stdout": done.stdout, "stderr": done.stderr}
    print(f"$ {' '.join(shown)}   [{step['host']}, exit {step['exit']}, "
          f"{step['wall_s']} s]", flush=True)
    return step


PROFILE = """id = "nbody-bin"
title = "nbody.c built by the host's gcc at {level}"
primary = "user"

[params]
steps = {steps}

[binaries]
i386 = "{i386}"
x86_64 = "{x86_64}"

[run]
command = ["{{program}}", "--steps", "{{steps}}"]
timeout = "300s"

[validate]
stdout_match = '(?m)^checksum: (\\S+)$'
"""


def build(work: Path, level: str, steps: int) -> Path:
    """nbody.c at -O1 or -O2 per ABI, and the profile of the two programs: its primary metric
    is the process's user CPU time (a shared machine's load moves wall time far more), its
    parameter `steps` the work each sample does."""
    exes = {}
    for abi, flag in (("i386", "-m32"), ("x86_64", "-m64")):
        exe = work / "bin" / level / f"nbody-{abi}"
        exe.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["gcc", flag, f"-{level}", "-o", str(exe), str(NBODY), "-lm"], check=True)
        exes[abi] = exe
    profile = work / "profiles" / f"nbody-{level}.toml"
    profile.parent.mkdir(parents=True, exist_ok=True)
    profile.write_text(PROFILE.format(level=level, steps=steps, **exes))
    return profile


def binary_run(work: Path, profile: Path, label: str, rounds: int, steps: int,
               *extra: str, host_b: bool = False) -> dict[str, Any]:
    return abibench(work, "run", str(profile), "--rounds", str(rounds), "--label", label,
                    "--set", f"steps={steps}", "--no-html", *extra, host_b=host_b)


def run_id(step: dict[str, Any]) -> str:
    for line in (step["stdout"] + step["stderr"]).splitlines():
        if line.startswith("run "):
            return str(line.split()[1].rstrip(":"))
    raise SystemExit(f"no run id in: {step['stdout'][-500:]} {step['stderr'][-500:]}")


def store_phase(work: Path, rounds: int, steps: int, want_runs: int) -> dict[str, Any]:
    res: dict[str, Any] = {"steps": []}
    levels = {lv: build(work, lv, steps) for lv in ("O1", "O2")}
    ids: dict[str, list[str]] = {"O1": [], "O2": []}
    for lv in ("O1", "O1", "O2", "O2"):
        step = binary_run(work, levels[lv], lv, rounds, steps)
        res["steps"].append(step)
        ids[lv].append(run_id(step))
    hist = abibench(work, "history", "nbody-bin", "--by", "version")
    res["history"] = hist
    print(hist["stdout"])
    cmp = abibench(work, "compare", ids["O2"][-1], "--against", "O1")
    res["against"] = cmp
    print(cmp["stdout"])
    gate = ("--against", "O2", "--fail-on-slowdown", "5%")
    same = binary_run(work, levels["O2"], "O2-rerun", rounds, steps, *gate)
    slow = binary_run(work, levels["O2"], "O2-plus10", rounds, int(steps * 1.1), *gate)
    res["gate_unchanged"], res["gate_planted"] = same, slow
    for name, s in (("unchanged", same), ("planted +10%", slow)):
        print(f"gate {name}: exit {s['exit']}\n{s['stdout'][-1500:]}{s['stderr'][-600:]}")
    hist_all = abibench(work, "history", "nbody-bin", "--by", "version")
    res["history_all"] = hist_all
    print(hist_all["stdout"])
    # host B: the two builds again, then built-in workloads on both until the store is full
    for lv in ("O1", "O2"):
        res["steps"].append(binary_run(work, levels[lv], lv, rounds, steps, host_b=True))
    i = 0
    while len(stored(work)) < want_runs:
        res["steps"].append(abibench(work, "run", "nbody", "ptrtree", "--abi", "i386,x86_64",
                                     "--rounds", "3", "--set", f"steps={300000 + 50000 * (i % 3)}",
                                     "--set", "nodes=20000", "--no-html", host_b=i % 2 == 1))
        i += 1
    res["runs"] = len(stored(work))
    return res


def stored(work: Path) -> list[dict[str, Any]]:
    step = abibench(work, "runs", "--json")
    runs: list[dict[str, Any]] = json.loads(step["stdout"])
    return runs


def shot(page: Path, png: Path, width: int, height: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as profile:
        argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                "--hide-scrollbars", f"--window-size={width},{height}",
                f"--screenshot={png}", page.resolve().as_uri()]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    return {"page": str(page), "png": str(png), "exit": done.returncode}


def site_phase(work: Path) -> dict[str, Any]:
    out = work / "site"
    if out.exists():
        shutil.rmtree(out)
    step = abibench(work, "site", str(out))
    print(step["stdout"][-2000:], step["stderr"][-2000:])
    files = [p for p in out.rglob("*") if p.is_file()]
    pages = [p for p in files if p.suffix == ".html"]
    # the incremental site: the same store again writes nothing
    before = {p: p.stat().st_mtime_ns for p in files}
    again = abibench(work, "site", str(out))
    rewritten = sum(1 for p, t in before.items() if p.stat().st_mtime_ns != t)
    print(f"second site: {again['stdout'].strip()} ({again['cpu_s']} s CPU, "
          f"{again['wall_s']} s wall, load {again['load']:.1f}); files rewritten: {rewritten}")
    res: dict[str, Any] = {"site": step, "files": len(files), "pages": len(pages),
                           "bytes": sum(p.stat().st_size for p in files), "shots": [],
                           "site_again": again, "rewritten_again": rewritten}
    shots = work / "shots"
    shots.mkdir(exist_ok=True)
    wanted = [out / "index.html", *sorted(out.glob("workloads/*.html"))[:2],
              *sorted(out.glob("hosts/*.html"))[:2]]
    for page in wanted:
        png = shots / f"{page.parent.name}-{page.stem}.png"
        res["shots"].append(shot(page, png, 1280, 2400))
    print(f"site: {res['pages']} pages, {res['files']} files, {res['bytes']} bytes; first "
          f"{step['cpu_s']} s CPU, {step['wall_s']} s wall, load {step['load']:.1f}")
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--steps", type=int, default=2000000)
    ap.add_argument("--runs", type=int, default=22, help="runs in the store for the site")
    ap.add_argument("--phase", choices=("all", "store", "site"), default="all")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "history_acceptance.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {}
    if args.out.exists():
        res = json.loads(args.out.read_text())
    if args.phase in ("all", "store"):
        res["store"] = store_phase(args.work, args.rounds, args.steps, args.runs)
    if args.phase in ("all", "site"):
        res["site"] = site_phase(args.work)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
