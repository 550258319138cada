#!/usr/bin/env python3
"""How many hosts can one results store take? Concurrent writers, every sample committed alone.

    .venv/bin/python bench/store_load.py [--writers 8] [--samples 20000] [--backend both]

Each writer is its own process (as each host of a fleet is) with its own run, writing through
abibench's store exactly as `abibench run` does: `create_run`, then one `add_sample` per sample,
each its own transaction, then `finish_run`. All writers start together at a barrier; the wall
time runs from the barrier to the last writer's end. Afterwards every run's rows are counted
and their numbers checked (0..N-1, each once): anything lost or doubled is reported.

PostgreSQL: a throw-away cluster (tests/servers.py) on 127.0.0.1 with the server's default
durability (fsync and synchronous_commit on). SQLite: one WAL file with abibench's settings.
Prints one line per backend and writes bench/out/store_load.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests/servers.py: the throw-away PostgreSQL cluster

from tests.servers import pg_cluster  # noqa: E402

from abibench.records import HostContext, Run, RunConfig, Sample  # noqa: E402
from abibench.store.open import open_store  # noqa: E402


def _writer(ref: str, run_id: str, n: int, barrier: Barrier, results: Any) -> None:
    failures: list[str] = []
    store = open_store(ref)
    store.create_run(Run(run_id, "2026-01-01T00:00:00+00:00", None, "running", "load",
                         RunConfig({})), HostContext(hostname=run_id))
    barrier.wait()
    t0 = time.monotonic()
    for i in range(n):
        s = Sample(run_id=run_id, workload="w", target="i386" if i % 2 else "x86_64",
                   round=i // 2, position=i % 2, warmup=False, status="ok", exit_code=0,
                   wall_s=0.1 + i * 1e-7, user_s=0.09, sys_s=0.01, max_rss_kb=12345,
                   stdout_digest="0" * 64, check=None, metrics={"rate": 1.25},
                   started_at="2026-01-01T00:00:00+00:00", instructions=10**9 + i)
        try:
            store.add_sample(s)
        except Exception as exc:  # counted, not hidden: the figure is what got stored
            failures.append(f"{type(exc).__name__}: {exc}")
    seconds = time.monotonic() - t0
    store.finish_run(run_id, "2026-01-01T01:00:00+00:00", "complete")
    store.close()
    results.put({"run_id": run_id, "seconds": seconds, "failures": failures[:5],
                 "failed": len(failures)})


def measure(backend: str, ref: str, writers: int, samples: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")  # no connection crosses a fork
    open_store(ref).close()  # the schema exists before the writers race
    barrier = ctx.Barrier(writers + 1)
    results = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(ref, f"load-{k}", samples, barrier, results))
             for k in range(writers)]
    for p in procs:
        p.start()
    barrier.wait(timeout=300)
    t0 = time.monotonic()
    per = [results.get(timeout=7200) for _ in procs]
    wall = time.monotonic() - t0
    for p in procs:
        p.join(timeout=60)
    store = open_store(ref, readonly=True)
    rows = {r["run_id"]: r for r in store.execute(
        "SELECT run_id, COUNT(*) AS n, COUNT(DISTINCT seq) AS distinct_seq, MIN(seq) AS lo, "
        "MAX(seq) AS hi FROM samples GROUP BY run_id")}
    store.close()
    total = sum(int(r["n"]) for r in rows.values())
    bad = [rid for rid in (f"load-{k}" for k in range(writers))
           if rid not in rows or (int(rows[rid]["n"]), int(rows[rid]["distinct_seq"]),
                                  rows[rid]["lo"], rows[rid]["hi"]) != (samples, samples, 0,
                                                                         samples - 1)]
    expected = writers * samples
    return {"backend": backend, "writers": writers, "samples_per_writer": samples,
            "wall_s": round(wall, 2), "stored": total, "expected": expected,
            "lost": expected - total, "runs_wrong": bad,
            "write_failures": sum(r["failed"] for r in per),
            "failure_examples": [f for r in per for f in r["failures"]][:5],
            "samples_per_s": round(total / wall, 1),
            "writer_s": sorted(round(r["seconds"], 1) for r in per),
            "exit_codes": [p.exitcode for p in procs], "loadavg": os.getloadavg(),
            "cpus": os.cpu_count()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--samples", type=int, default=20000)
    ap.add_argument("--backend", choices=("both", "postgresql", "sqlite"), default="both")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "store_load.json")
    args = ap.parse_args()
    out = []
    for backend in ("postgresql", "sqlite"):
        if args.backend not in ("both", backend):
            continue
        with contextlib.ExitStack() as stack:
            if backend == "postgresql":
                cluster = stack.enter_context(pg_cluster({"max_connections": "100"}))
                ref = cluster.url()
            else:
                tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="abibench-load-"))
                ref = str(Path(tmp) / "results.sqlite")
            result = measure(backend, ref, args.writers, args.samples)
        out.append(result)
        print(json.dumps(result), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0 if all(r["lost"] == 0 and not r["runs_wrong"] for r in out) else 1


if __name__ == "__main__":
    sys.exit(main())
