"""Issue 12's acceptance for durable runs, on this machine, with the real workloads.

For SIGKILL and then SIGTERM: start `abibench run ptrtree nbody --rounds 10` with its own
ABIBENCH_DATA, ABIBENCH_CACHE and TMPDIR in a temporary directory, send the signal when half
of the run's samples are stored, then `abibench run --resume RUN`. It passes when the run is
complete with exactly 10 counted rounds per workload and target, `PRAGMA integrity_check` is ok,
no temporary directory of abibench is left, and no process started by abibench is alive.

    .venv/bin/python bench/resume_acceptance.py            # both signals, ~3-5 minutes

Prints one line per check and exits 1 if any fails. Every process is found by a tag in its
environment (ABIBENCH_ACCEPTANCE), not by name; the temporary directory is removed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROUNDS = 10
WORKLOADS = ("ptrtree", "nbody")
TAG = "ABIBENCH_ACCEPTANCE"
START_DEADLINE_S = 900  # for the run to store half of its samples (builds included)


def abibench(env: dict[str, str], *args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abibench", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


def tagged(tag: str) -> list[int]:
    """PIDs of live processes (not zombies) whose environment carries the tag."""
    found = []
    needle = f"{TAG}={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def samples(db: Path) -> int:
    try:
        con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=1)
        try:
            return int(con.execute("SELECT COUNT(*) FROM samples").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def wait_for(cond: object, deadline_s: float) -> bool:
    assert callable(cond)
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            return bool(cond())
        time.sleep(0.1)
    return True


def planned(db: Path) -> tuple[int, int] | None:
    """(ABIs, warm-ups per target) of the stored run, once it is stored."""
    try:
        con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=1)
        try:
            row = con.execute("SELECT config_json FROM runs").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    config = json.loads(row[0])
    return len(config["abis"]), int(config["plan"]["warmup"])


def leftovers(tmp: Path, cache: Path) -> list[str]:
    """abibench's temporary directories still there: under $TMPDIR/abibench-UID, and build
    staging in the cache (hidden directories beside the finished builds)."""
    left = [str(p) for p in (tmp / f"abibench-{os.getuid()}").glob("*")]
    left += [str(p) for p in (cache / "builds").glob("*/.*")]
    return left


def check_resumed(db: Path, before: int, check: Callable[[str, bool, object], None]) -> None:
    """What the database of a resumed run must hold: every round counted once, complete, sound."""
    con = sqlite3.connect(db)
    counted = con.execute(
        "SELECT workload, target, COUNT(*) FROM samples WHERE warmup=0 AND status='ok' AND "
        "kind='timed' AND discarded IS NULL GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    targets = {t for _, t, _ in counted}
    check(f"exactly {ROUNDS} counted rounds per workload and target",
          bool(counted) and all(n == ROUNDS for _, _, n in counted)
          and {w for w, _, _ in counted} == set(WORKLOADS),
          ", ".join(f"{w}/{t}={n}" for w, t, n in counted))
    check("resumed samples added", samples(db) > before, f"{before} -> {samples(db)}")
    status = con.execute("SELECT status FROM runs").fetchone()[0]
    check("the run is complete", status == "complete", status)
    integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
    check("PRAGMA integrity_check", integrity == "ok", integrity)
    con.close()
    check("targets", len(targets) >= 2, ", ".join(sorted(targets)))


def one(sig: signal.Signals) -> bool:
    base = Path(tempfile.mkdtemp(prefix="resume-acceptance-"))
    tag = uuid.uuid4().hex
    data, cache, tmp = base / "data", base / "cache", base / "tmp"
    tmp.mkdir()
    env = {**os.environ, "ABIBENCH_DATA": str(data), "ABIBENCH_CACHE": str(cache),
           "TMPDIR": str(tmp), TAG: tag, "CI": "true"}
    db = data / "results.sqlite"
    ok = True

    def check(what: str, passed: bool, detail: object = "") -> None:
        nonlocal ok
        ok &= passed
        print(f"  {'ok  ' if passed else 'FAIL'} {what}{f': {detail}' if detail != '' else ''}",
              flush=True)

    print(f"{sig.name}: abibench run {' '.join(WORKLOADS)} --rounds {ROUNDS} (in {base})",
          flush=True)
    try:
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "abibench", "run", *WORKLOADS,
                                 "--rounds", str(ROUNDS)], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            # Half of the run's samples (warm-ups included), from the plan it stored.
            wait_for(lambda: planned(db) is not None or proc.poll() is not None, 120)
            n_abis, warmup = planned(db) or (2, 1)
            half = n_abis * len(WORKLOADS) * (ROUNDS + warmup) // 2
            reached = wait_for(lambda: samples(db) >= half or proc.poll() is not None,
                               START_DEADLINE_S)
            check(f"run stored {samples(db)} samples before the signal (waited for {half})",
                  reached and proc.poll() is None)
            if proc.poll() is not None:
                print(proc.stderr.read() if proc.stderr else "")
                return False
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        check(f"abibench ended after {sig.name}", True, f"exit {proc.returncode}, "
              f"{time.monotonic() - started:.1f}s after start")
        if sig != signal.SIGKILL:
            check("exit 130 with a --resume hint", proc.returncode == 130 and "--resume" in err,
                  err.strip().splitlines()[-1] if err.strip() else "")
        gone = wait_for(lambda: not tagged(tag), 30)
        check("no process of the killed run is alive", gone, tagged(tag) or "")
        listing = json.loads(abibench(env, "runs", "--json").stdout)
        (run,) = listing
        want = "abandoned" if sig == signal.SIGKILL else "interrupted"
        check(f"the run reads {want}", run["status"] == want, run["status"])
        before = samples(db)

        t = time.monotonic()
        r = abibench(env, "run", "--resume", run["id"])
        check(f"abibench run --resume {run['id']} exits 0", r.returncode == 0,
              f"{time.monotonic() - t:.1f}s" if r.returncode == 0 else r.stderr[-800:])
        check_resumed(db, before, check)
        check("no temporary directory left", not leftovers(tmp, cache), leftovers(tmp, cache))
        check("no process left", wait_for(lambda: not tagged(tag), 10), tagged(tag) or "")
    finally:
        for pid in tagged(tag):  # only what this script's runs started, by PID
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)
    return ok


def main() -> int:
    t = time.monotonic()
    results = [one(sig) for sig in (signal.SIGKILL, signal.SIGTERM)]
    print(f"{'PASS' if all(results) else 'FAIL'} in {time.monotonic() - t:.0f}s")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
