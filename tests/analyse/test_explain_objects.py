"""Like with like in explanations, on real outputs: the captured callgrind outputs of ptrchase
(tests/data/callgrind/) and a real counted run of ptrtree on i386 and x86_64, whose C libraries
differ (i386's, libc6-i386, has no symbols for its internal functions). The generated
invariant is tests/invariants/test_like_with_like.py."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from abibench.analyse.explain import function_diff
from abibench.records import PROGRAM_OBJECT


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
    # ~45 s on a busy 2-core machine: two builds and two counted runs under valgrind, the only
    # way to see which of this machine's C libraries has symbols
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
