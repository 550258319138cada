"""The import's digest: the canonical JSON made by the C encoder directly is `_CANON.encode`.

The family: a faster encoding of the canonical form that writes other text for some value (a
key order, a float's digits, a non-ASCII or escaped character, a number beyond 64 bits, a
nested list, a value JSON has no form for): the digest of an unchanged document would change,
and a document already stored would be imported twice. Generated: JSON values of every kind.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.store.exchange import _CANON, _CANONICAL, _Digest, digest

SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=1 << 63)
           | st.floats() | st.sampled_from([math.inf, -0.0, 1e16, 5e-324]) | st.text())
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=6), VALUES, max_size=6))
def test_the_canonical_text_is_the_encoders(value: dict[str, Any]) -> None:
    assert _CANONICAL(value) == _CANON.encode(value)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=3), SCALARS, max_size=3), min_size=1,
                max_size=4), st.integers(0, 2500))
def test_the_digest_hashed_in_batches_is_the_digest_of_each_sample(some: list[Any],
                                                                   n: int) -> None:
    samples = [some[i % len(some)] for i in range(n)]  # across the batches' ends
    one = hashlib.sha256()
    for s in samples:
        one.update(_CANON.encode(s).encode() + b"\n")
    whole = hashlib.sha256(_CANON.encode({"a": 1}).encode())
    whole.update(b"\n" + one.hexdigest().encode())
    parts = _Digest()
    for s in samples:
        parts.add(s)
    assert parts.of({"a": 1}) == whole.hexdigest() == digest({"a": 1, "samples": samples})
