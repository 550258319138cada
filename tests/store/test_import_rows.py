"""Family: an import's fast path (a sample's row made from the shape plan's values, checked by
`SampleChecker.quick`, without a `Sample` record) that stores or refuses anything else than the
record path (issue 30: the import of 10^6 samples).

The invariant, held in store/exchange.py's `_checked` alone: `import_file` (fields, fast where
the plan and `quick` are sure) stores exactly the rows and the digest that the record path
(`load_file` then `import_doc`, every sample made and checked as a record) stores, or is
refused with the same one line. Documents are generated: the valid and broken families of
test_import_generated.py, synthetic runs whose samples are mutated at random by every rule
the checker holds (a second sample at a place, a primary metric missing, a built-in metric's
name, an unknown workload or target, discarded, warm-up, failed, other kinds, a built-in
primary), and the same with every string made hostile (tests/documents.py's HOSTILE).
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.records import Sample
from abibench.store import exchange
from abibench.store.exchange import SchemaError, import_doc, import_file, load_file
from abibench.store.open import open_store
from abibench.store.schema import SAMPLE_FIELDS, fields_row, sample_row
from abibench.store.shapes import ShapeDecoder
from tests.documents import HOSTILE, rewrite_strings, synthetic_doc
from tests.store.test_import_generated import VALID, broken

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

Doc = dict[str, Any]


def _mutate(sample: dict[str, Any], how: str, doc: Doc, other: dict[str, Any]) -> None:
    """One rule of runcheck's, broken or bent, on one sample (in place)."""
    wid = next(iter(doc["run"]["config"]["workloads"]))
    if how == "same place":
        for k in ("workload", "target", "round", "position"):
            sample[k] = other[k]
    elif how == "no primary":
        sample["metrics"] = {k: v for k, v in sample["metrics"].items() if k != "rate"}
    elif how == "built-in name":
        sample["metrics"] = {**sample["metrics"], "wall": 1.0}
    elif how == "unknown workload":
        sample["workload"] = "nosuch"
    elif how == "unknown target":
        sample["target"] = "arm"
    elif how == "discarded":
        sample["discarded"] = "measured again"
    elif how == "warm-up":
        sample["warmup"] = True
    elif how == "failed":
        sample["status"] = "failed"
    elif how in ("counters", "baseline"):
        sample["kind"] = how
    elif how == "built-in primary":
        doc["run"]["config"]["workloads"][wid]["primary"] = "max_rss"
        sample["max_rss_kb"] = None  # refused: a quantity, not an optional one
    elif how == "wall primary":
        doc["run"]["config"]["workloads"][wid]["primary"] = "wall"
    elif how == "no metrics":
        del sample["metrics"]
    elif how == "whole number":
        sample["wall_s"] = 1


_HOW = ("same place", "no primary", "built-in name", "unknown workload", "unknown target",
        "discarded", "warm-up", "failed", "counters", "baseline", "built-in primary",
        "wall primary", "no metrics", "whole number")


@st.composite
def mutated(draw: st.DrawFn) -> Doc:
    doc = synthetic_doc(rounds=draw(st.integers(1, 3)))
    samples = doc["samples"]
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(samples) - 1))
        j = draw(st.integers(0, len(samples) - 1))
        _mutate(samples[i], draw(st.sampled_from(_HOW)), doc, dict(samples[j]))
    if draw(st.booleans()):
        doc = rewrite_strings(doc, lambda s: s + HOSTILE)
    return doc


def _stored(store: Any, run_id: str) -> tuple[list[tuple[Any, ...]], str]:
    rows = store.rows("samples", run_id)
    return rows, store.run_config(run_id)["imported"]["digest"]


def _import(path: Path, where: str, name: str) -> Any:
    store = open_store(str(Path(where) / f"{name}.sqlite"))
    try:
        if name == "doc":  # the whole document as records (its digest is of their dict form)
            return store.rows("samples", import_doc(store, load_file(path), str(path)).run_id)
        if name == "records":  # every sample made and checked as a record
            with mock.patch.object(exchange._SAMPLE, "fields", lambda v: None):
                return _stored(store, import_file(store, path)[0].run_id)
        return _stored(store, import_file(store, path)[0].run_id)
    except SchemaError as exc:
        return f"refused: {exc}"
    finally:
        store.close()


def _both(doc: Doc) -> tuple[Any, Any]:
    """(the fast path's, the record path's): the stored rows and digest, or the refusal; and
    the rows the whole document's records store (`import_doc`), the same."""
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "f.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        fast, records, whole = (_import(path, where, n) for n in ("fast", "records", "doc"))
    assert (whole if isinstance(whole, str) else (whole, records[1])) == records
    return fast, records


@SETTINGS
@given(doc=mutated())
def test_a_mutated_run_imports_as_the_record_path_imports_it(doc: Doc) -> None:
    fast, records = _both(doc)
    assert fast == records


@SETTINGS
@given(doc=VALID)
def test_a_generated_document_imports_as_the_record_path_imports_it(doc: Doc) -> None:
    fast, records = _both(doc)
    assert fast == records


@settings(SETTINGS, max_examples=15)
@given(case=broken())
def test_a_broken_document_is_refused_as_the_record_path_refuses_it(
        case: tuple[str, Doc, str]) -> None:
    fast, records = _both(case[1])
    assert fast == records and str(fast).startswith("refused: ")


@SETTINGS
@given(doc=mutated())
def test_the_planned_fields_are_the_records_fields(doc: Doc) -> None:
    """`ShapeDecoder.fields` and `fields_row` are the record's fields and `sample_row`."""
    decode = ShapeDecoder(Sample)
    for x in copy.deepcopy(doc["samples"]):
        values = decode.fields(x)
        if values is None:
            continue
        record = decode(x)
        assert values == SAMPLE_FIELDS(record)
        assert fields_row(values, 7, "r") == sample_row(record, 7, "r")
