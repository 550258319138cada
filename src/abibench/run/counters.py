"""Instruction counts, and with ``--counters=cache`` simulated cache and branch events, under
valgrind's cachegrind: exact where this host has no hardware counters.

Instruction counts do not depend on what else the machine is doing, so they are a noise-free
second opinion where hardware counters are not available (VMs). Cachegrind's cache and branch
figures are a simulation of one fixed cache model (:data:`CACHE_MODEL`, the same on every host so
that a stored run can be compared with another), not the hardware's own.

Children are traced (``--trace-children=yes``, one output file per process), and only the
processes that ran one of the workload's own programs are kept: a profile whose command is a
shell script counts the programs it starts, not the shell.

Under an emulator (armhf and aarch64 on an x86 host) abibench's own QEMU plugin counts the
guest instructions instead (instructions only: no cache model, no functions). Every counting
run gets a fixed environment and, preloaded, the step clock (native/stepclock.c): a program
that prints its own timings then executes the same instructions every time, so the two counts
of one build agree exactly.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import HostError
from ..obtain.qemuplugin import Plugin, read_count
from ..probe.emulator import Emulator
from ..records import INSTRUCTIONS, CounterProfile, FunctionCount
from .launcher import RawResult, run_sample

VALGRIND_SLOWDOWN = 100  # cachegrind without cache simulation runs ~50x slower; leave room
CACHE_SLOWDOWN = 200  # with cache and branch simulation, ~100x
# A fixed, typical cache (32 KiB 8-way L1s, 8 MiB 16-way last level, 64-byte lines) rather than
# the host's: a VM reports odd geometries (a 256 MiB direct-mapped L3 here), and a fixed model
# makes the simulated misses of two hosts comparable.
CACHE_MODEL = ("--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64")
MAX_ATTEMPTS = 4  # counted runs per target until two agree
# Two counts agree when they differ by at most 1 in 10,000: a program that times itself prints
# different figures on every run, and formatting them takes a few hundred instructions more or
# less (ptrtree: +-300 of 19 million). A real difference of work is far larger.
AGREE = 1e-4
TOP_FUNCTIONS = 300  # functions kept per target, by instructions: enough for any explanation
UNKNOWN_FUNCTION = "???"  # cachegrind's name for code without symbols


@dataclass(frozen=True)
class Cachegrind:
    """One cachegrind output: its command, events, totals and per-function sums."""

    command: str
    events: tuple[str, ...]
    totals: tuple[int, ...]
    functions: dict[str, tuple[int, ...]]
    cache: tuple[str, ...] = ()


_VERSION = re.compile(r"@@?[A-Za-z_][\w.]*$")
# gcc's clones of one function: constant propagation, scalar replacement, split cold parts
_CLONE = re.compile(r"(\.(constprop|isra|part|cold|lto_priv|localalias)(\.\d+)?)+$")


def function_name(raw: str) -> str:
    """A function's name as matched across ABIs: without the symbol version glibc's names carry
    on one ABI and not on another (``memcpy@@GLIBC_2.14``, ``__libc_start_main@@GLIBC_2.34``),
    and without the suffix of a clone gcc made on one ABI (``mul_add_words.constprop.0``), whose
    counts are the function's."""
    return _CLONE.sub("", _VERSION.sub("", raw.strip()))


def parse_cachegrind(text: str) -> Cachegrind:
    """A cachegrind.out file: ``events:``, ``summary:``, and every ``fn=`` block's line counts
    summed per function (a function inlined into several files is one function).

    Raises ValueError when the file has no events or no summary (valgrind died early).
    """
    events: tuple[str, ...] = ()
    totals: tuple[int, ...] | None = None
    command = ""
    cache: list[str] = []
    funcs: dict[str, list[int]] = {}
    current: list[int] | None = None
    for line in text.splitlines():
        if not line:
            continue
        head = line[0]
        if head.isdigit():
            if current is None:
                continue
            parts = line.split()
            # "line count count ...": counts left out at the end are zero
            for i, v in enumerate(parts[1:len(events) + 1]):
                current[i] += int(v)
            continue
        key, _, value = line.partition("=") if head in "fc" and "=" in line[:4] else \
            line.partition(":")
        if key == "fn":
            name = function_name(value)
            current = funcs.setdefault(name, [0] * len(events))
        elif key == "fl":
            current = None
        elif key == "events":
            events = tuple(value.split())
        elif key == "summary":
            totals = tuple(int(v) for v in value.split())
        elif key == "cmd":
            command = value.strip()
        elif key == "desc":
            cache.append(" ".join(value.split()))
    if not events or totals is None:
        raise ValueError("not a complete cachegrind output (no events or no summary line)")
    if len(totals) < len(events):
        totals = totals + (0,) * (len(events) - len(totals))
    return Cachegrind(command, events, totals, {k: tuple(v) for k, v in funcs.items()},
                      tuple(cache))


def merge(outputs: Sequence[Cachegrind]) -> Cachegrind:
    """Several processes' outputs (a shell loop of one program) as one: events summed."""
    if not outputs:
        raise ValueError("no cachegrind output to merge")
    events = outputs[0].events
    if any(o.events != events for o in outputs):
        raise ValueError("cachegrind outputs count different events")
    totals = [0] * len(events)
    funcs: dict[str, list[int]] = {}
    for o in outputs:
        for i, v in enumerate(o.totals):
            totals[i] += v
        for name, counts in o.functions.items():
            acc = funcs.setdefault(name, [0] * len(events))
            for i, v in enumerate(counts):
                acc[i] += v
    return Cachegrind("; ".join(o.command for o in outputs), events, tuple(totals),
                      {k: tuple(v) for k, v in funcs.items()}, outputs[0].cache)


def keep_programs(outputs: Iterable[Cachegrind], programs: Sequence[Path]) -> list[Cachegrind]:
    """The outputs of processes that ran one of ``programs``; all of them when none did (a
    program started by a path the command spells differently is still counted)."""
    names = {os.path.normpath(p) for p in programs} | {str(p.resolve()) for p in programs}
    every = list(outputs)
    mine = [o for o in every if os.path.normpath(o.command.split(" ", 1)[0] or ".") in names]
    return mine or every


def profile_of(parsed: Cachegrind, attempts: Sequence[int], simulation: str,
               top: int = TOP_FUNCTIONS) -> CounterProfile:
    """The stored form: totals, the ``top`` functions by instructions (cachegrind's nameless
    code kept under its own name, so the shares add up), and the attempts."""
    ir = parsed.events.index(INSTRUCTIONS) if INSTRUCTIONS in parsed.events else 0
    ranked = sorted(parsed.functions.items(), key=lambda kv: (-kv[1][ir], kv[0]))[:top]
    return CounterProfile(
        events=parsed.events, totals=parsed.totals,
        functions=tuple(FunctionCount(name, counts) for name, counts in ranked if counts[ir]),
        attempts=tuple(attempts), agreed=agreement(attempts) is not None,
        simulation=simulation, cache=parsed.cache if simulation == "cache" else ())


def agreement(attempts: Sequence[int], tolerance: float = AGREE) -> int | None:
    """The latest count that agrees with an earlier one (within ``tolerance``, relative), or
    None."""
    for i in range(len(attempts) - 1, 0, -1):
        if any(abs(attempts[i] - x) <= tolerance * max(attempts[i], x) for x in attempts[:i]):
            return attempts[i]
    return None


def valgrind_argv(argv: Sequence[str], out_pattern: Path, simulation: str) -> list[str]:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise HostError("--counters needs valgrind: apt-get install valgrind")
    sim = (["--cache-sim=yes", "--branch-sim=yes", *CACHE_MODEL] if simulation == "cache"
           else ["--cache-sim=no"])
    return [valgrind, "--tool=cachegrind", *sim, "--trace-children=yes",
            f"--cachegrind-out-file={out_pattern}", *argv]


# The step clock (native/stepclock.c) writes how often a process read it, when that was a
# million times or more, into this directory, named relative to the counted run's working
# directory: a path of the run's own would change the environment's length, and the count.
CLOCK_READS_ENV = "ABIBENCH_CLOCK_READS"
CLOCK_READS_DIR = ".abibench-clock-reads"


def clear_clock_reads(cwd: Path) -> None:
    where = cwd / CLOCK_READS_DIR
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir()


def clock_reads(cwd: Path) -> int:
    """The most clock readings one process reported (0: none read it a million times), and
    the directory removed. A number that does not parse is not counted: the file is the
    program's to spoil, and the warning it feeds is advice, not a result."""
    where = cwd / CLOCK_READS_DIR
    most = 0
    try:
        for f in where.iterdir():
            text = f.read_text(errors="replace")[:32].strip() if f.is_file() else ""
            if text.isdigit():
                most = max(most, int(text))
    except OSError:
        pass
    finally:
        shutil.rmtree(where, ignore_errors=True)
    return most


def count_events(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
                 launch: Path, stdin: Path | None = None, programs: Sequence[Path] = (),
                 simulation: str = "insn", stepclock: Path | None = None,
                 ) -> tuple[RawResult, Cachegrind | None]:
    """Run argv once under cachegrind; what it counted in the workload's own programs (None when
    valgrind wrote nothing readable)."""
    if stepclock is not None:
        # valgrind hands LD_PRELOAD on to the programs it runs (adding its own library).
        env = {**env, "LD_PRELOAD": str(stepclock)}
    outdir = cwd / ".abibench-cachegrind"
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir()
    slowdown = CACHE_SLOWDOWN if simulation == "cache" else VALGRIND_SLOWDOWN
    try:
        raw = run_sample(valgrind_argv(argv, outdir / "cg.%p", simulation), cwd=cwd, env=env,
                         timeout_s=timeout_s * slowdown, launch=launch, stdin=stdin)
        parsed = []
        for f in sorted(outdir.iterdir()):
            try:
                parsed.append(parse_cachegrind(f.read_text(errors="replace")))
            except ValueError:
                continue  # a process killed before it wrote its summary
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
    if not parsed:
        return raw, None
    return raw, merge(keep_programs(parsed, programs))


def count_instructions(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
                       launch: Path, stdin: Path | None = None,
                       stepclock: Path | None = None) -> tuple[RawResult, int | None]:
    """Run argv once under cachegrind (no cache simulation) and read the instructions executed."""
    raw, parsed = count_events(argv, cwd, env, timeout_s, launch, stdin, stepclock=stepclock)
    if parsed is None:
        return raw, None
    ir = parsed.events.index(INSTRUCTIONS) if INSTRUCTIONS in parsed.events else 0
    return raw, parsed.totals[ir]


def count_guest_instructions(emulator: Emulator, plugin: Plugin, argv: list[str], cwd: Path,
                             env: dict[str, str], timeout_s: float, launch: Path,
                             stdin: Path | None = None, stepclock: Path | None = None,
                             ) -> tuple[RawResult, Cachegrind | None]:
    """Run argv once under its emulator with the counting plugin: the guest instructions it
    executed as a one-event count (None when the plugin wrote none: the program died from a
    signal or exec'd another)."""
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
    if count is None:
        return raw, None
    return raw, Cachegrind(" ".join(argv), (INSTRUCTIONS,), (count,), {})


def count_guest_shell(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
                      launch: Path, count_env: str, stdin: Path | None = None,
                      ) -> tuple[RawResult, Cachegrind | None]:
    """A shell command whose programs are the emulator's scripts (run/placement.py): with
    `count_env` naming a directory, each emulated process writes its count there; their sum
    (None when none wrote one, or one of them did not)."""
    where = cwd / ".abibench-insncount"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir()
    try:
        raw = run_sample(argv, cwd=cwd, env={**env, count_env: str(where)},
                         timeout_s=timeout_s, launch=launch, stdin=stdin)
        counts = [read_count(f) for f in sorted(where.iterdir())
                  if f.name.startswith("count.") and ".tmp." not in f.name]
    finally:
        shutil.rmtree(where, ignore_errors=True)
    found = [n for n in counts if n is not None]
    if not found or len(found) != len(counts):
        return raw, None
    return raw, Cachegrind(" ".join(argv), (INSTRUCTIONS,), (sum(found),), {})
