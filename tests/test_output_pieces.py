"""A file written from pieces (`outputs.write_output` given an iterable of text) is the text the
pieces join to, or, when making a piece fails half-way, the old file as it was.

The family: a streamed output (`export -o` of 10^6 samples, never joined in memory) that leaves
a file cut where the pieces stopped, a temporary file behind, or other bytes than the joined
text. Generated: pieces of any text (non-ASCII too), failing at any place or not at all.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.outputs import write_output


class Broken(Exception):
    pass


def _pieces(texts: list[str], fail_at: int | None) -> Iterator[str]:
    for i, text in enumerate(texts):
        if i == fail_at:
            raise Broken
        yield text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=20), max_size=8), st.none() | st.integers(0, 8))
def test_pieces_are_written_whole_or_not_at_all(texts: list[str], fail_at: int | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        out.write_text("old", encoding="utf-8")
        fails = fail_at is not None and fail_at < len(texts)
        if fails:
            with pytest.raises(Broken):
                write_output(out, _pieces(texts, fail_at), "-o")
            assert out.read_text(encoding="utf-8") == "old"
        else:
            write_output(out, _pieces(texts, fail_at), "-o")
            assert out.read_bytes() == "".join(texts).encode("utf-8")
        assert sorted(p.name for p in Path(tmp).iterdir()) == ["out.json"]
