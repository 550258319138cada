"""Whether this host can count instructions: perf with hardware counters, else valgrind."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from ..records import JSONDict


@dataclass(frozen=True)
class Counter:
    available: bool
    reason: str | None  # why not, with the fix


@dataclass(frozen=True)
class Counters:
    perf: Counter
    valgrind: Counter

    def to_dict(self) -> JSONDict:
        return {"perf": {"available": self.perf.available, "reason": self.perf.reason},
                "valgrind": {"available": self.valgrind.available,
                             "reason": self.valgrind.reason}}


def counters_status() -> Counters:
    """Instruction counting: perf where the host exposes counters, else valgrind."""
    perf = Counter(False, "perf not installed")
    if shutil.which("perf"):
        proc = subprocess.run(["perf", "stat", "-x,", "-e", "instructions", "true"],
                              capture_output=True, text=True, check=False)
        ok = proc.returncode == 0 and "<not supported>" not in proc.stderr
        perf = Counter(ok, None if ok else "hardware counters not supported here (VM?)")
    valgrind = shutil.which("valgrind")
    return Counters(perf, Counter(valgrind is not None,
                                  None if valgrind else "apt-get install valgrind"))
