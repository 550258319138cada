"""Anything that passes import validation renders in every format, and no number overflows.

Property-style, with plain loops over hand-picked extremes: every numeric field of a run
document at 0, below 0, at the ends of the float range, a denormal, and 64-bit whole numbers;
every string empty, 10 kB long, markup and escapes, unicode; one sample, one target, all values
equal. Each document either is refused by validation with one line naming the field (only a
negative quantity that cannot be negative is), or renders through terminal, HTML, Markdown,
CSV, samples CSV and JSON without an exception, without "inf" or "nan" where a number belongs,
and without a number hundreds of digits long.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from abibench.analyse import report as analysis
from abibench.records import RunDoc
from abibench.report import render
from abibench.store.exchange import SchemaError, import_doc, validate
from abibench.store.sql import SqlStore

OpenDb = Callable[..., SqlStore]

MakeDoc = Callable[..., dict[str, Any]]
Doc = dict[str, Any]

FLOATS = (0.0, -1.0, 1e308, -1e308, 5e-324, -5e-324, sys.float_info.max)
INTS = (0, -1, 2**62, 2**63 - 1, -(2**63))
# Fields validation refuses below zero: times, sizes, peak RSS, counts. A program's own metric
# may be negative; its ratio is refused by the analysis instead (a warning, not a verdict).
NON_NEGATIVE = {"wall_s", "user_s", "sys_s", "max_rss_kb", "instructions", "sizes",
                "build_seconds", "cpus_online", "mem_total_kb", "round", "position", "rounds"}
# Set in every i386 sample at once, these put two timed samples in one place of a round.
PLACES = {"round"}
FAST = ("terminal", "markdown", "csv", "samples-csv", "json")

NOT_A_NUMBER = re.compile(r"\b(inf|infinity|nan)\b", re.IGNORECASE)
OVERFLOWED = re.compile(r"\d{25}")  # 2**63 is 19 digits; 25 in a row is a float printed whole


def _base(make_doc: MakeDoc, **kw: Any) -> Doc:
    """Two micro workloads (an XBench index) and a footprint sweep, with instruction counts."""
    kw.setdefault("rounds", 4)
    doc = make_doc(workloads={"cpu-a": {"i386": 90.0, "x86_64": 100.0},
                              "mem-b": {"i386": 120.0, "x86_64": 100.0},
                              "footprint-list": {"i386": 100.0, "x86_64": 100.0}},
                   params=kw.pop("params", {"n": "1000"}), **kw)
    counters = []
    for s in doc["samples"]:
        if s["round"] == 1:
            counters.append(dict(s, kind="counters", round=99, instructions=1_000_000))
    doc["samples"] += counters
    return doc


def _set_samples(doc: Doc, field: str, value: float, which: str) -> None:
    """field = value in every sample of i386 ("i386"), in every sample ("all") or in one."""
    for s in doc["samples"]:
        if which == "i386" and s["target"] != "i386":
            continue
        if which == "one" and not (s["target"] == "i386" and s["round"] == 2):
            continue
        if field.startswith("metrics."):
            s["metrics"][field.removeprefix("metrics.")] = value
        elif field != "instructions" or s["kind"] == "counters":
            s[field] = value


def _numeric_variants(make_doc: MakeDoc) -> Iterator[tuple[str, str, float, Doc]]:
    """(label, field, value, document): one extreme in one field at a time."""
    for field in ("wall_s", "user_s", "sys_s", "metrics.rate", "metrics.time"):
        for value in (*FLOATS, 2**62):
            for which in ("i386", "one"):
                doc = _base(make_doc)
                _set_samples(doc, field, value, which)
                yield f"{field}={value!r} ({which})", field, value, doc
    for field in ("max_rss_kb", "instructions", "round", "position", "exit_code", "env_pad"):
        for value in INTS:
            doc = _base(make_doc)
            _set_samples(doc, field, value, "i386")
            yield f"{field}={value}", field, value, doc
    for key in ("file", "text", "data", "bss", "stripped"):
        for value in INTS:
            for target in ("i386", "x86_64"):
                doc = _base(make_doc)
                for a in doc["artifacts"]:
                    if a["target"] == target:
                        for sizes in a["sizes"].values():
                            sizes[key] = value
                yield f"sizes.{key}={value} ({target})", "sizes", value, doc
    for value in FLOATS:
        doc = _base(make_doc)
        for a in doc["artifacts"]:
            a["build_seconds"] = value
        yield f"build_seconds={value!r}", "build_seconds", value, doc
        doc = _base(make_doc)
        doc["host"]["load_average"] = [value, value, value]
        yield f"load_average={value!r}", "load_average", value, doc
    for field in ("cpus_online", "kernel_bits", "mem_total_kb"):
        for value in INTS:
            doc = _base(make_doc)
            doc["host"][field] = value
            yield f"host.{field}={value}", field, value, doc
    for value in INTS:
        doc = _base(make_doc)
        for o in doc["outcomes"].values():
            o["rounds"] = value
        yield f"outcomes.rounds={value}", "rounds", value, doc
    for param in (0, -1, 2**62, 1e308, "0", "-5", "1e999", "9" * 4000, "nan"):
        yield f"params.n={str(param)[:12]}", "params", 0, _base(make_doc, params={"n": param})
        doc = _base(make_doc)
        doc["run"]["config"]["plan"] = {"min_rounds": param}
        yield f"plan={str(param)[:12]}", "plan", 0, doc


def _shapes(make_doc: MakeDoc) -> Iterator[tuple[str, Doc]]:
    yield "one round", _base(make_doc, rounds=1)
    yield "one target", _base(make_doc, targets=("x86_64",))
    yield "all values equal", _base(make_doc, noise=0.0)
    doc = _base(make_doc)
    doc["samples"] = []
    yield "no samples", doc
    doc = _base(make_doc)
    for field in ("wall_s", "user_s", "sys_s", "metrics.rate", "metrics.time"):
        _set_samples(doc, field, 1e308, "all")
    yield "every float 1e308", doc
    doc = _base(make_doc)
    for field in ("metrics.rate", "metrics.time"):
        _set_samples(doc, field, -1e308, "i386")
        _set_samples(doc, field, sys.float_info.max, "one")
    _set_samples(doc, "max_rss_kb", 0, "all")
    _set_samples(doc, "wall_s", 5e-324, "all")
    for a in doc["artifacts"]:
        for sizes in a["sizes"].values():
            sizes.update(file=2**63 - 1, text=0, data=2**62, bss=0, stripped=1)
    yield "mixed extremes", doc


def _check_rendered(label: str, doc: Doc, formats: tuple[str, ...], store: SqlStore,
                    words: bool = True) -> None:
    """Import into the store, load it back and render it in every format, as every later
    `abibench report` does; ``words=False`` where "nan" or a string of digits is the data
    itself (a parameter), so only the rendering is checked."""
    # A run id of its own: importing checks every stored run of the same id for a duplicate.
    doc["run"]["id"] = f"{doc['run']['id']}-{len(store.run_ids())}"
    imported = import_doc(store, RunDoc.from_dict(doc), f"{label}.json")
    loaded = store.load_run(imported.run_id)
    assert loaded.samples == tuple(replace(s, run_id=imported.run_id)
                                   for s in RunDoc.from_dict(doc).samples), label
    report = analysis.from_run(loaded)
    for fmt in formats:
        try:
            out = render(report, fmt)
        except Exception as exc:  # pragma: no cover - the message is the point
            raise AssertionError(f"{label}: {fmt} raised {exc!r}") from exc
        if fmt == "json":
            json.loads(out, parse_constant=lambda c: pytest.fail(f"{label}: JSON has {c}"))
        elif fmt in ("csv", "samples-csv"):
            rows = list(csv.reader(io.StringIO(out)))
            assert all(not NOT_A_NUMBER.fullmatch(cell) for row in rows for cell in row), label
        else:
            found = (NOT_A_NUMBER.search(out) or OVERFLOWED.search(out)) if words else None
            assert found is None, f"{label}: {fmt}: ...{out[found.start() - 60:found.end() + 20]!r}"


def _validated(label: str, doc: Doc) -> Doc | str:
    try:
        return validate(copy.deepcopy(doc), label)
    except SchemaError as exc:
        return str(exc)


def test_every_numeric_extreme_is_refused_by_name_or_renders(make_doc: MakeDoc,
                                                           open_db: OpenDb, db_ref: str) -> None:
    store = open_db()
    # The report is made from the run as loaded back, which is checked equal on both backends:
    # rendered once (SQLite) is enough.
    formats = () if db_ref.startswith("postgresql://") else FAST
    refused = rendered = 0
    for label, field, value, doc in _numeric_variants(make_doc):
        checked = _validated(label, doc)
        if isinstance(checked, str):
            # Refused only as a negative quantity or a second sample in one place, in one
            # line that names the field.
            assert "\n" not in checked, checked
            if field in PLACES and value >= 0:
                assert "a second timed sample" in checked, checked
            else:
                assert field in NON_NEGATIVE and value < 0, checked
                assert f".{field.split('.')[0]}" in checked, checked
                assert "cannot be negative" in checked
            refused += 1
            continue
        assert field not in PLACES and not (field in NON_NEGATIVE and value < 0), \
            f"{label} was not refused"
        _check_rendered(label, checked, formats, store, words=field not in ("params", "plan"))
        rendered += 1
    assert refused > 40 and rendered > 150


@pytest.mark.parametrize("shape", ["one round", "one target", "all values equal", "no samples",
                                   "every float 1e308", "mixed extremes"])
def test_extreme_shapes_render_in_every_format(make_doc: MakeDoc, open_db: OpenDb,
                                               shape: str) -> None:
    doc = dict(_shapes(make_doc))[shape]
    checked = _validated(shape, doc)
    assert not isinstance(checked, str), checked
    _check_rendered(shape, checked, (*FAST, "html"), open_db())


@pytest.mark.parametrize("kind", ["empty", "10 kB", "markup and escapes", "unicode"])
def test_every_string_extreme_renders_in_every_format(
        make_strings_doc: Callable[[Callable[[str], str]], Doc], hostile_shown: str,
        open_db: OpenDb, kind: str) -> None:
    wrap: Callable[[str], str] = {
        "empty": lambda s: "",
        "10 kB": lambda s: s + "x" * 10_000,
        "markup and escapes": lambda s: hostile_shown.replace("L\ufffd", "\x1b[2J\x9b1m\u202e")
                                                   .format(s),
        "unicode": lambda s: f"ü中文🙂e\u0301\u200d{s}\U0010ffff",
    }[kind]
    checked = _validated(kind, make_strings_doc(wrap))
    assert not isinstance(checked, str), checked
    _check_rendered(kind, checked, (*FAST, "html"), open_db())


def test_validation_refuses_what_the_store_or_a_float_cannot_hold(make_doc: MakeDoc) -> None:
    cases: list[tuple[Callable[[Doc], None], str, str]] = [
        (lambda d: d["samples"][0].update(max_rss_kb=2**63), "$.samples[0].max_rss_kb",
         "within ±2**63"),
        (lambda d: d["samples"][0].update(instructions=-(2**63) - 1), "$.samples[0].instructions",
         "within ±2**63"),
        (lambda d: d["samples"][0]["metrics"].update(rate=10**400), "$.samples[0].metrics.rate",
         "expected a finite number"),
        (lambda d: d["samples"][0].update(wall_s=10**309), "$.samples[0].wall_s",
         "expected a finite number"),
        (lambda d: d["samples"][0].update(max_rss_kb=-1), "$.samples[0].max_rss_kb",
         "expected a number >= 0, found -1: it cannot be negative"),
        (lambda d: d["artifacts"][0]["sizes"]["alpha"].update(text=-5),
         "$.artifacts[0].sizes.alpha.text", "expected a number >= 0, found -5"),
        (lambda d: d["host"].update(mem_total_kb=-1), "$.host.mem_total_kb", ">= 0"),
    ]
    for change, where, what in cases:
        doc = make_doc()
        change(doc)
        with pytest.raises(SchemaError) as info:
            validate(doc, "f.json")
        message = str(info.value)
        assert "\n" not in message and message.startswith(f"f.json: {where}: "), message
        assert what in message, message
