"""What tests that start processes share: whether one is alive, waiting for a condition
without sleeping a fixed time, who waits on a lock, and running Python as another user."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import abibench


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def ours(marker: str, program: str = "", start: bytes = b"") -> list[int]:
    """PIDs of processes whose command line names `marker` (a test's temp directory) and
    `program`, and begins with `start`: observed only, stopped by PID elsewhere."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                line = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in line and program.encode() in line and line.startswith(start):
                found.append(int(d.name))
    return found


def wait_until(cond: Callable[[], bool], deadline_s: float) -> bool:
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            return cond()
        time.sleep(0.02)
    return True


def must_happen(cond: Callable[[], bool], what: str, deadline_s: float = 60.0) -> None:
    """Wait for a condition the kernel reports (not for a time); the test fails if it never
    holds within the deadline, naming what did not happen."""
    if not wait_until(cond, deadline_s):
        pytest.fail(f"never happened within {deadline_s:.0f} s: {what}")


def lock_waiters(lock: Path) -> int:
    """Processes (or threads) blocked in flock(2) on this lock file, as the kernel lists them."""
    ino = os.stat(lock).st_ino
    return sum(1 for ln in Path("/proc/locks").read_text().splitlines()
               if "->" in ln and f":{ino} " in ln)


def interrupt_when(proc: subprocess.Popen[str], started: Callable[[], bool], sig: int,
                   what: str, deadline_s: float = 300) -> str:
    """Send `sig` to a running abibench once `started()` holds (mid-sample), wait for it to
    end and return its standard error; killed if it outlives the test."""
    try:
        deadline = time.monotonic() + deadline_s
        while not started():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"{what} never started"
            time.sleep(0.1)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        return err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def settle(found: Callable[[], list[str]], deadline_s: float = 15) -> list[str]:
    """What `found` still reports after exiting processes had a moment to be reaped."""
    wait_until(lambda: not found(), deadline_s)
    return found()


# The one way a test runs abibench as a user other than root (tests/invariants/
# test_other_user.py holds every test module to it). The family: a test that depends on where the
# checkout lives. Another user cannot read a clone kept where only root can (a 0700 home or
# temporary directory, as bench/setup_times.py makes), so the package it imports is a copy in
# `where`, an open directory the caller owns.
def python_as_other_user(code: str, where: Path, *args: str,
                         uid: int = 65534) -> subprocess.CompletedProcess[str] | None:
    """`python -c code args` as `uid` (root only; setpriv), importing a copy of abibench put in
    `where` (made open to every user); None where it cannot be done (not root, no setpriv)."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        return None
    os.chmod(where, 0o777)
    pkg = where / "pkg"
    shutil.copytree(Path(abibench.__file__).parent, pkg / "abibench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for d in (pkg, *(p for p in pkg.rglob("*") if p.is_dir())):
        d.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(pkg), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([setpriv, "--reuid", str(uid), "--regid", str(uid), "--clear-groups",
                           sys.executable, "-c", code, *args], capture_output=True, text=True,
                          check=False, env=env)
