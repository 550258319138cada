"""Family: a document read as it streams that means something else than the document read
whole (issue 30: `import` reads 10^6 samples, 511 MiB, one at a time).

The invariant, held in store/exchange.py's `_stream` alone (every reader of an exported file
goes through it): a file read in chunks of any size, however it is indented and whatever the
order of its members, gives exactly the records `json.loads` + `document` give, or the same
one-line refusal naming the same `$.path`. Documents are generated (the valid and the broken
families of test_import_generated.py), the chunk size and the layout too.
"""

from __future__ import annotations

import io
import json
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.store import jsonstream
from abibench.store.exchange import SchemaError, digest, document, load_file
from tests.store.test_import_generated import VALID, broken

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])


# Chunks of a few characters (an item cut anywhere), and chunks that hold many items (read
# by `ObjectStream._many`, a list at a time, up to the last object boundary in the chunk).
CHUNKS = st.one_of(st.integers(1, 300), st.sampled_from([1 << 12, 1 << 20]))


def _text(doc: Any, seed: int) -> str:
    """The document as some writer might lay it out: members in any order, any indent."""
    rng = random.Random(seed)
    if isinstance(doc, dict):
        keys = list(doc)
        rng.shuffle(keys)
        doc = {k: doc[k] for k in keys}
    return json.dumps(doc, indent=rng.choice([None, 0, 1, 3]),
                      ensure_ascii=rng.random() < 0.5)


def _both(doc: Any, seed: int, chunk: int, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """(whole read, streamed read): each a document's JSON form or its refusal."""
    text = _text(doc, seed)
    try:
        whole = json.dumps(document(json.loads(text), "f.json").to_dict(), sort_keys=True)
    except SchemaError as exc:
        whole = f"refused: {exc}"
    monkeypatch.setattr(jsonstream, "_CHUNK", chunk)
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "f.json"
        path.write_text(text, encoding="utf-8")
        try:
            streamed = json.dumps(load_file(path).to_dict(), sort_keys=True)
        except SchemaError as exc:
            streamed = f"refused: {str(exc).replace(str(path), 'f.json')}"
    return whole, streamed


@SETTINGS
@given(doc=VALID, seed=st.integers(0, 1 << 30), chunk=CHUNKS)
def test_a_valid_document_streamed_is_the_document(monkeypatch: pytest.MonkeyPatch,
                                                   doc: dict[str, Any], seed: int,
                                                   chunk: int) -> None:
    whole, streamed = _both(doc, seed, chunk, monkeypatch)
    assert streamed == whole


@settings(SETTINGS, max_examples=80)
@given(case=broken(), seed=st.integers(0, 1 << 30), chunk=CHUNKS)
def test_a_broken_document_streamed_is_refused_at_the_same_place(
        monkeypatch: pytest.MonkeyPatch, case: tuple[str, dict[str, Any], str], seed: int,
        chunk: int) -> None:
    family, doc, at = case
    whole, streamed = _both(doc, seed, chunk, monkeypatch)
    assert whole.startswith("refused: ") and streamed.startswith("refused: "), (family, streamed)
    assert f" {at}: " in streamed, (family, at, streamed)


@settings(SETTINGS, max_examples=60)
@given(doc=VALID, seed=st.integers(0, 1 << 30), cut=st.floats(0.0, 1.0),
       chunk=CHUNKS)
def test_a_cut_or_spoilt_text_is_refused_as_json_loads_refuses_it(
        monkeypatch: pytest.MonkeyPatch, doc: dict[str, Any], seed: int, cut: float,
        chunk: int) -> None:
    """Not JSON (cut anywhere, or a character spoilt): the same message, line and column."""
    text = _text(doc, seed)
    at = int(cut * len(text))
    bad = text[:at] if seed % 2 else text[:at] + "}" + text[at:]
    try:
        json.loads(bad)
        return  # still JSON: the other tests cover what it means
    except json.JSONDecodeError as exc:
        want = f"not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
    monkeypatch.setattr(jsonstream, "_CHUNK", chunk)
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "f.json"
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(SchemaError) as refused:
            load_file(path)
    assert want in str(refused.value) or "not an abibench run document" in str(refused.value)


@SETTINGS
@given(doc=VALID)
def test_the_digest_is_the_same_read_whole_or_streamed(doc: dict[str, Any]) -> None:
    """An import notes the digest of what it read; `digest` of the same document as data
    (a stored run exported) must find it."""
    text = json.dumps(document(json.loads(json.dumps(doc)), "f.json").to_dict())
    parsed = json.loads(text)
    shuffled = dict(reversed(list(parsed.items())))
    assert digest(parsed) == digest(shuffled)


_TRICKY = st.sampled_from(['}, {"', '},{"a": 1}, {"', '"}, {"', "\\", '\\"}, {"', "]", "},\n  {\""])
_ITEM = st.one_of(
    st.dictionaries(st.sampled_from(["a", "b", "c"]), st.one_of(
        st.text(max_size=8), _TRICKY, st.integers(), st.floats(allow_nan=False,
                                                               allow_infinity=False),
        st.lists(st.dictionaries(st.sampled_from(["a", "b"]), _TRICKY, max_size=2),
                 max_size=3)), max_size=3),
    st.integers(), _TRICKY, st.lists(st.integers(), max_size=2))


@settings(SETTINGS, max_examples=60)
@given(items=st.lists(_ITEM, max_size=40), indent=st.sampled_from([None, 0, 2]),
       chunk=CHUNKS)
def test_the_items_of_an_array_are_json_loads_items_a_list_at_a_time(
        monkeypatch: pytest.MonkeyPatch, items: list[Any], indent: int | None,
        chunk: int) -> None:
    """`ObjectStream`'s lists of items (by `_many`, which cuts at text that looks like the
    boundary between two objects, also inside strings and nested arrays) are the items
    `json.loads` reads, in order."""
    text = json.dumps({"head": 1, "samples": items, "tail": [2]}, indent=indent)
    monkeypatch.setattr(jsonstream, "_CHUNK", chunk)
    stream = jsonstream.ObjectStream(io.BytesIO(text.encode()), float, 1 << 20, 1 << 20)
    assert stream.starts_object()
    got: dict[str, Any] = {}
    for key, value in stream.members("samples"):
        got[key] = [x for part in value for x in part] if key == "samples" else value
    assert got == json.loads(text)


def test_a_long_array_of_objects_comes_many_items_at_a_time() -> None:
    """Not vacuous: a run's samples as a file holds them are read by `_many`."""
    items = [{"run_id": "r", "round": i, "wall_s": i / 7, "text": '}, {"x'} for i in range(500)]
    text = json.dumps({"samples": items})
    stream = jsonstream.ObjectStream(io.BytesIO(text.encode()), float, 1 << 20, 1 << 20)
    assert stream.starts_object()
    (_key, lists), = list((k, list(v)) for k, v in stream.members("samples"))
    assert max(map(len, lists)) > 100 and [x for part in lists for x in part] == items
