"""One schema: the records are the only description of the run format.

The JSON form, the import validator, docs/schema.json and the SQL columns are derived from the
record dataclasses (abibench/codec.py); these tests hold every derived copy to the records, and
add a field to Sample the way a developer would (one edit of records.py, nothing else) to see
it stored, migrated, exported and imported on both backends.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.codec import encode
from abibench.records import (
    HostContext,
    Run,
    RunConfig,
    Sample,
    WorkloadMeta,
    export_schema,
)
from abibench.store.exchange import document
from abibench.store.schema import (
    SAMPLE_COLUMNS,
    SQLITE,
    Column,
    loads,
    positional,
    sample_reader,
    sample_row,
    to_json,
)
from abibench.store.sql import SqlStore
from tests.store.test_import_generated import VALID

OpenDb = Callable[..., SqlStore]

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "abibench"


def test_docs_schema_json_is_the_schema_of_the_records() -> None:
    # Regenerate with: .venv/bin/python -m abibench.records > docs/schema.json
    published = json.loads((REPO / "docs" / "schema.json").read_text())
    assert published == export_schema(), \
        "docs/schema.json is stale: run `.venv/bin/python -m abibench.records > docs/schema.json`"


def _declared(store: object, dialect: str) -> dict[str, tuple[str, bool]]:
    """The samples table as the database has it: column -> (type, not null)."""
    if dialect == "sqlite":
        rows = store.db.execute("PRAGMA table_info(samples)").fetchall()  # type: ignore[attr-defined]
        return {r["name"]: (r["type"], bool(r["notnull"])) for r in rows}
    rows = store.execute(  # type: ignore[attr-defined]
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE "
        "table_schema = current_schema() AND table_name = 'samples'").fetchall()
    names = {"text": "TEXT", "bigint": "BIGINT", "double precision": "DOUBLE PRECISION"}
    return {r["column_name"]: (names[r["data_type"]], r["is_nullable"] == "NO") for r in rows}


def test_the_columns_derived_from_sample_are_the_columns_the_migrations_made(
        open_db: OpenDb) -> None:
    store = open_db()
    declared = _declared(store, store.dialect.name)
    derived = {c.name: (store.dialect.render(c.type), c.not_null) for c in SAMPLE_COLUMNS}
    # Every field a column of the type and nullability the migrations gave it; the table has
    # nothing else but its own row numbers.
    assert {k: declared[k] for k in derived} == derived
    assert set(declared) - set(derived) == {"id", "seq"}


def test_a_column_added_for_a_new_field_carries_the_fields_default() -> None:
    by_name = {c.name: c for c in SAMPLE_COLUMNS}
    assert by_name["kind"].definition(SQLITE) == "kind TEXT NOT NULL DEFAULT 'timed'"
    assert by_name["emulated"].definition(SQLITE) == "emulated INTEGER NOT NULL DEFAULT 0"
    assert by_name["counters_json"].definition(SQLITE) == "counters_json TEXT"
    assert by_name["check_value"].field == "check"
    required = Column("x", "x", "TEXT", True, None, str, str)
    try:
        required.definition(SQLITE)
    except TypeError as exc:
        assert "needs one" in str(exc)
    else:
        raise AssertionError("a NOT NULL column without a default was accepted")


# What a developer adds: two fields of Sample, one nullable and one with a default. Nothing
# else in the package is edited.
NEW_FIELDS = ('    energy_j: float | None = field(default=None, metadata=_QUANTITY)\n'
              '    power_state: str = "mains"\n')
ANCHOR = "    throttled: int | None = field(default=None, metadata=_QUANTITY)\n"

# Runs with the extended package: opens the database written before the fields existed (which
# gains their columns), stores a sample with them, exports, validates, imports and exports
# again; a value against the field's rule is refused at its path.
SCRIPT = textwrap.dedent('''
    import json, os, sys
    from dataclasses import replace
    from pathlib import Path

    import abibench
    from abibench.records import export_schema
    from abibench.store.exchange import SchemaError, document, import_doc, load_file
    from abibench.store.open import open_store

    assert abibench.__file__.startswith(os.environ["COPY"]), abibench.__file__
    store = open_store(os.environ["DB"])
    old = store.load_run("before")
    assert [(s.energy_j, s.power_state) for s in old.samples] == [(None, "mains")]
    store.add_sample(replace(old.samples[0], round=2, energy_j=12.5, power_state="battery"))
    stored = store.load_run("before")
    assert [(s.energy_j, s.power_state) for s in stored.samples] == \\
        [(None, "mains"), (12.5, "battery")]
    path = Path(os.environ["OUT"]) / "run.json"
    exported = stored.to_dict()
    path.write_text(json.dumps(exported))
    typed = load_file(path)
    assert typed.samples == stored.samples
    imported = import_doc(store, typed, str(path))
    again = store.load_run(imported.run_id).to_dict()
    strip = lambda doc: [dict(s, run_id="") for s in doc["samples"]]
    assert strip(again) == strip(exported)
    assert again["samples"][1]["energy_j"] == 12.5
    properties = export_schema()["$defs"]["Sample"]["properties"]
    assert properties["energy_j"]["anyOf"][0] == {"type": "number", "minimum": 0}
    exported["samples"][1]["energy_j"] = -1.0
    try:
        document(exported, "bad.json")
    except SchemaError as exc:
        assert "$.samples[1].energy_j: expected a number >= 0" in str(exc), exc
    else:
        raise AssertionError("a negative energy was imported")
    exported["samples"][1]["energy_j"] = None
    del exported["samples"][1]["power_state"]  # an older file: the field's default
    assert document(exported, "old.json").samples[1].power_state == "mains"
    print("ok")
''')


def test_a_field_added_to_sample_is_stored_migrated_exported_and_imported(
        open_db: OpenDb, db_ref: str, tmp_path: Path) -> None:
    # A database written before the fields existed, with one sample.
    store = open_db()
    meta = WorkloadMeta("w", "wall", ("i386",), {})
    store.create_run(Run("before", "2026-01-01T00:00:00+00:00", "2026-01-01T00:10:00+00:00",
                         "complete", "0", RunConfig({"w": meta})), HostContext(), owned=False)
    store.add_sample(Sample(run_id="before", workload="w", target="i386", round=1, position=0,
                            warmup=False, status="ok", exit_code=0, wall_s=1.0, user_s=0.5,
                            sys_s=0.1, max_rss_kb=100, stdout_digest="d", check=None,
                            started_at="2026-01-01T00:01:00+00:00"))
    store.close()

    copy = tmp_path / "pkg"
    shutil.copytree(PACKAGE, copy / "abibench",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.o"))
    records = copy / "abibench" / "records.py"
    text = records.read_text()
    assert text.count(ANCHOR) == 1
    records.write_text(text.replace(ANCHOR, ANCHOR + NEW_FIELDS))

    env = {**os.environ, "PYTHONPATH": str(copy), "COPY": str(copy), "DB": db_ref,
           "OUT": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=VALID)
def test_a_sample_made_by_its_slots_is_the_sample_its_constructor_makes(
        doc: dict[str, Any]) -> None:
    """Family: a fast path that builds records another way (issue 30). The store's reader
    builds each Sample by its slots (schema.positional); generated documents' samples built
    both ways are equal, field by field, and as frozen."""
    make = positional(Sample)
    for s in document(doc, "generated.json").samples:
        values = [getattr(s, f.name) for f in dataclasses.fields(Sample)]
        made = make(values)
        assert made == Sample(*values) == s
        assert [getattr(made, f.name) for f in dataclasses.fields(Sample)] == values
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.round = 1


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=VALID, drop=st.sets(st.sampled_from([c.name for c in SAMPLE_COLUMNS
                                                 if c.default is not None or not c.not_null])))
def test_the_generated_reader_reads_a_row_as_the_constructor_makes_it(
        doc: dict[str, Any], drop: set[str]) -> None:
    """Family: a fast path that builds records another way (issue 30). The store's reader is
    code generated from the columns; a generated sample's row, with any set of the columns a
    database may predate left out, reads as the Sample its fields (those columns at their
    defaults) make through the constructor, and equal texts are one object."""
    names = [c.name for c in SAMPLE_COLUMNS if c.name not in drop]
    read = sample_reader(names)
    seen: dict[str, str] = {}
    for s in document(doc, "generated.json").samples:
        row = dict(zip([c.name for c in SAMPLE_COLUMNS], sample_row(s, 0)[:1] + sample_row(s, 0)[2:],
                       strict=True))
        made = read(tuple(row[n] for n in names))
        values = {c.field: (c.from_sql(c.default) if c.name in drop else getattr(s, c.field))
                  for c in SAMPLE_COLUMNS}
        assert made == Sample(**values)
        for c in SAMPLE_COLUMNS:
            v = getattr(made, c.field)
            if isinstance(v, str) and c.plain:
                assert seen.setdefault(v, v) is v


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text()
                     | st.floats(allow_nan=False),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(value=_JSON, before=st.sampled_from(["", " ", "\n"]),
       after=st.sampled_from(["", " ", "x", "}", "\t"]), cut=st.integers(0, 3))
def test_stored_json_decodes_as_json_loads_does(value: Any, before: str, after: str,
                                                cut: int) -> None:
    """Family: a fast path that decodes another way (issue 30). `schema.loads` takes the C
    scanner directly; on generated texts (json.dumps of generated values, with space or junk
    around them, or cut short) it returns what json.loads returns or raises what it raises."""
    dumped = json.dumps(value)
    text = before + (dumped[:-cut] if cut and len(dumped) > cut else dumped) + after
    try:
        expected: Any = ("ok", json.loads(text))
    except json.JSONDecodeError as exc:
        expected = ("error", str(exc))
    try:
        got: Any = ("ok", loads(text))
    except json.JSONDecodeError as exc:
        got = ("error", str(exc))
    assert got == expected


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=5), st.none() | st.booleans() | st.integers()
                       | st.text() | st.floats(), max_size=4) | _JSON)
def test_a_json_column_is_written_as_json_dumps_of_its_encoding(value: Any) -> None:
    """Family: a fast path that writes a stored JSON column another way (a metrics mapping by
    the C encoder made once): the text json.dumps(encode(value)) gives, NaN and infinities
    and non-ASCII keys included."""
    assert to_json(value) == (None if value is None else json.dumps(encode(value)))
