"""A stored sample streamed from its row (store/rowstream.py) is its record's `to_dict()`.

The family: an export written without building records that says something else than the
records would (a boolean left as 0/1, a mapping's numbers not converted as the reader converts
them, a nested record not encoded, a column the database predates not at its default, fields
out of order). Generated: samples as a run writes them, derived from `Sample`'s fields, stored
and streamed back; and the same in both backends for a run with a counted sample.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.codec import decoder
from abibench.records import RunDoc, Sample
from abibench.store.exchange import export_chunks, import_doc
from abibench.store.rowstream import export_dicts
from abibench.store.sqlite import Store
from tests.conftest import OpenDb
from tests.documents import synthetic_doc
from tests.store.test_import_generated import record_of

SAMPLES = st.lists(record_of(Sample).map(decoder(Sample, strict=True)), min_size=1, max_size=4)
_IDS = itertools.count()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SAMPLES)
def test_every_stored_sample_streams_as_its_records_dict(samples: list[Sample]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "r.sqlite")
        try:
            doc = synthetic_doc(run_id=f"20260101-000000-r{next(_IDS)}", rounds=0)
            run_id = import_doc(store, RunDoc.from_dict(doc), "x.json").run_id
            store.add_samples(run_id, samples)
            want = [s.to_dict() for s in store.iter_samples(run_id)]
            got = list(export_dicts(store, run_id))
            assert got == want
            assert [list(d) for d in got] == [list(d) for d in want]  # the same key order
            # and the same JSON text: a boolean stays a boolean, a float a float
            assert json.dumps(got) == json.dumps(want)
        finally:
            store.close()


def test_an_export_is_the_documents_json_in_both_backends(
        open_db: OpenDb, make_doc: Callable[..., dict[str, Any]]) -> None:
    store = open_db()
    run_id = import_doc(store, RunDoc.from_dict(make_doc(rounds=2)), "x.json").run_id
    text = "".join(export_chunks(store, run_id))
    assert json.loads(text)["samples"] == [s.to_dict() for s in store.iter_samples(run_id)]
