"""Instruction counts, and with ``--counters=cache`` simulated cache and branch events, under
valgrind's callgrind (cachegrind's counts and cache model, and the object of every function):
exact where this host has no hardware counters.

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

import functools
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import elf
from ..abi import ABIS
from ..errors import HostError
from ..obtain.libraries import in_root
from ..obtain.qemuplugin import Plugin, read_count
from ..probe.emulator import Emulator
from ..records import (
    INSTRUCTIONS,
    PROGRAM_OBJECT,
    UNKNOWN_FUNCTION,
    CounterProfile,
    FunctionCount,
)
from .launcher import RawResult, run_sample

VALGRIND_SLOWDOWN = 100  # callgrind without cache simulation runs ~50x slower; leave room
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
LOADER_OBJECT = "ld.so"


@dataclass(frozen=True)
class Cachegrind:
    """One counting output: its command, events, totals and per-function sums.

    ``functions`` is keyed by (object, function): the object is the file its code was loaded
    from as callgrind names it (``ob=``), "" in a cachegrind output, which does not record it.
    """

    command: str
    events: tuple[str, ...]
    totals: tuple[int, ...]
    functions: dict[tuple[str, str], tuple[int, ...]]
    cache: tuple[str, ...] = ()


_VERSION = re.compile(r"@@?[A-Za-z_][\w.]*$")
# gcc's clones of one function: constant propagation, scalar replacement, split cold parts
_CLONE = re.compile(r"(\.(constprop|isra|part|cold|lto_priv|localalias)(\.\d+)?)+$")
# callgrind names code without symbols by its address, cachegrind "???": one name for both
_ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$")
_ASSIGN = re.compile(r"^([a-z]+)=(.*)$")
_COMPRESSED = re.compile(r"^\((\d+)\)\s*(.*)$")
# which table of compressed names each key uses (callgrind's --compress-strings)
_NAME_TABLE = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl",
               "cfl": "fl", "fn": "fn", "cfn": "fn"}


def function_name(raw: str) -> str:
    """A function's name as matched across ABIs: without the symbol version glibc's names carry
    on one ABI and not on another (``memcpy@@GLIBC_2.14``, ``__libc_start_main@@GLIBC_2.34``),
    and without the suffix of a clone gcc made on one ABI (``mul_add_words.constprop.0``), whose
    counts are the function's. Code without symbols is ``???`` whichever tool counted it."""
    name = _CLONE.sub("", _VERSION.sub("", raw.strip()))
    return UNKNOWN_FUNCTION if _ADDRESS.match(name) else name


class _Names:
    """callgrind's compressed names: ``(12) name`` defines, ``(12)`` refers back."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, str]] = {}

    def resolve(self, key: str, value: str) -> str:
        table = self.tables.setdefault(_NAME_TABLE.get(key, key), {})
        m = _COMPRESSED.match(value.strip())
        if m is None:
            return value.strip()
        if m.group(2):
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), m.group(2))


def _main_object(path: str, command: str) -> str:
    """The process's own executable as PROGRAM_OBJECT, so that two ABIs' builds of a program
    match whatever their files are called (``--binary i386=./a32 --binary x86_64=./a64``)."""
    program = command.split(" ", 1)[0]
    return PROGRAM_OBJECT if program and os.path.basename(path) == os.path.basename(program) \
        else path


Symbols = Callable[[str], Mapping[int, str]]  # an object's path -> its functions' entries


def elf_symbols(path: str, root: Path | None = None) -> Mapping[int, str]:
    """The function entries of the object callgrind named, read from its file (nothing when
    it is not there, or "???"). In a sysroot, a path the program saw there is read there: the
    host's file of the same name is another build, whose addresses name other code."""
    if not path.startswith("/"):
        return {}
    if root is not None and not Path(path).is_relative_to(root):
        return elf.function_entries(in_root(root, path))
    return elf.function_entries(Path(path))


def parse_cachegrind(text: str, symbols: Symbols | None = None) -> Cachegrind:
    """A cachegrind.out or callgrind.out file: ``events:``, ``summary:`` (or ``totals:``), and
    every ``fn=`` block's self counts summed per object and function (a function inlined into
    several files is one function). A callgrind call's inclusive cost (the line after
    ``calls=``) is the callee's, already counted in its own block, and is skipped.

    Code callgrind names by its address is named by the object's own symbol table when
    ``symbols`` finds a function starting exactly there (a symbol without a size, which
    valgrind ignores); otherwise it is "???", code without symbols.

    Raises ValueError when the file has no events or no summary (valgrind died early).
    """
    events: tuple[str, ...] = ()
    totals: tuple[int, ...] | None = None
    command, obj, positions = "", "", 1
    cache: list[str] = []
    funcs: dict[tuple[str, str], list[int]] = {}
    current: list[int] | None = None
    names, skip_next, raw_obj = _Names(), False, ""
    entries: dict[str, Mapping[int, str]] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        head = line[0]
        if head.isdigit() or head in "+-*":
            if skip_next:
                skip_next = False
            elif current is not None:
                # "position(s) count count ...": counts left out at the end are zero
                for i, v in enumerate(line.split()[positions:positions + len(events)]):
                    current[i] += int(v)
            continue
        m = _ASSIGN.match(line)
        key, value = (m.group(1), m.group(2)) if m else line.partition(":")[::2]
        if key in _NAME_TABLE:
            value = names.resolve(key, value)
        if key == "fn":
            if symbols is not None and _ADDRESS.match(value):
                if raw_obj not in entries:
                    entries[raw_obj] = symbols(raw_obj)
                value = entries[raw_obj].get(int(value, 16), value)
            current = funcs.setdefault((obj, function_name(value)), [0] * len(events))
        elif key == "ob":
            raw_obj, obj, current = value, _main_object(value, command), None
        elif key == "fl":
            current = None
        elif key == "calls":
            skip_next = True
        elif key == "positions":
            positions = max(1, len(value.split()))
        elif key == "events":
            events = tuple(value.split())
        elif key in ("summary", "totals") and totals is None:
            totals = tuple(int(v) for v in value.split())
        elif key == "cmd":
            command = value.strip()
        elif key == "desc" and value.strip()[:2] in ("I1", "D1", "LL"):
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
    funcs: dict[tuple[str, str], list[int]] = {}
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


# The object a function's code came from, as matched across ABIs: what the loader is called
# differs per ABI, so every ABI's loader is "ld.so"; valgrind's own preloaded library is named
# per platform (vgpreload_core-x86-linux.so), so it is named by what it is.
_LOADERS = frozenset(a.loader_name() for a in ABIS.values())


def object_key(path: str) -> str:
    """An object's name as matched across ABIs: its file name (the C library is libc.so.6 in
    /usr/lib32 and in the 64-bit library directory alike), "ld.so" for any ABI's loader.
    "" (not recorded), "???" (code in no file) and the process's own executable stay as they
    are."""
    if path in ("", UNKNOWN_FUNCTION, PROGRAM_OBJECT):
        return path
    base = os.path.basename(path.rstrip("/")) or path
    if base in _LOADERS:
        return LOADER_OBJECT
    if base.startswith("vgpreload_"):
        return base.split("-", 1)[0]
    return base


def profile_of(parsed: Cachegrind, attempts: Sequence[int], simulation: str,
               top: int = TOP_FUNCTIONS) -> CounterProfile:
    """The stored form: totals, every object's totals, the ``top`` functions by instructions,
    and every object's code without symbols whatever its rank (so that an explanation knows
    which objects it cannot compare function by function), and the attempts."""
    ir = parsed.events.index(INSTRUCTIONS) if INSTRUCTIONS in parsed.events else 0
    width = len(parsed.events)
    funcs: dict[tuple[str, str], list[int]] = {}
    objects: dict[str, list[int]] = {}
    for (obj, name), counts in parsed.functions.items():
        key = object_key(obj)
        for acc in (funcs.setdefault((key, name), [0] * width),
                    objects.setdefault(key, [0] * width)):
            for i, v in enumerate(counts):
                acc[i] += v
    ranked = sorted(funcs.items(), key=lambda kv: (-kv[1][ir], kv[0]))
    kept = ranked[:top] + [kv for kv in ranked[top:] if kv[0][1] == UNKNOWN_FUNCTION]
    return CounterProfile(
        events=parsed.events, totals=parsed.totals,
        functions=tuple(FunctionCount(name, tuple(counts), obj)
                        for (obj, name), counts in kept if counts[ir]),
        attempts=tuple(attempts), agreed=agreement(attempts) is not None,
        simulation=simulation, cache=parsed.cache if simulation == "cache" else (),
        objects=tuple(FunctionCount(obj, tuple(counts)) for obj, counts in
                      sorted(objects.items(), key=lambda kv: (-kv[1][ir], kv[0]))
                      if counts[ir] and obj))


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
    # callgrind rather than cachegrind: the same counts, and it records the object (ob=) of
    # every function, which an explanation needs to compare like with like (docs/explain.md)
    return [valgrind, "--tool=callgrind", *sim, "--trace-children=yes",
            "--compress-strings=no", "--compress-pos=no",
            f"--callgrind-out-file={out_pattern}", *argv]


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
                 root: Path | None = None) -> tuple[RawResult, Cachegrind | None]:
    """Run argv once under callgrind; what it counted in the workload's own programs (None when
    valgrind wrote nothing readable). ``root``: the sysroot the programs run in."""
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
                parsed.append(parse_cachegrind(f.read_text(errors="replace"),
                                               functools.partial(elf_symbols, root=root)))
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
    """Run argv once under callgrind (no cache simulation) and read the instructions executed."""
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
