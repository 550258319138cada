"""jsontext.encoder is the text of `json.JSONEncoder(...).encode` with the same settings.

The family: an encoder made faster that writes other text for some value or setting (a float's
digits, a key order, a non-ASCII or escaped character, a number beyond 64 bits, NaN allowed or
refused, a value JSON has no form for): a digest that changes, a report line that differs.
Generated: JSON values of every kind, with and without values JSON has no form for, under each
combination of the settings abibench uses.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.jsontext import canonical, encoder

SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=1 << 63)
           | st.floats() | st.sampled_from([math.inf, -0.0, 1e16, 5e-324, math.nan]) | st.text()
           | st.just(b"x") | st.just(complex(1, 2)))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.tuples(inner, inner)
                      | st.dictionaries(st.text(max_size=4) | st.integers(0, 3), inner,
                                        max_size=4), max_leaves=12)
SETTINGS = st.fixed_dictionaries({
    "sort_keys": st.booleans(), "separators": st.sampled_from([(", ", ": "), (",", ":")]),
    "ensure_ascii": st.booleans(), "allow_nan": st.booleans(),
    "default": st.sampled_from([None, str])})


def _outcome(encode: Any, value: Any) -> Any:
    try:
        return encode(value)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)


@settings(max_examples=300, deadline=None)
@given(SETTINGS, st.dictionaries(st.text(max_size=6), VALUES, max_size=6) | VALUES)
def test_the_encoder_writes_what_json_writes(how: dict[str, Any], value: Any) -> None:
    assert _outcome(encoder(**how), value) == _outcome(json.JSONEncoder(**how).encode, value)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=4) | st.sampled_from(["%", "%s", "b", "a"]),
                                VALUES, max_size=6), min_size=1, max_size=4))
def test_the_canonical_encoder_writes_what_the_sorted_encoder_writes(docs: list[Any]) -> None:
    """Family: a digest's text made another way (a key order, a float's digits, a NaN, a
    nested value, a `%` in a key). Several dicts through one encoder: later ones of the same
    shape go through the plan the first made."""
    fast = canonical()
    slow = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                            default=str).encode
    for doc in [*docs, *docs]:
        assert _outcome(fast, doc) == _outcome(slow, doc)
