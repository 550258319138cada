"""A run killed in the middle (SIGKILL, SIGTERM, SIGHUP) keeps every stored sample, reads as
abandoned or interrupted, and `run --resume` completes it with exactly the asked rounds."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
# Any number of rounds above one tests "exactly the asked rounds"; the kill lands half-way
# through ptrtree's 2 x ROUNDS samples, by condition, with nbody still to come: what is left
# (14 samples of 0.05-0.1 CPU s each) lasts many polls (50 ms), so the signal lands mid-run.
ROUNDS = 4
SIZES = ("--set", "nodes=75000", "--set", "steps=750000")


_COUNTED = ("SELECT workload, target, COUNT(*) FROM samples WHERE warmup=0 AND status='ok' AND "
            "kind='timed' AND discarded IS NULL GROUP BY 1, 2")


def _query(db: Path | str, query: str) -> list[tuple[Any, ...]]:
    """Rows straight from the database, a SQLite file or a PostgreSQL URL."""
    if str(db).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(str(db)) as con:
            return list(con.execute(query).fetchall())
    return list(sqlite3.connect(db).execute(query).fetchall())


def _counted(db: Path | str) -> dict[tuple[str, str], int]:
    return {(str(w), str(t)): int(n) for w, t, n in _query(db, _COUNTED)}


def _samples(db: Path | str) -> int:
    try:
        return int(_query(db, "SELECT COUNT(*) FROM samples")[0][0])
    except Exception:  # not created yet
        return 0


def _descendants_gone(pid: int) -> bool:
    """No process whose parent chain leads to pid is alive (checked through /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            return False
    return True


@pytest.mark.parametrize(("sig", "backend"), [
    (signal.SIGKILL, "sqlite"), (signal.SIGTERM, "sqlite"), (signal.SIGHUP, "sqlite"),
    (signal.SIGKILL, "postgresql"), (signal.SIGTERM, "postgresql")],
    ids=["SIGKILL", "SIGTERM", "SIGHUP", "SIGKILL-postgresql", "SIGTERM-postgresql"])
def test_killed_run_resumes_to_exactly_the_asked_rounds(cli: Cli, cli_env: dict[str, str],
                                                        db_file: Path, sig: int, backend: str,
                                                        tmp_path: Path,
                                                        request: pytest.FixtureRequest) -> None:
    db: Path | str = db_file
    if backend == "postgresql":  # the same through the shared store (and its local spool)
        db = request.getfixturevalue("pg_url")
    cli_env["ABIBENCH_DB"] = str(db)  # whatever ABIBENCH_TEST_DB_BACKEND chose for the others
    # A temp dir of this test's own: whatever the killed run left there must be gone after the
    # resume (which cleans what dead runs left).
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    cli_env["TMPDIR"] = str(tmp)
    proc = subprocess.Popen([sys.executable, "-m", "abibench", "run", "ptrtree", "nbody",
                             "--abi", "i386,x86_64", "--rounds", str(ROUNDS), "--no-html",
                             *SIZES], env={**cli_env, "PYTHONFAULTHANDLER": "1"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    # Kill it when ptrtree is half done (by condition, never by a fixed sleep).
    while _samples(db) < 2 + ROUNDS and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _samples(db) >= 2 + ROUNDS, "the run never got going"
    os.kill(proc.pid, sig)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGABRT)  # PYTHONFAULTHANDLER: where it hangs, on stderr
        _, err = proc.communicate(timeout=30)
        raise AssertionError(f"abibench did not end after signal {sig}: {err[-3000:]}") from None
    deadline = time.monotonic() + 30
    while not _descendants_gone(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    runs = cli("runs")
    assert runs.returncode == 0
    state = "abandoned" if sig == signal.SIGKILL else "interrupted"
    assert state in runs.stdout, runs.stdout
    if sig != signal.SIGKILL:
        assert proc.returncode == 130 and "--resume" in err, err[-2000:]
    before = _samples(db)
    r = cli("run", "--resume", "latest", "--no-html")
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    assert _samples(db) > before
    assert _counted(db) == {(w, t): ROUNDS for w in ("ptrtree", "nbody")
                            for t in ("i386", "x86_64")}
    if backend == "sqlite":
        assert _query(db, "PRAGMA integrity_check")[0][0] == "ok"
    assert _query(db, "SELECT status FROM runs") == [("complete",)]
    left = [p for p in tmp.rglob("*")]
    assert all(p.is_dir() and not any(p.iterdir()) for p in left), left  # an empty root at most
    # Resuming a complete run is refused with one line.
    again = cli("run", "--resume", "latest", "--no-html")
    assert again.returncode == 2 and "it is complete" in again.stderr


def test_resume_takes_no_plan_options_and_refuses_a_changed_profile(
        cli: Cli, cli_env: dict[str, str], cli_db: str, tmp_path: Path,
        fixtures: Path) -> None:
    r = cli("run", "--resume", "latest", "--rounds", "3")
    assert r.returncode == 2 and "--rounds" in r.stderr
    prof = tmp_path / "spin.toml"
    prof.write_text((fixtures / "spin.toml").read_text())
    (tmp_path / "spin.c").write_text((fixtures / "spin.c").read_text())
    proc = subprocess.Popen([sys.executable, "-m", "abibench", "run", str(prof), "--abi",
                             "i386,x86_64", "--rounds", "20", "--no-html", "--set",
                             "millions=20"], env=cli_env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _samples(cli_db) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    prof.write_text(prof.read_text() + "\n# edited\n")
    r = cli("run", "--resume", "latest")
    assert r.returncode == 2 and "changed since" in r.stderr, r.stderr
