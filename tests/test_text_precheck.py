"""The writers' one-search pre-checks (`text.needs_clean`, `text.json_needs_clean`) agree with
the sanitiser: when one says "nothing to clean", `clean` gives every string back unchanged.

The family: a fast check that lets through a string the sanitiser would have changed (an escape
sequence, a C0/C1 control, a CR, a bidi override, an invisible character, a line separator),
hidden by how the writer encodes it (JSON's `\\uXXXX` and `\\r`, a CSV cell's quotes) or by its
neighbours. Generated: strings from an alphabet of every character class `clean` treats apart,
plain ASCII, other Unicode and lone surrogates, alone, as JSON keys and values, and as CSV cells.
"""

from __future__ import annotations

import csv
import io
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.text import _TOUCHED, clean, json_needs_clean, needs_clean

# Every kind of character clean treats apart, and their neighbours that it must leave alone.
SPECIAL = ("\x1b", "\x1b[2J", "\x1b]0;t\x07", "\x9b", "\x9c", "\x85", "\x00", "\x07", "\x08",
           "\x0c", "\x7f", "\r", "\r\n", "\n", "\t", "\u2028", "\u2029", "\u202a", "\u202e",
           "\u2066", "\u2069", "\u200e", "\u200f", "\u061c", "\u200b", "\u00ad", "\u2060",
           "\u2064", "\u206a", "\u206f", "\u180e", "\ufeff", "\U000e0001", "\U000e007f",
           "\u200c", "\u200d", "\ufffd", "\ud800", "\udfff", "\\", "\\u", "\\r", "\\b", "\\f",
           "\\\\u001b", '"', ",", "=", "é", "中", "\U0001f600", "%s", "%")
STRINGS = st.lists(st.sampled_from(SPECIAL) | st.text(max_size=3), max_size=8).map("".join) \
    | st.text()


@settings(max_examples=150, deadline=None)
@given(STRINGS)
def test_nothing_to_clean_means_clean_changes_nothing(s: str) -> None:
    if not needs_clean(s):
        assert clean(s) == s
    if not json_needs_clean(json.dumps(s)):
        assert clean(s) == s


@settings(max_examples=150, deadline=None)
@given(STRINGS | st.text(st.characters(max_codepoint=127)))
def test_the_ascii_shortcut_answers_as_the_search(s: str) -> None:
    """needs_clean's pass over ASCII text is its one search's answer (text._TOUCHED)."""
    assert needs_clean(s) == (_TOUCHED.search(s) is not None)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(STRINGS, st.lists(STRINGS | st.floats() | st.none(), max_size=3),
                       max_size=4))
def test_a_json_text_without_escapes_holds_no_string_to_clean(doc: dict[str, list[object]]) \
        -> None:
    text = json.dumps(doc)  # ensure_ascii, as every writer that is checked this way
    if not json_needs_clean(text):
        for key, values in doc.items():
            assert clean(key) == key
            for v in values:
                assert not isinstance(v, str) or clean(v) == v


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(STRINGS, max_size=4), max_size=4))
def test_a_csv_text_without_anything_to_clean_holds_no_cell_to_clean(rows: list[list[str]]) \
        -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    if not needs_clean(buf.getvalue()):
        assert all(clean(c) == c for row in rows for c in row)


def test_the_checks_are_not_blind() -> None:
    """Each character class the sanitiser changes is seen, alone and in JSON."""
    for s in SPECIAL:
        if clean(s) != s:
            assert needs_clean(s), repr(s)
            assert json_needs_clean(json.dumps(s)), repr(s)
