"""The import's fast paths against their definitions (tests/store/test_import_rows.py and
test_import_stream.py), for minutes instead of seconds.

    .venv/bin/python bench/import_paths.py --minutes 5

Generates documents (mutated synthetic runs, valid and broken ones) and arrays with text that
looks like an item boundary, until the time is up: the batch path, the sample path and the
record path must store the same rows and digest or refuse alike; `Batches` must give the sample
path's rows and texts or nothing; the stream's lists of items must be `json.loads`'s items.
Prints how many examples each property ran and the first failure of each.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.store import test_import_rows as rows
from tests.store import test_import_stream as stream
from tests.store.test_import_generated import broken

ROUND = settings(max_examples=50, deadline=None, database=None,
                 suppress_health_check=list(HealthCheck))


def _properties() -> dict[str, Callable[[], None]]:
    def paths(doc: Any, indent: Any) -> None:
        fast, records = rows._both(doc, indent)
        assert fast == records

    def batch(doc: Any) -> None:
        rows.test_a_batch_is_the_sample_path_or_no_answer.hypothesis.inner_test(doc)  # type: ignore[attr-defined]

    def items(items: Any, indent: Any, chunk: int) -> None:
        with pytest.MonkeyPatch.context() as mp:
            stream.test_the_items_of_an_array_are_json_loads_items_a_list_at_a_time \
                .hypothesis.inner_test(mp, items, indent, chunk)  # type: ignore[attr-defined]

    return {
        "three paths, mutated": ROUND(given(rows.mutated(), st.sampled_from([None, 0, 2]))(paths)),
        "three paths, broken": ROUND(given(broken().map(lambda c: c[1]),
                                           st.just(None))(paths)),
        "batch vs samples": ROUND(given(rows.mutated())(batch)),
        "stream lists": ROUND(given(st.lists(stream._ITEM, max_size=60),
                                    st.sampled_from([None, 0, 2]), stream.CHUNKS)(items)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--minutes", type=float, default=1.0)
    args = ap.parse_args(argv)
    end = time.monotonic() + 60 * args.minutes
    runs: Counter[str] = Counter()
    failed: dict[str, str] = {}
    props = _properties()
    while time.monotonic() < end:
        for name, prop in props.items():
            if name in failed:
                continue
            try:
                prop()
            except Exception as exc:  # a property's falsifying example: shown, then skipped
                failed[name] = f"{type(exc).__name__}: {str(exc)[:2000]}"
            runs[name] += 50
    for name in props:
        print(f"{name}: {runs[name]} examples, {'FAILED ' + failed[name] if name in failed else 'held'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
