"""The explanation and the advice in every format, and the `explain` and `advise` commands."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from abibench.analyse import report as analysis
from abibench.analyse.advise import Deployment
from abibench.records import RunDoc
from abibench.report import render
from abibench.store.exchange import import_doc
from abibench.store.sql import SqlStore

Main = Callable[..., tuple[int, str, str]]


def _times(factor: float) -> list[float]:
    return [factor * (1 + 0.01 * ((i * 3 + int(factor * 10)) % 5 - 2)) for i in range(6)]


@pytest.fixture
def memory_doc(cachegrind_profile: Callable[..., Any],
               make_counted_doc: Callable[..., RunDoc]) -> RunDoc:
    """ptrchase: i386 faster with fewer misses and less memory."""
    return make_counted_doc({"i386": _times(0.8), "x86_64": _times(1.0)},
                            {"i386": cachegrind_profile("ptrchase", "i386"),
                             "x86_64": cachegrind_profile("ptrchase", "x86_64")},
                            rss={"i386": [6000 + i for i in range(6)],
                                 "x86_64": [10000 + i for i in range(6)]},
                            faults={"i386": [1500 + i for i in range(6)],
                                    "x86_64": [2500 + i for i in range(6)]},
                            workload="ptrchase")


def test_every_format_shows_the_why_and_the_advice(memory_doc: RunDoc) -> None:
    rep = analysis.from_run(memory_doc, deployment=Deployment(1 << 30))
    (x,) = rep.explanations
    assert x.rule == "memory" and "minor page faults are 40% fewer" in x.text
    page = render(rep, "html")
    assert '<section id="why">' in page and '<section id="advice">' in page
    assert '<a href="#why">Why</a>' in page and "<h2>Advice</h2>" in page
    assert "aria-label=\"why: instruction-count ratio" in page
    assert "walk" in page and "not hardware counters" in page
    md = render(rep, "markdown")
    assert "## Why" in md and "## Advice" in md and "| walk |" in md
    assert "In 1 GiB, i386 fits 67% more ptrchase instances" in md
    data = json.loads(render(rep, "json"))
    assert data["explanations"][0]["rule"] == "memory"
    assert "walk" in [f["name"] for f in data["explanations"][0]["functions"]]
    assert data["advice"]["rows"][0]["instances"] == (1 << 30) // (6002 * 1024)
    term = render(rep, "terminal")
    assert "explanation" in term and "memory side" in term
    assert "why: i386 vs x86_64: i386 is" in term
    # without a memory budget: no advice anywhere
    plain = analysis.from_run(memory_doc)
    assert '<section id="advice">' not in render(plain, "html")
    assert "## Advice" not in render(plain, "markdown")


def test_explain_and_advise_commands(memory_doc: RunDoc, db_ref: str,
                                     open_db: Callable[..., SqlStore],
                                     main_in_process: Main) -> None:
    db = db_ref  # on both backends: the counted samples' profiles come back from either
    store = open_db()
    run_id = import_doc(store, memory_doc, "x.json").run_id
    store.close()
    code, out, err = main_in_process("--db", str(db), "explain", run_id)
    assert code == 0, err
    assert out.startswith("ptrchase (wall, lower is better)\n  i386 vs x86_64: i386 is ")
    assert "time i386/x86_64 0." in out and "walk:" in out
    code, out, _ = main_in_process("--db", str(db), "explain", run_id, "ptrchase", "--json")
    assert json.loads(out)[0]["rule"] == "memory"
    code, _, err = main_in_process("--db", str(db), "explain", run_id, "nope")
    assert code == 2 and "workload 'nope' is not in this run" in err
    code, out, err = main_in_process("--db", str(db), "advise", run_id, "--memory", "4GiB",
                                     "--budget-cores", "2")
    assert code == 0, err
    assert "advice for 4 GiB of memory, 2 cores" in out
    assert "In 4 GiB, i386 fits 67% more ptrchase instances" in out
    code, _, err = main_in_process("--db", str(db), "advise", run_id, "--memory", "lots")
    assert code == 2 and "memory size 'lots'" in err
    code, _, err = main_in_process("--db", str(db), "report", run_id, "--mix", "ptrchase=1")
    assert code == 2 and "go with --memory SIZE" in err


def test_counts_that_never_agreed_are_not_called_exact(
        cachegrind_profile: Callable[..., Any], make_counted_doc: Callable[..., RunDoc]) -> None:
    # Lua seeds its string hashes from the clock: its counted runs differ from one another.
    doc = make_counted_doc({"i386": _times(1.2), "x86_64": _times(1.0)},
                           {"i386": cachegrind_profile("bignum", "i386",
                                                       attempts=(12_000_000, 12_872_461)),
                            "x86_64": cachegrind_profile("bignum", "x86_64")})
    text = render(analysis.from_run(doc), "terminal")
    assert ("instructions executed (not exact: repeated runs of i386 differed; valgrind: i386, "
            "x86_64): ") in text
    agreed = make_counted_doc({"i386": _times(1.2), "x86_64": _times(1.0)},
                              {t: cachegrind_profile("bignum", t) for t in ("i386", "x86_64")})
    assert "instructions executed (exact; valgrind: i386, x86_64): " in \
        render(analysis.from_run(agreed), "terminal")
