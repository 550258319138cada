"""How long `bash setup.sh run` and `bash setup.sh test` take, end to end, from a fresh clone.

The README states both times; this measures them as a new user (or CI) meets them: a `git clone`
of this checkout's HEAD into a temporary directory (a new virtual environment, nothing built in
the clone), then each command in it, timed from outside, with the machine's load averages before,
every few seconds during, and after (a neighbour's load explains a slow time; say it with the
number).

    nice -n 10 .venv/bin/python bench/setup_times.py                  # both: about 25 minutes
    nice -n 10 .venv/bin/python bench/setup_times.py --only test -- --durations=20
    nice -n 10 .venv/bin/python bench/setup_times.py --cache cold     # nothing cached either
    .venv/bin/python bench/setup_times.py --only test --neighbours 1  # beside a neighbour's load

`--neighbours N` runs N busy loops (each a whole core's demand at the same priority: the load a
second user's job puts beside the gate) while each command runs, stopped by the PIDs started here
on every way out; their CPU seconds are reported beside the command's. Each command's CPU seconds
are its process tree's user+sys (the children reaped: a sandbox's processes that bwrap reaps are
missed, as /usr/bin/time misses them); `setup.sh test` also writes its per-test record by the
cgroup meter (tests/cputime.py) beside the JSON, and its sum is reported.

`--cache warm` (the default) keeps abibench's own cache (~/.cache/abibench: Debian sysroots and
sources, the fleet hosts' environments are keyed by the clone's path and so made anew): what CI
meets on a machine that ran abibench before. `--cache cold` gives both commands an empty cache of
their own, as on a new machine (system packages still installed: setup.sh's apt step only
checks). The run's results go to a data directory in the temporary directory, never the user's.
Arguments after `--` go to `setup.sh test` (pytest's). The JSON goes to bench/out/setup_times.json,
each command's whole output beside it (setup_times-run.log, setup_times-test.log).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out" / "setup_times.json"


def load() -> tuple[float, float, float]:
    one, five, fifteen = Path("/proc/loadavg").read_text().split()[:3]
    return float(one), float(five), float(fifteen)


def clone(dest: Path) -> str:
    """A clone of this checkout's HEAD (its committed state, as CI gets it); returns the commit."""
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", "--no-local", str(REPO), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "--quiet", "--detach", head], check=True)
    return head


class LoadWatch:
    """The 1-minute load average every `every` seconds while a command runs."""

    def __init__(self, every: float = 5.0) -> None:
        self.every, self.seen = every, [load()[0]]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self.stop.wait(self.every):
            self.seen.append(load()[0])

    def __enter__(self) -> LoadWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _ticks(pid: int) -> float:
    """utime + stime of a live process of ours, in seconds (/proc/PID/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def neighbours(n: int) -> Iterator[list[float]]:
    """N busy loops while the block runs; yields a list that holds their CPU seconds after."""
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"], stdin=subprocess.DEVNULL)
            for _ in range(n)]
    spent: list[float] = []
    try:
        yield spent
    finally:
        spent.append(sum(_ticks(h.pid) for h in hogs))
        for h in hogs:  # ours, by PID, on every way out
            h.terminate()
            h.wait()


def timed(argv: list[str], cwd: Path, env: dict[str, str], log: Path,
          hogs: int = 0) -> dict[str, Any]:
    """Run one command to its end, its output to `log`; wall time, CPU seconds, exit code, load
    averages, beside `hogs` busy loops."""
    before = load()
    cpu0 = _children_cpu()
    start = time.monotonic()
    with neighbours(hogs) as hog_cpu, LoadWatch() as watch, log.open("w") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        try:
            code = proc.wait()
        except BaseException:
            proc.terminate()  # our own child, by its PID; its process group is its own business
            proc.wait()
            raise
    wall = time.monotonic() - start
    cpu = _children_cpu() - cpu0 - hog_cpu[0]
    tail = log.read_text(errors="replace").strip().splitlines()[-3:]
    return {"argv": argv, "exit_code": code, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "neighbours": hogs, "neighbours_cpu_s": round(hog_cpu[0], 1), "load_before": before,
            "load_after": load(), "load_1min_mean": round(sum(watch.seen) / len(watch.seen), 2),
            "load_1min_max": max(watch.seen), "tail": tail, "log": str(log)}


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s"


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in args_in:
        cut = args_in.index("--")
        args_in, extra = args_in[:cut], args_in[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("run", "test"), help="time only this command")
    ap.add_argument("--cache", choices=("warm", "cold"), default="warm")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its logs) afterwards")
    ap.add_argument("--neighbours", type=int, default=0, metavar="N",
                    help="N busy loops beside each command (default 0: quiet)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(args_in)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="abibench-setup-times-"))
    src = tmp / "abibench"
    commit = clone(src)
    env = {**os.environ, "ABIBENCH_DATA": str(tmp / "data")}
    if args.cache == "cold":
        env["ABIBENCH_CACHE"] = str(tmp / "cache")
    steps = [s for s in ("run", "test") if args.only in (None, s)]
    result: dict[str, Any] = {"commit": commit, "cache": args.cache, "cpus": os.cpu_count(),
                              "clone": str(src), "steps": {}}
    try:
        for step in steps:
            record = args.out.parent / f"setup_times-{step}-cpu.json"
            cmd = ["bash", "setup.sh", step,
                   *([f"--cpu-json={record}", *extra] if step == "test" else [])]
            print(f"setup_times: {' '.join(cmd)} in a fresh clone of {commit[:12]} "
                  f"(load {load()[0]:.2f})", flush=True)
            r = timed(cmd, src, env, args.out.parent / f"setup_times-{step}.log",
                      args.neighbours)
            if step == "test" and record.exists():
                r["tests_cpu_s"] = round(sum(v[0] for v in json.loads(record.read_text())
                                             .values()), 1)
            result["steps"][step] = r
            meter = f", tests {r['tests_cpu_s']} CPU s by the meter" if "tests_cpu_s" in r else ""
            print(f"  {step}: {minutes(r['wall_s'])} wall, {r['cpu_s']} CPU s{meter}; "
                  f"{args.neighbours} neighbour(s) ran {r['neighbours_cpu_s']} CPU s; exit "
                  f"{r['exit_code']}; load average "
                  f"(1 min) {r['load_before'][0]:.2f} before, mean {r['load_1min_mean']:.2f}, "
                  f"max {r['load_1min_max']:.2f} during, {r['load_after'][0]:.2f} after",
                  flush=True)
            for line in r["tail"]:
                print(f"    | {line}", flush=True)
            args.out.write_text(json.dumps(result, indent=1) + "\n")
    finally:
        if not args.keep:
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
    print(f"setup_times: written {args.out}")
    return max((r["exit_code"] for r in result["steps"].values()), default=0)


if __name__ == "__main__":
    sys.exit(main())
