#!/usr/bin/env python3
"""Issue 17's acceptance, run for real: a fleet of two hosts into PostgreSQL, a host down, the
server lost mid-run and the spool pushed back.

    .venv/bin/python bench/fleet_acceptance.py [--rounds 3] [--out bench/out/fleet_acceptance.json]

Needs root (sshd), Debian's postgresql and openssh-server (bash setup.sh). Starts, for the whole
script, a throw-away PostgreSQL cluster on 127.0.0.1 and two sshd "hosts" on 127.0.0.2 and
127.0.0.3 (tests/servers.py: free ports, data in temp dirs, stopped by PID on every path), then
runs the commands exactly as a user types them, each as its own process:

1. `abibench fleet run tests/fleet/inventory.ini --workload ptrtree --workload nbody --abi
   i386,x86_64 --rounds 3 --set nodes=20000 --set steps=100000 --db postgresql://...`,
   then `abibench --db postgresql://... compare`;
2. the same with hostA's sshd stopped before the run;
3. `abibench --db postgresql://... run ptrtree nbody --abi i386,x86_64 --rounds 6` with the
   server stopped once the run has stored some samples; the server started again, `abibench
   push` twice; every sample counted on the server.

Prints what each step shows and writes every figure to the JSON file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests/servers.py: the throw-away servers

import psycopg  # noqa: E402
from tests.servers import PgCluster, pg_cluster, sshd_hosts  # noqa: E402

INVENTORY = REPO / "tests" / "fleet" / "inventory.ini"
SIZES = ["--set", "nodes=20000", "--set", "steps=100000"]


def abibench(env: dict[str, str], *args: str, timeout: float = 3600) -> dict[str, Any]:
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "abibench", *args], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=timeout, check=False)
    return {"argv": ["abibench", *args], "exit": done.returncode,
            "wall_s": round(time.monotonic() - t0, 1), "stdout": done.stdout,
            "stderr": done.stderr}


def shown(step: dict[str, Any], url: str, password: str) -> str:
    """The command as typed, without the password."""
    return " ".join(a.replace(url, url.replace(f":{password}@", "@")) for a in step["argv"])


def samples_per_host(url: str) -> dict[str, int]:
    with psycopg.connect(url) as db:
        rows = db.execute("SELECT r.host_json, COUNT(s.id) FROM runs r LEFT JOIN samples s "
                          "ON s.run_id = r.id GROUP BY r.id, r.host_json").fetchall()
    return {str(json.loads(h).get("label") or json.loads(h).get("hostname")): int(n)
            for h, n in rows}


def server_samples(url: str, run_id: str) -> tuple[int, int]:
    with psycopg.connect(url) as db:
        row = db.execute("SELECT COUNT(*), COUNT(DISTINCT seq) FROM samples WHERE run_id=%s",
                         (run_id,)).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def table(stdout: str) -> list[str]:
    """The fleet's per-host summary: its header line and the rows after it."""
    lines = stdout.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.split()[:2] == ["host", "status"]), None)
    return [] if start is None else [ln.rstrip() for ln in lines[start:start + 3]]


def fleet_runs(env: dict[str, str], cluster: PgCluster, rounds: int) -> dict[str, Any]:
    url = cluster.url(cluster.new_database("fleet"))
    run = abibench(env, "fleet", "run", str(INVENTORY), "--workload", "ptrtree", "--workload",
                   "nbody", "--abi", "i386,x86_64", "--rounds", str(rounds), *SIZES, "--db", url)
    compare = abibench(env, "--db", url, "compare")
    header = next((ln.strip() for ln in compare["stdout"].splitlines() if "hostA" in ln
                   and "hostB" in ln), "")
    return {"command": shown(run, url, cluster.password), "exit": run["exit"],
            "wall_s": run["wall_s"], "table": table(run["stdout"]),
            "progress_lines": len(run["stderr"].splitlines()),
            "samples_in_postgresql": samples_per_host(url),
            "compare_command": shown(compare, url, cluster.password),
            "compare_exit": compare["exit"], "compare_header": header,
            "password_shown": cluster.password in run["stdout"] + run["stderr"]
            + compare["stdout"] + compare["stderr"]}


def host_down(env: dict[str, str], cluster: PgCluster, fleet: Any, rounds: int) -> dict[str, Any]:
    url = cluster.url(cluster.new_database("down"))
    fleet.hosts["hostA"].stop()
    try:
        run = abibench(env, "fleet", "run", str(INVENTORY), "--workload", "ptrtree",
                       "--workload", "nbody", "--abi", "i386,x86_64", "--rounds", str(rounds),
                       *SIZES, "--db", url)
    finally:
        fleet.hosts["hostA"].start()
    return {"command": "(hostA's sshd stopped) " + shown(run, url, cluster.password),
            "exit": run["exit"], "wall_s": run["wall_s"], "table": table(run["stdout"]),
            "error_line": next((ln for ln in run["stderr"].splitlines()
                                if ln.startswith("abibench: error:")), ""),
            "samples_in_postgresql": samples_per_host(url)}


def server_lost(env: dict[str, str], cluster: PgCluster) -> dict[str, Any]:
    url = cluster.url(cluster.new_database("lost"))
    argv = ["--db", url, "run", "ptrtree", "nbody", "--abi", "i386,x86_64", "--rounds", "6",
            "--no-html", "--set", "nodes=150000", "--set", "steps=1500000"]
    proc = subprocess.Popen([sys.executable, "-m", "abibench", *argv], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stopped_at = 0
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with psycopg.connect(url) as db:
                    row = db.execute("SELECT COUNT(*) FROM samples").fetchone()
                stopped_at = int(row[0]) if row else 0
            except psycopg.Error:
                stopped_at = 0  # the tables are not there yet
            if stopped_at >= 8:  # ptrtree's warm-ups and a few rounds are on the server
                break
            time.sleep(0.1)
        cluster.stop()
        out, err = proc.communicate(timeout=1800)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        cluster.start()
    run_id = json.loads(abibench(env, "--db", url, "runs", "--json")["stdout"] or "[]")
    spool = Path(env["ABIBENCH_DATA"]) / "spool"
    spooled = sorted(p.name for p in spool.glob("*.sqlite"))
    before = server_samples(url, run_id[0]["id"]) if run_id else (0, 0)
    push = abibench(env, "--db", url, "push")
    after = server_samples(url, run_id[0]["id"]) if run_id else (0, 0)
    again = abibench(env, "--db", url, "push")
    final = server_samples(url, run_id[0]["id"]) if run_id else (0, 0)
    # The run's own count: every sample it measured, from its summary on the server now.
    listed = json.loads(abibench(env, "--db", url, "runs", "--json")["stdout"])
    return {"command": shown({"argv": ["abibench", *argv]}, url, cluster.password),
            "server_stopped_after_samples": stopped_at, "run_exit": proc.returncode,
            "warnings": [ln for ln in err.splitlines() if ln.startswith("abibench: warning:")],
            "spool_files": spooled, "server_before_push": before,
            "push": push["stdout"].strip(), "push_exit": push["exit"],
            "server_after_push": after, "push_again": again["stdout"].strip(),
            "server_after_second_push": final, "runs": listed,
            "expected_samples": 2 * 2 * (6 + 1),  # workloads x ABIs x (rounds + warm-up)
            "run_stdout_tail": out.strip().splitlines()[-1:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "fleet_acceptance.json")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root: the two fleet hosts are sshd instances", file=sys.stderr)
        return 3
    workdir = os.environ.get("ABIBENCH_TEST_FLEET_DIR") or \
        str(Path.home() / ".cache" / "abibench" / "test-fleet")
    out: dict[str, Any] = {}
    try:
        run_steps(out, workdir, args.rounds)
    except (RuntimeError, TimeoutError) as exc:  # a server that did not start, in its own words
        print(f"fleet_acceptance: {exc}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    ok = (out["fleet_run"]["exit"] == 0 and out["host_down"]["exit"] == 1
          and out["server_lost"]["run_exit"] == 0
          and out["server_lost"]["server_after_push"] == out["server_lost"][
              "server_after_second_push"]
          and out["server_lost"]["server_after_push"] == (out["server_lost"]["expected_samples"],)
          * 2)
    print(f"fleet_acceptance: {'ok' if ok else 'FAILED'}: fleet_run exit "
          f"{out['fleet_run']['exit']} ({hosts_of(out['fleet_run']['table'])}); host_down exit "
          f"{out['host_down']['exit']} ({hosts_of(out['host_down']['table'])}); server_lost: "
          f"run exit {out['server_lost']['run_exit']}, samples on the server after push "
          f"{out['server_lost']['server_after_push']}, expected "
          f"{out['server_lost']['expected_samples']}")
    return 0 if ok else 1


def hosts_of(table_lines: list[str]) -> str:
    """Each host and its status from the fleet's summary table: "hostA ok, hostB ok"."""
    return ", ".join(" ".join(ln.split()[:2]) for ln in table_lines[1:]) or "no table"


def run_steps(out: dict[str, Any], workdir: str, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="abibench-acceptance-") as tmp, \
            pg_cluster() as cluster, \
            sshd_hosts({"hostA": "127.0.0.2", "hostB": "127.0.0.3"}) as fleet:
        for name in fleet.hosts:
            shutil.rmtree(Path(workdir, name, "data"), ignore_errors=True)  # no earlier results
            Path(workdir, name).mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ABIBENCH_DATA": str(Path(tmp) / "data"), "CI": "true",
               **fleet.env(), "ABIBENCH_TEST_WORKDIR": workdir}
        env.pop("ABIBENCH_DB", None)
        steps: list[tuple[str, Callable[[], dict[str, Any]]]] = [
            ("fleet_run", lambda: fleet_runs(env, cluster, rounds)),
            ("host_down", lambda: host_down(env, cluster, fleet, rounds)),
            ("server_lost", lambda: server_lost(env, cluster))]
        for name, step in steps:
            out[name] = step()
            print(json.dumps({name: out[name]}, indent=1), flush=True)


if __name__ == "__main__":
    sys.exit(main())
