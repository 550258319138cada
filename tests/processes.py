"""What tests that start processes share: whether one is alive, and waiting for a condition
without sleeping a fixed time."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path


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
