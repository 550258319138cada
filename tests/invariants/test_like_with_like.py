"""Invariant "a row compares named code with named code" (docs/reliability.md): an explanation's
function diff never sets a named function against code without symbols.

Generated: per-function tables of two ABIs, each object (the C library, ld.so, the program, ...)
present or not on each side and with or without code without symbols, then every row of
`function_diff`. The captured outputs and a real counted run: tests/analyse/test_explain_objects.py."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.explain import function_diff
from abibench.records import PROGRAM_OBJECT, UNKNOWN_FUNCTION, CounterProfile, FunctionCount

SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))
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


@settings(max_examples=300 * SCALE, deadline=None)
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
