"""Cachegrind's output parsed per function, on real captured outputs (tests/data/cachegrind/),
and one real counted run with cache simulation of a tiny program."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from abibench.records import PROGRAM_OBJECT, CounterProfile
from abibench.run.counters import (
    CACHE_MODEL,
    agreement,
    count_events,
    function_name,
    keep_programs,
    merge,
    object_key,
    parse_cachegrind,
    profile_of,
)


def _text(captured: Path, name: str, tool: str = "callgrind") -> str:
    return gzip.decompress((captured / tool / f"{name}.{tool}.out.gz").read_bytes()).decode()


@pytest.mark.parametrize("name", ["bignum-i386", "bignum-x86_64", "ptrchase-i386",
                                  "ptrchase-x86_64"])
def test_functions_add_up_to_the_summary(captured: Path, name: str) -> None:
    cg = parse_cachegrind(_text(captured, name))
    assert cg.events == ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw",
                         "Bc", "Bcm", "Bi", "Bim")
    # Every self cost belongs to one function and a call's inclusive cost is not counted
    # again: the per-function sums are the totals (callgrind leaves a couple of instructions,
    # the process's last, to no function).
    for i in range(len(cg.events)):
        assert abs(sum(c[i] for c in cg.functions.values()) - cg.totals[i]) <= 4
    assert any("LL cache" in d and "8388608 B" in d for d in cg.cache)
    assert cg.command.endswith(name)
    objects = {obj for obj, _ in cg.functions}
    assert PROGRAM_OBJECT in objects  # the executable, whatever its file is called
    assert any(o.endswith("/libc.so.6") for o in objects)


@pytest.mark.parametrize("name", ["bignum-i386", "ptrchase-x86_64"])
def test_a_cachegrind_output_still_parses_without_objects(captured: Path, name: str) -> None:
    cg = parse_cachegrind(_text(captured, name, "cachegrind"))
    for i in range(len(cg.events)):
        assert sum(c[i] for c in cg.functions.values()) == cg.totals[i]
    assert {obj for obj, _ in cg.functions} == {""}


def test_the_word_routine_is_found_and_matched_across_abis(captured: Path) -> None:
    i386 = parse_cachegrind(_text(captured, "bignum-i386"))
    x64 = parse_cachegrind(_text(captured, "bignum-x86_64"))
    key = (PROGRAM_OBJECT, "mul_add_words")
    a, b = i386.functions[key][0], x64.functions[key][0]
    # 64 words of 32 bits against 32 of 64: four times the multiplications, and more
    assert a / b > 3
    # glibc's versioned names on x86_64 are matched without their version; callgrind's
    # addresses of code without symbols are "???" like cachegrind's
    names = {name for _, name in x64.functions}
    assert "__libc_start_main" in names
    assert not any("@" in name or name.startswith("0x") for name in names)


def test_objects_are_named_alike_across_abis(captured: Path) -> None:
    i386 = profile_of(parse_cachegrind(_text(captured, "ptrchase-i386")), (1, 1), "cache")
    x64 = profile_of(parse_cachegrind(_text(captured, "ptrchase-x86_64")), (1, 1), "cache")
    names = {o.name for o in i386.objects}
    assert names == {o.name for o in x64.objects}
    assert {"libc.so.6", "ld.so", PROGRAM_OBJECT} <= names
    assert object_key("/usr/lib32/libc.so.6") == object_key("/lib/x/libc.so.6") == "libc.so.6"
    # every object's code without symbols is kept, however small
    small = profile_of(parse_cachegrind(_text(captured, "ptrchase-i386")), (1, 1), "cache",
                       top=1)
    assert {f.object for f in small.functions if f.name == "???"} >= {"libc.so.6", "ld.so"}


def test_function_names_lose_their_symbol_version() -> None:
    assert function_name("memcpy@@GLIBC_2.14") == "memcpy"
    assert function_name("__libc_start_main@GLIBC_2.0") == "__libc_start_main"
    assert function_name("(below main)") == "(below main)"
    assert function_name("operator new(unsigned long)") == "operator new(unsigned long)"


def test_an_incomplete_output_is_refused() -> None:
    with pytest.raises(ValueError, match="summary"):
        parse_cachegrind("desc: I1 cache: 32768 B\ncmd: ./x\nevents: Ir\nfl=a.c\nfn=main\n1 5\n")


def test_several_processes_merge_and_only_the_programs_count(captured: Path) -> None:
    a = parse_cachegrind(_text(captured, "ptrchase-i386"))
    shell = parse_cachegrind("cmd: /bin/sh -c loop\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr "
                             "DLmw Bc Bcm Bi Bim\nfl=sh.c\nfn=main\n1 1000\nsummary: 1000\n")
    kept = keep_programs([shell, a, a], [Path("./ptrchase-i386")])
    assert kept == [a, a]
    both = merge(kept)
    assert both.totals == tuple(2 * t for t in a.totals)
    walk = (PROGRAM_OBJECT, "walk")
    assert both.functions[walk] == tuple(2 * v for v in a.functions[walk])
    # no output ran a program of the workload's: every process is kept rather than none
    assert keep_programs([shell], [Path("/elsewhere/prog")]) == [shell]


def test_agreement_tolerates_a_program_formatting_its_own_timings() -> None:
    assert agreement([19245274, 19245118]) == 19245118  # 156 of 19 million: the same work
    assert agreement([100, 200, 300]) is None
    assert agreement([100, 200, 100]) == 100
    assert agreement([100]) is None


def test_the_stored_profile_keeps_the_top_functions(captured: Path) -> None:
    cg = parse_cachegrind(_text(captured, "bignum-x86_64"))
    prof = profile_of(cg, (5, 6, 7), "cache", top=3)
    assert all(f.name == "???" for f in prof.functions[3:])  # beyond the top: unnamed code
    assert prof.functions[0].name == "mul_add_words"
    assert not prof.agreed
    assert prof.total("Ir") == cg.totals[0]
    assert prof.total("DLmr", "DLmw") == cg.totals[7] + cg.totals[8]
    again = CounterProfile.from_dict(prof.to_dict())
    assert again == prof


@pytest.mark.needs_setup("valgrind")
def test_a_counted_run_with_cache_simulation(tmp_path: Path, sample_launcher: Path,
                                             c_program: Callable[[str], Path],
                                             cachegrind_profile: Callable[..., Any]) -> None:
    prog = c_program("spin")
    raw, cg = count_events([str(prog), "1"], tmp_path, {"PATH": "/usr/bin:/bin"}, 30.0,
                           sample_launcher, programs=[prog], simulation="cache")
    assert raw.ok, raw.stderr_tail
    assert cg is not None and cg.totals[0] > 0
    assert "D1mr" in cg.events and "Bcm" in cg.events
    assert any("8388608 B" in d for d in cg.cache)  # the fixed model, not the host's
    assert "--LL=8388608,16,64" in CACHE_MODEL
    assert not list(tmp_path.iterdir())  # the output files are gone


@pytest.mark.parametrize(("argv", "counters"), [
    (["run", "nbody"], None),
    (["run", "--counters", "nbody"], "insn"),
    (["run", "nbody", "--counters"], "insn"),
    (["run", "--counters", "cache", "nbody"], "cache"),
    (["run", "--counters=cache", "nbody"], "cache"),
    (["run", "--counters", "insn"], "insn"),
])
def test_counters_stays_a_flag_and_takes_a_kind(argv: list[str], counters: str | None) -> None:
    from abibench.cli import _join_negative_values, build_parser

    args = build_parser().parse_args(_join_negative_values(argv))
    assert args.counters == counters
    assert args.workloads == ([] if argv[-1] == "insn" else ["nbody"])
