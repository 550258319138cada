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

from abibench.codec import Invalid
from abibench.records import Sample
from abibench.runcheck import sample_checker
from abibench.store import exchange
from abibench.store.batch import Batches
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
        sample["metrics"] = {k: v for k, v in sample.get("metrics", {}).items() if k != "rate"}
    elif how == "built-in name":
        sample["metrics"] = {**sample.get("metrics", {}), "wall": 1.0}
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
        sample.pop("metrics", None)
    elif how == "whole number":
        sample["wall_s"] = 1
    else:
        _bend(sample, how)


def _bend(sample: dict[str, Any], how: str) -> None:
    """A value of a type or a key set the batch path (store/batch.py) must take as the sample
    path does, or leave to it: an optional field given, a key missing, added or moved, a
    value at or past a field's bound."""
    if how == "error text":
        sample["error"] = "exit 1"
    elif how == "instructions":
        sample["instructions"] = 123456789
    elif how == "unknown key":
        sample["later_field"] = [1, "x"] if sample["round"] % 2 else "kept in the digest"
    elif how == "no started_at":
        sample.pop("started_at", None)
    elif how == "key order":
        for key in list(sample)[::2]:
            sample[key] = sample.pop(key)
    elif how == "metric int":
        sample["metrics"] = {**sample.get("metrics", {}), "time": 2}
    elif how == "metric order":
        sample["metrics"] = dict(reversed(list(sample.get("metrics", {}).items())))
    elif how == "emulated":
        sample["emulated"] = True
    elif how == "bad time":
        sample["started_at"] = "1999-01-01T00:00:00+00:00"
    elif how == "negative":
        sample["user_s"] = -0.5
    elif how == "repeat 0":
        sample["repeat"] = 0
    elif how == "huge":
        sample["max_rss_kb"] = 1 << 63
    elif how == "infinite":
        sample["metrics"] = {**sample.get("metrics", {}), "rate": 1e999}
    elif how == "bad design":
        sample["design"] = "interleaved"
    elif how == "negative zero":
        sample["sys_s"] = -0.0 if sample["round"] % 2 else 0.0
        sample["metrics"] = {**sample.get("metrics", {}), "time": -0.0}
    elif how == "other metrics":  # another key set in some samples, valid
        sample["metrics"] = {**sample.get("metrics", {}), "extra": 1.5} if sample["round"] % 2 \
            else sample.get("metrics", {})
    elif how == "null check":
        sample["check"] = None
    elif how == "optional floats":
        sample.update(cpu=1, foreign_cpu_s=0.25, steal_s=0.0, covariate=1e9, clock_mhz=1800.5,
                      temp_c=-3.5, tree_peak_rss_kb=4096, tree_memory="cgroup-v2",
                      minflt=10, majflt=0, design="simultaneous")


_HOW = ("same place", "no primary", "built-in name", "unknown workload", "unknown target",
        "discarded", "warm-up", "failed", "counters", "baseline", "built-in primary",
        "wall primary", "no metrics", "whole number", "error text", "instructions",
        "unknown key", "no started_at", "key order", "metric int", "metric order", "emulated",
        "bad time", "negative", "repeat 0", "huge", "infinite", "null check", "optional floats",
        "negative zero", "other metrics", "bad design")


@st.composite
def mutated(draw: st.DrawFn) -> Doc:
    doc = synthetic_doc(rounds=draw(st.integers(1, 3)))
    samples = doc["samples"]
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(samples) - 1))
        j = draw(st.integers(0, len(samples) - 1))
        _mutate(samples[i], draw(st.sampled_from(_HOW)), doc, dict(samples[j]))
    if draw(st.booleans()):  # every sample the same way: one key set, the batch path's
        how = draw(st.sampled_from(_HOW[12:]))
        for sample in samples:
            _mutate(sample, how, doc, sample)
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
            with mock.patch.object(exchange._SAMPLE, "fields", lambda v: None), \
                    mock.patch.object(exchange, "_BATCHES", None):
                return _stored(store, import_file(store, path)[0].run_id)
        if name == "samples":  # one sample at a time: the shape plan, else the record
            with mock.patch.object(exchange, "_BATCHES", None):
                return _stored(store, import_file(store, path)[0].run_id)
        return _stored(store, import_file(store, path)[0].run_id)
    except SchemaError as exc:
        return f"refused: {exc}"
    finally:
        store.close()


def _both(doc: Doc, indent: int | None = None) -> tuple[Any, Any]:
    """(the fast path's, the record path's): the stored rows and digest, or the refusal; and
    the rows the whole document's records store (`import_doc`) and the sample path's (no
    batches), the same."""
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "f.json"
        path.write_text(json.dumps(doc, indent=indent), encoding="utf-8")
        fast, samples, records, whole = (_import(path, where, n)
                                         for n in ("fast", "samples", "records", "doc"))
    assert (whole if isinstance(whole, str) else (whole, records[1])) == records
    assert samples == records
    return fast, records


@SETTINGS
@given(doc=mutated(), indent=st.sampled_from([None, 0, 2]))
def test_a_mutated_run_imports_as_the_record_path_imports_it(doc: Doc,
                                                             indent: int | None) -> None:
    fast, records = _both(doc, indent)
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


def _sample_path(doc: Doc, items: list[Any]) -> tuple[list[tuple[Any, ...]], list[str]] | None:
    """The rows and canonical texts the sample path gives a list of samples, or None when
    it refuses one (its refusal is the record path's: the tests above)."""
    head = exchange.document({**doc, "samples": []}, "f.json")
    check = sample_checker(head)
    rows, texts = [], []
    for i, x in enumerate(items):
        values = exchange._SAMPLE.fields(x)
        if values is None or not check.quick(values):
            try:
                record = exchange._SAMPLE(x)
                check(i, record)
            except Invalid:
                return None
            values = SAMPLE_FIELDS(record)
        rows.append(fields_row(values, 5 + i, "r"))
        texts.append(exchange._CANONICAL(x))
    return rows, texts


@SETTINGS
@given(doc=mutated())
def test_a_batch_is_the_sample_path_or_no_answer(doc: Doc) -> None:
    """store/batch.py on a document's samples as one list: the sample path's rows and texts,
    its checker's places taken; or None, and no place taken."""
    items = json.loads(json.dumps(doc["samples"]))
    head = exchange.document({**doc, "samples": []}, "f.json")
    check = sample_checker(head)
    got = Batches()(items, check)
    want = _sample_path(doc, items)
    if got is None:
        assert not check._places
        return
    assert want is not None
    assert (list(got.rows(5, "r")), got.texts) == want
    again = sample_checker(head)  # each sample's plan and `quick` pass it too
    # A decoder of this example's own: the module's one holds at most 64 shapes' plans, and
    # after the examples before this one (the key-order mutations make new shapes) it answers
    # None for a new shape, which is right for it and says nothing of this document.
    plans = ShapeDecoder(Sample)
    for values in map(plans.fields, items):
        assert values is not None and again.quick(values)
    assert check._places == again._places


@SETTINGS
@given(rounds=st.integers(1, 4), hostile=st.booleans(),
       bend=st.sampled_from(["", "other metrics", "error text", "null check", "key order",
                             "optional floats", "negative zero", "unknown key"]))
def test_a_run_as_abibench_writes_it_takes_the_batch_path(rounds: int, hostile: bool,
                                                          bend: str) -> None:
    """Not vacuous: the samples of a run as abibench writes them are answered by the batch
    path (the equality above is then about them), also with metrics that differ between
    samples, optional fields given in some, and keys in another order in every one."""
    doc = synthetic_doc(rounds=rounds)
    for sample in doc["samples"] if bend else ():
        if bend in ("key order", "optional floats", "unknown key") or sample["round"] % 2:
            _bend(sample, bend)
        if bend == "unknown key":
            sample["later_field"] = "text"
    if hostile:
        doc = rewrite_strings(doc, lambda s: s + HOSTILE)
    items = json.loads(json.dumps(doc["samples"]))
    got = Batches()(items, sample_checker(exchange.document({**doc, "samples": []},
                                                                      "f.json")))
    assert got is not None and got.n == len(items)
    assert (list(got.rows(5, "r")), got.texts) == _sample_path(doc, items)
