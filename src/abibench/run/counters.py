"""Instruction counts: valgrind for what the host runs, abibench's QEMU plugin for what runs
under an emulator. Exact where this host has no hardware counters.

Instruction counts do not depend on what else the machine is doing, so they are a noise-free
second opinion where hardware counters are not available (VMs), and the one comparable
measure of programs this host can only emulate. With the step clock (native/stepclock.c)
preloaded, a program that prints its own timings executes the same instructions every time,
so two counts of one build are identical.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ..errors import HostError
from ..obtain.qemuplugin import Plugin, read_count
from ..probe.emulator import Emulator
from .launcher import RawResult, run_sample

VALGRIND_SLOWDOWN = 100  # cachegrind without cache simulation runs ~50x slower; leave room


def count_instructions(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
                       launch: Path, stdin: Path | None = None,
                       stepclock: Path | None = None) -> tuple[RawResult, int | None]:
    """Run argv once under cachegrind (no cache simulation) and read the instructions executed."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise HostError("--counters needs valgrind: apt-get install valgrind")
    out = cwd / "cachegrind.out"
    # valgrind hands LD_PRELOAD on to the program it runs (adding its own library).
    env = {**env, "LD_PRELOAD": str(stepclock)} if stepclock is not None else env
    raw = run_sample([valgrind, "--tool=cachegrind", "--cache-sim=no",
                      f"--cachegrind-out-file={out}", *argv], cwd=cwd, env=env,
                     timeout_s=timeout_s * VALGRIND_SLOWDOWN, launch=launch, stdin=stdin)
    count = None
    if out.is_file():
        m = re.search(r"^summary:\s+(\d+)", out.read_text(), re.M)
        count = int(m.group(1)) if m else None
        out.unlink()
    return raw, count


def count_guest_instructions(emulator: Emulator, plugin: Plugin, argv: list[str], cwd: Path,
                             env: dict[str, str], timeout_s: float, launch: Path,
                             stdin: Path | None = None, stepclock: Path | None = None,
                             ) -> tuple[RawResult, int | None]:
    """Run argv once under its emulator with the counting plugin; the guest instructions it
    executed, or None when the plugin wrote no count (the program died from a signal)."""
    out = cwd / "insncount.out"
    out.unlink(missing_ok=True)
    wrapped = emulator.wrap(argv, plugin.argument(out))
    if stepclock is not None:
        # -E sets the variable in the guest only: the emulator itself is a host program.
        wrapped[1:1] = ["-E", f"LD_PRELOAD={stepclock}"]
    raw = run_sample(wrapped, cwd=cwd, env=env, timeout_s=timeout_s, launch=launch, stdin=stdin)
    count = read_count(out)
    for leftover in cwd.glob("insncount.out*"):  # forked children write their own files
        leftover.unlink(missing_ok=True)
    return raw, count
