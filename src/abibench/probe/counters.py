"""Whether this host can count instructions: perf with hardware counters, else valgrind; and
under qemu-user, abibench's TCG plugin (whose header is fetched on the first counting run)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from ..records import JSONDict
from .emulator import QEMU_PACKAGE, accepts_plugins


@dataclass(frozen=True)
class Counter:
    available: bool
    reason: str | None  # why not, with the fix


@dataclass(frozen=True)
class Counters:
    perf: Counter
    valgrind: Counter
    qemu_plugin: Counter  # reason: also what happens on the first --counters run

    def to_dict(self) -> JSONDict:
        return {name: {"available": c.available, "reason": c.reason}
                for name, c in (("perf", self.perf), ("valgrind", self.valgrind),
                                ("qemu_plugin", self.qemu_plugin))}


def plugin_status() -> Counter:
    """Whether qemu-user loads plugins here (probed for aarch64: one build serves them all)."""
    qemu = shutil.which("qemu-aarch64") or shutil.which("qemu-arm")
    if qemu is None:
        return Counter(False, f"no qemu-user (apt-get install {QEMU_PACKAGE})")
    if not accepts_plugins(qemu):
        return Counter(False, f"{qemu} has no plugin support (qemu-user-static?): apt-get "
                              f"install {QEMU_PACKAGE}")
    return Counter(True, None)


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
                                  None if valgrind else "apt-get install valgrind"),
                    plugin_status())
