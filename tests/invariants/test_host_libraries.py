"""Invariant "a verdict is about the program asked about" (docs/reliability.md): a target that
loads the host's libraries gets no verdict (analyse/foreign.py), generated over which side loads
which libraries, in which mode, allowed or not. A real `--binary` pair:
tests/analyse/test_foreign.py."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse import report as analysis
from abibench.analyse.results import analyse
from abibench.records import Artifact, RunDoc

SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))
TARGETS = ("i386", "x86_64")
LIBS = ("libjq.so.1", "libonig.so.5", "libz.so.1", "libbz2.so.1.0")
SIZES = {"file": 1000, "text": 600, "data": 100, "bss": 10, "stripped": 800}


def _artifact(target: str, provenance: str, libs: tuple[str, ...]) -> Artifact:
    bin_dir = f"/cache/{target}/bin"
    loaded: list[Any] = [
        {"name": "libc.so.6", "path": "/lib/libc.so.6"},  # the C runtime: expected
        {"name": "libown.so", "path": f"{bin_dir}/libown.so"},  # its own: expected
        *[{"name": n, "path": f"/usr/lib/{n}"} for n in libs]]
    return Artifact(
        workload="w", abi=target, target=target, provenance=provenance, bin_dir=bin_dir,
        files=("prog",), sizes={"prog": dict(SIZES, file=1000 * (2 if "64" in target else 1))},
        inspection={"prog": {"libraries": loaded}},
        libraries={n: dict(SIZES, file=5000) for n in libs})


def _doc(make: Callable[..., RunDoc], loads: dict[str, tuple[str, ...]], provenance: str,
         allowed: bool) -> RunDoc:
    times = {"i386": [1.0, 1.01, 0.99, 1.0, 1.02, 0.98],
             "x86_64": [2.0, 2.02, 1.98, 2.0, 2.01, 1.99]}
    doc = make(times, {})
    config = replace(doc.run.config, extra={"allow_host_libs": True} if allowed else {})
    return replace(doc, run=replace(doc.run, config=config),
                   artifacts=tuple(_artifact(t, provenance, loads.get(t, ())) for t in TARGETS))


loads_st = st.fixed_dictionaries({t: st.lists(st.sampled_from(LIBS), unique=True, max_size=2)
                                  .map(tuple) for t in TARGETS})


@settings(max_examples=40 * SCALE, deadline=None)
@given(loads_st, st.sampled_from(("source", "prebuilt")), st.booleans())
def test_a_target_that_loads_host_libraries_gets_no_verdict(
        make_counted_doc: Callable[..., RunDoc], loads: dict[str, tuple[str, ...]],
        provenance: str, allowed: bool) -> None:
    doc = _doc(make_counted_doc, loads, provenance, allowed)
    (res,) = analyse(doc)
    foreign = {t for t, libs in loads.items() if libs} if not allowed else set()
    # time: a comparison only between targets that load nothing from the host
    assert bool(res.comparisons) == (not foreign)
    for c in res.comparisons:
        assert c.a not in foreign and c.b not in foreign
    # one line per target without a verdict, naming every library, with advice for its mode
    assert len(res.withheld) == len(foreign)
    for t in foreign:
        line = next(w for w in res.withheld if w.startswith(f"{t}: "))
        assert "no verdict" in line and all(n in line for n in loads[t])
        assert ("recipe" in line) == (provenance == "source")
        assert "--allow-host-libs" in line
    # size: no difference stated for or against a target that loads the host's libraries
    rows = {r.label: r for r in res.rows}
    assert (rows["i386"].size_larger_pct is None) == bool(foreign)
    rep = analysis.from_run(doc)
    for r in rep.sets[0].sizes:
        if r.reference is not None:  # the reference's own row states no difference
            assert (r.file_larger_pct is None) == bool(foreign)
        # its size counts the libraries it loads, listed
        assert r.libraries == loads[r.target] and r.uncounted == ()
        assert r.file == (2000 if "64" in r.target else 1000) + 5000 * len(loads[r.target])
    notes = " ".join(rep.sets[0].size_notes)
    for libs in loads.values():
        assert all(n in notes for n in libs)


def test_a_library_not_sized_is_said_not_to_be_counted(
        make_counted_doc: Callable[..., RunDoc]) -> None:
    # a run stored before library sizes were recorded, or a library that could not be read
    doc = _doc(make_counted_doc, {"x86_64": ("libjq.so.1",)}, "prebuilt", False)
    doc = replace(doc, artifacts=tuple(replace(a, libraries={}) for a in doc.artifacts))
    rep = analysis.from_run(doc)
    (row,) = [r for r in rep.sets[0].sizes if r.target == "x86_64"]
    assert row.uncounted == ("libjq.so.1",) and row.file == 2000
    assert ("x86_64: its sizes do not count libjq.so.1, which it loads from the host"
            in " ".join(rep.sets[0].size_notes))
