#!/usr/bin/env python3
"""Where a short program's sample spends its time, from the kernel's scheduler events.

For `hyperfine -N` and for abibench's `run_sample`, each running the same program, `perf record
-a` takes the scheduler's events (fork, exec, exit, context switches); for every run of the
program the script splits the time between the fork of the program and its parent running again
into three phases, and says on which CPUs they ran:

  spawn  fork -> exec done (the child's set-up before the program; posix_spawn's or vfork's)
  run    exec done -> exit (the program itself: loading and running)
  reap   exit -> the parent running again (the wake-up that ends the measured interval)

A phase that is longer under abibench than under hyperfine on a quiet machine is the harness
floor's cost (docs/method.md §5); "moved" counts the runs where the program ran on another CPU
than its parent forked on, "woken elsewhere" those where the parent resumed on another CPU than
the program exited on (a wake-up of another, possibly idle, CPU). Needs perf (linux-perf), root
and a mounted tracefs. Under load the phases hold the neighbours' time: compare quiet.

    .venv/bin/python bench/harness_trace.py [--runs 200] [--program /bin/true]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from harness_common import console
from rich.table import Table

EVENTS = ("sched:sched_process_fork", "sched:sched_process_exec", "sched:sched_process_exit",
          "sched:sched_switch")
LINE = re.compile(r"^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$")
TRACEFS = (Path("/sys/kernel/tracing/events"), Path("/sys/kernel/debug/tracing/events"))


def inner(runs: int, program: str) -> int:
    """The abibench side: run_sample `runs` times, as bench/harness.py P1 does."""
    from abibench.paths import cache_dir
    from abibench.run.launcher import launcher, run_sample

    launch = launcher(cache_dir())
    with tempfile.TemporaryDirectory(prefix="abibench-trace-") as tmp:
        for _ in range(runs):
            raw = run_sample([program], cwd=Path(tmp), env=dict(os.environ), timeout_s=60,
                             launch=launch)
            if not raw.ok:
                print(f"{program}: {raw.describe_failure()}", file=sys.stderr)
                return 1
    return 0


def record(cmd: list[str], out: Path) -> list[tuple[str, int, int, float, str, str]]:
    subprocess.run(["perf", "record", "-q", "-a", "-o", str(out), "-e", ",".join(EVENTS), "--",
                    *cmd], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
    text = subprocess.run(["perf", "script", "-i", str(out)], capture_output=True, text=True,
                          check=True).stdout
    events = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            events.append((m[1], int(m[2]), int(m[3]), float(m[4]), m[5], m[6]))
    return events


def phases(events: list[tuple[str, int, int, float, str, str]], program: str) -> np.ndarray:
    """One row per run of `program`: spawn, run, reap (s), moved (0/1), woken elsewhere (0/1)."""
    parent: dict[int, int] = {}
    fork: dict[int, tuple[float, int]] = {}
    execd: dict[int, tuple[float, int]] = {}
    exited: dict[int, tuple[float, int]] = {}
    resumed: dict[int, list[tuple[float, int]]] = {}  # pid -> (time, cpu) it was switched in
    for _comm, pid, cpu, ts, name, rest in events:
        if name == "sched:sched_process_fork":
            m = re.search(r"child_pid=(\d+)", rest)
            if m:
                parent[int(m[1])] = pid
                fork[int(m[1])] = (ts, cpu)
        elif name == "sched:sched_process_exec" and f"filename={program} " in f"{rest} ":
            execd[pid] = (ts, cpu)
        elif name == "sched:sched_process_exit" and pid in execd:
            exited[pid] = (ts, cpu)
        elif name == "sched:sched_switch":
            m = re.search(r"next_pid=(\d+)", rest)
            if m:
                resumed.setdefault(int(m[1]), []).append((ts, cpu))
    rows = []
    for child, (t_exit, c_exit) in exited.items():
        p = parent.get(child)
        if p is None or child not in fork:
            continue
        back = next(((t, c) for t, c in resumed.get(p, []) if t > t_exit), None)
        if back is None:
            continue
        (t_fork, c_fork), (t_exec, c_exec) = fork[child], execd[child]
        rows.append((t_exec - t_fork, t_exit - t_exec, back[0] - t_exit, float(c_exec != c_fork),
                     float(back[1] != c_exit)))
    return np.asarray(rows, dtype=np.float64).reshape(-1, 5)


def summary(rows: np.ndarray) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": int(rows.shape[0])}
    for i, name in enumerate(("spawn", "run", "reap")):
        out[name] = (float(np.percentile(rows[:, i], 10)), float(np.median(rows[:, i])))
    total = rows[:, 0] + rows[:, 1] + rows[:, 2]
    out["total"] = (float(np.percentile(total, 10)), float(np.median(total)))
    out["moved"] = float(rows[:, 3].mean())
    out["woken_elsewhere"] = float(rows[:, 4].mean())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--program", default="/bin/true")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inner:
        return inner(args.runs, args.program)
    if shutil.which("perf") is None:
        ap.error("perf not found: apt-get install linux-perf")
    if not any(p.is_dir() for p in TRACEFS):
        ap.error("no tracefs: mount -t tracefs nodev /sys/kernel/tracing (as root)")
    tools = {"hyperfine -N": ["hyperfine", "-N", "--runs", str(args.runs), "--style", "none",
                              args.program],
             "abibench": [sys.executable, str(Path(__file__).resolve()), "--inner", "--runs",
                          str(args.runs), "--program", args.program]}
    rows: dict[str, list[np.ndarray]] = {k: [] for k in tools}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="abibench-trace-") as tmp:
        for order in (("hyperfine -N", "abibench"), ("abibench", "hyperfine -N")):
            for tool in order:
                rows[tool].append(phases(record(tools[tool], Path(tmp) / "perf.data"),
                                         args.program))
    t = Table(title=f"{args.program}: {args.runs} runs x 2 per tool, traced (load "
                    f"{load0:.1f} -> {os.getloadavg()[0]:.1f}); p10 / median in ms")
    for col in ("tool", "runs", "spawn", "run", "reap", "total", "moved", "woken elsewhere"):
        t.add_column(col)
    for tool, parts in rows.items():
        s = summary(np.vstack(parts))
        t.add_row(tool, str(s["runs"]), *(f"{s[k][0] * 1e3:.3f} / {s[k][1] * 1e3:.3f}"
                                          for k in ("spawn", "run", "reap", "total")),
                  f"{s['moved']:.0%}", f"{s['woken_elsewhere']:.0%}")
    console.print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
