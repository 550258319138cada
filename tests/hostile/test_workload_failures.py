"""Workloads that fail for real: a crash, a hang, outputs that differ between ABIs, a malformed
profile, Ctrl-C mid-run. One-line errors, distinct exit codes, nothing measured lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Cli = Callable[..., subprocess.CompletedProcess[str]]
DbRows = Callable[..., list[tuple[Any, ...]]]
FIXTURES = Path(__file__).parents[1] / "fixtures"
# No test here reads a run's HTML report: --no-html spares each run its charts
# (tests/run/test_run.py checks the default report).


def _one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.startswith("abibench: ")]
    assert len(lines) == 1, stderr
    return lines[0]


def _samples(stored: DbRows) -> list[tuple[str, str, str]]:
    return [(w, t, s) for w, t, s in stored("SELECT workload, target, status FROM samples "
                                            "ORDER BY id")]


def test_malformed_profile(refused: Cli) -> None:
    r = refused("run", str(FIXTURES / "malformed.toml"))
    assert r.returncode == 2
    line = _one_line(r.stderr)
    assert "malformed.toml:" in line and 'better = "higher" or "lower"' in line


def test_crashing_workload_is_stored_and_others_go_on(cli: Cli, stored: DbRows) -> None:
    r = cli("run", str(FIXTURES / "crash.toml"), str(FIXTURES / "hog.toml"), "--abi",
            "i386,x86_64", "--rounds", "2", "--no-html")
    assert r.returncode == 1, r.stderr
    assert "failed" in r.stdout and "killed by SIGSEGV" in r.stdout
    rows = _samples(stored)
    assert ("crash", "i386", "failed") in rows and ("crash", "x86_64", "failed") in rows
    # The next workload still ran in full.
    assert sum(1 for w, _, s in rows if w == "hog" and s == "ok") == 6


def test_hanging_workload_times_out(cli: Cli, stored: DbRows, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    r = cli("run", str(FIXTURES / "hang.toml"), "--abi", "x86_64", "--rounds", "2",
            "--set", f"pidfile={pidfile}", "--no-html")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "timed out after 1s" in r.stdout
    assert _samples(stored) == [("hang", "x86_64", "timeout")]
    for pid in (int(x) for x in pidfile.read_text().split()):
        assert not Path(f"/proc/{pid}/cmdline").exists() or \
            Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"


def test_miscompare_is_reported_not_averaged(cli: Cli) -> None:
    r = cli("run", str(FIXTURES / "ptrsize.toml"), "--abi", "i386,x86_64", "--rounds", "2",
            "--no-html")
    assert r.returncode == 1
    assert "MISCOMPARE" in r.stdout and "outputs differ between ABIs" in r.stdout
    assert "i386=4" in r.stdout and "x86_64=8" in r.stdout
    assert "INVALID (outputs differ)" in r.stdout


def test_ctrl_c_keeps_what_was_measured(cli_env: dict[str, str], stored: DbRows) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "abibench", "run", str(FIXTURES / "spin.toml"), "--abi",
         "i386,x86_64", "--rounds", "30", "--set", "millions=30", "--no-html"],
        env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    # Wait (by condition, not by a fixed sleep) until samples exist, then interrupt mid-run.
    while time.monotonic() < deadline:
        if stored("SELECT COUNT(*) FROM samples") not in ([], [(0,)], [(1,)], [(2,)]):
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in _one_line(stderr)
    assert stored("SELECT status FROM runs") == [("interrupted",)]
    ((ok,),) = stored("SELECT COUNT(*) FROM samples WHERE status='ok'")
    assert ok >= 3
    # No spin process is left running.
    leftovers = subprocess.run(["pgrep", "-f", "bin/spin 30"], capture_output=True, text=True)
    assert leftovers.stdout.strip() == ""
