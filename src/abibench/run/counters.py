"""Instruction counts under valgrind: exact where this host has no hardware counters.

Instruction counts do not depend on what else the machine is doing, so they are a noise-free
second opinion where hardware counters are not available (VMs).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ..errors import HostError
from .launcher import RawResult, run_sample

VALGRIND_SLOWDOWN = 100  # cachegrind without cache simulation runs ~50x slower; leave room


def count_instructions(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
                       launch: Path, stdin: Path | None = None) -> tuple[RawResult, int | None]:
    """Run argv once under cachegrind (no cache simulation) and read the instructions executed."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise HostError("--counters needs valgrind: apt-get install valgrind")
    out = cwd / "cachegrind.out"
    raw = run_sample([valgrind, "--tool=cachegrind", "--cache-sim=no",
                      f"--cachegrind-out-file={out}", *argv], cwd=cwd, env=env,
                     timeout_s=timeout_s * VALGRIND_SLOWDOWN, launch=launch, stdin=stdin)
    count = None
    if out.is_file():
        m = re.search(r"^summary:\s+(\d+)", out.read_text(), re.M)
        count = int(m.group(1)) if m else None
        out.unlink()
    return raw, count
