"""Invariant "a row compares named code with named code" (docs/reliability.md): an explanation's
function diff never sets a named function against code without symbols.

Generated: per-function tables of two ABIs, each object (the C library, ld.so, the program, ...)
present or not on each side and with or without code without symbols, then every row of
`function_diff`. A real counted run of ptrtree on i386 and x86_64 (whose C libraries differ:
one without symbols) goes through `abibench explain`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.explain import function_diff
from abibench.records import PROGRAM_OBJECT, UNKNOWN_FUNCTION, CounterProfile, FunctionCount

OBJECTS = ("libc.so.6", "ld.so", PROGRAM_OBJECT, "libm.so.6", UNKNOWN_FUNCTION)
NAMES = ("malloc", "free", "main", "walk", "memcpy", "_int_malloc", UNKNOWN_FUNCTION)

# one side: object -> {function: instructions}
Side = dict[str, dict[str, int]]
sides = st.dictionaries(st.sampled_from(OBJECTS),
                        st.dictionaries(st.sampled_from(NAMES), st.integers(1, 10**9),
                                        min_size=1, max_size=5),
                        max_size=len(OBJECTS))


def _profile(side: Side, with_objects: bool = True) -> CounterProfile:
    """As a counted run stores it: one row per object and function (per function alone
    when the counter recorded no objects, as cachegrind did)."""
    merged: dict[tuple[str, str], int] = {}
    for obj, fns in side.items():
        for name, n in fns.items():
            key = (obj if with_objects else "", name)
            merged[key] = merged.get(key, 0) + n
    functions = tuple(FunctionCount(name, (n,), obj) for (obj, name), n in merged.items())
    objects = tuple(FunctionCount(obj, (sum(fns.values()),)) for obj, fns in side.items())
    total = sum(f.counts[0] for f in functions)
    return CounterProfile(events=("Ir",), totals=(total,), functions=functions,
                          objects=objects if with_objects else ())


def _unnamed(side: Side) -> set[str]:
    return {obj for obj, fns in side.items() if UNKNOWN_FUNCTION in fns}


@settings(max_examples=300, deadline=None)
@given(sides, sides, st.booleans())
def test_no_row_pairs_named_code_with_unnamed_code(a: Side, b: Side, recorded: bool) -> None:
    pa, pb = _profile(a, recorded), _profile(b, recorded)
    rows = function_diff(pa, pb, top=10**6, a="i386", b="x86_64")
    if pa.totals == pb.totals:
        assert rows == ()
        return
    unnamed = _unnamed(a) | _unnamed(b) if recorded else (
        {""} if _unnamed(a) | _unnamed(b) else set())
    for r in rows:
        if r.whole:
            # the whole object on both sides, whoever lacks the symbols
            assert r.object in unnamed and r.label.count("whole object") == 1
            assert r.a == (pa.function_total(next(o for o in pa.objects if o.name == r.object),
                                             "Ir") if recorded and r.object in a else
                           (pa.totals[0] if not recorded else None))
        else:
            # a named function, in an object named on every side
            assert r.name != UNKNOWN_FUNCTION and r.object not in unnamed
            assert "without symbols" not in r.label
    # Every instruction is in exactly one row: the rows add up to the whole difference.
    assert sum(r.diff for r in rows) == pa.totals[0] - pb.totals[0]
    assert abs(sum(r.share for r in rows) - 1) < 1e-9


def test_the_captured_c_libraries_are_compared_whole(
        cachegrind_profile: Callable[..., Any]) -> None:
    # i386's libc has no symbols for its internal functions, x86_64's has them (libc6-dbg):
    # the C library is one row on both sides, and the program's own functions are compared.
    rows = function_diff(cachegrind_profile("ptrchase", "i386"),
                         cachegrind_profile("ptrchase", "x86_64"), top=50,
                         a="i386", b="x86_64")
    libc = next(r for r in rows if r.object == "libc.so.6")
    assert libc.whole and libc.unnamed == ("i386",) and libc.a and libc.b
    assert not any(r.object == "libc.so.6" and not r.whole for r in rows)
    assert any(r.name == "walk" and r.object == PROGRAM_OBJECT for r in rows)


@pytest.mark.needs_setup("valgrind")
def test_a_real_explain_of_ptrtree_compares_like_with_like(cli: Callable[..., Any]) -> None:
    r = cli("run", "ptrtree", "--abi", "i386,x86_64", "--rounds", "3", "--set", "nodes=3000",
            "--counters", "--no-html")
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli("explain", "latest", "ptrtree", "--json")
    assert r.returncode == 0, r.stderr
    (x,) = json.loads(r.stdout)
    rows = x["functions"]
    assert rows, x
    for row in rows:
        if not row["whole_object"]:
            assert row["name"] != "???", row
    libc = [row for row in rows if row["object"] == "libc.so.6"]
    # i386's C library (libc6-i386) has no symbols for malloc's internals: compared whole
    assert libc and all(row["whole_object"] for row in libc), rows
    assert "i386" in libc[0]["without_symbols_in"]
    r = cli("explain", "latest", "ptrtree")
    assert r.returncode == 0, r.stderr
    assert "libc.so.6 (whole object: code without symbols in i386's)" in r.stdout, r.stdout
    assert not re.search(r"^\s*\?\?\? \(code without symbols\)", r.stdout, re.M), r.stdout
