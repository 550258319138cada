"""Whether this host can count instructions: perf with hardware counters, else valgrind."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any


def counters_status() -> dict[str, Any]:
    """Instruction counting: perf where the host exposes counters, else valgrind."""
    perf: dict[str, Any] = {"available": False, "reason": "perf not installed"}
    if shutil.which("perf"):
        proc = subprocess.run(["perf", "stat", "-x,", "-e", "instructions", "true"],
                              capture_output=True, text=True, check=False)
        ok = proc.returncode == 0 and "<not supported>" not in proc.stderr
        perf = {"available": ok,
                "reason": None if ok else "hardware counters not supported here (VM?)"}
    valgrind = shutil.which("valgrind")
    return {
        "perf": perf,
        "valgrind": {"available": valgrind is not None,
                     "reason": None if valgrind else "apt-get install valgrind"},
    }
