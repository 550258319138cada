"""`json.JSONEncoder(...).encode` for a million small objects: the C encoder made once.

`JSONEncoder.encode` makes its C encoder anew at every call (its Python wrappers are about a
microsecond, as much as encoding a sample's line). `encoder(...)` makes it once with the same
settings and falls back to `JSONEncoder.encode` for anything but a dict, and when the
interpreter has no C accelerator. No cycle check: what is encoded this way is parsed JSON or
records' data, which hold no cycle. tests/test_jsontext.py holds each encoder made here equal to
its `JSONEncoder` on generated values.
"""

from __future__ import annotations

import json
import json.encoder
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any


def encoder(*, sort_keys: bool = False, separators: tuple[str, str] = (", ", ": "),
            ensure_ascii: bool = True, allow_nan: bool = True,
            default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """The text `json.JSONEncoder(**settings).encode` gives, faster for a dict."""
    general = json.JSONEncoder(sort_keys=sort_keys, separators=separators,
                               ensure_ascii=ensure_ascii, allow_nan=allow_nan,
                               default=default).encode
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return general
    strings = json.encoder.encode_basestring_ascii if ensure_ascii \
        else json.encoder.encode_basestring
    if default is None:
        def default(value: Any) -> Any:  # JSONEncoder.default's refusal, word for word
            raise TypeError(f"Object of type {value.__class__.__name__} is not JSON "
                            "serializable")
    item_separator, key_separator = separators
    fast = make(None, default, strings, None, key_separator, item_separator, sort_keys, False,
                allow_nan)

    def encode(value: Any) -> str:
        if type(value) is dict:
            return "".join(fast(value, 0))
        return general(value)
    return encode


_BOOL = {True: "true", False: "false"}


def take(indexes: Sequence[int]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """`values -> tuple(values[i] for i in indexes)` in C: `itemgetter`, which returns a bare
    value for one index and cannot take none, made to return a tuple always (the plans here, in
    report/samplerows.py and in store/shapes.py pick a row's values by kind with it)."""
    if not indexes:
        return lambda values: ()
    if len(indexes) == 1:
        i = indexes[0]
        return lambda values: (values[i],)
    return operator.itemgetter(*indexes)


def _canonical_plan(keys: tuple[Any, ...], types: tuple[type, ...],
                    general: Callable[[Any], str]) -> Callable[[tuple[Any, ...]], str] | None:
    """The canonical text of a dict with these keys in this order and values of these types:
    one `%` format of a template holding the sorted keys; None when a key is not text."""
    if not all(type(k) is str for k in keys):
        return None
    kinds: dict[str, list[int]] = {"s": [], "b": [], "o": [], "f": []}
    for i, t in enumerate(types):
        if t is str:
            kinds["s"].append(i)
        elif t is bool:
            kinds["b"].append(i)
        elif t is float:
            kinds["f"].append(i)
        elif t is not int and t is not type(None):
            kinds["o"].append(i)  # a nested value: the general encoder's text for it alone
    n = len(types)
    # nested values encoded in the sorted keys' order, as the encoder does (a nested dict
    # with keys it cannot sort fails at the first such one, with that one's message)
    kinds["o"].sort(key=keys.__getitem__)
    where: dict[int, tuple[str, int]] = {i: ("%d", i) for i, t in enumerate(types) if t is int}
    where.update({i: ("%r", i) for i in kinds["f"]})
    after = n
    for kind in ("s", "b", "o"):
        where.update({i: ("%s", after + j) for j, i in enumerate(kinds[kind])})
        after += len(kinds[kind])
    order = sorted(range(n), key=keys.__getitem__)  # sort_keys: keys are unique, text
    template = "{" + ",".join(
        json.encoder.encode_basestring(keys[i]).replace("%", "%%") + ":"
        + (where[i][0] if i in where else "null") for i in order) + "}"
    args = take([where[i][1] for i in order if i in where])
    get_s, get_b, get_o, get_f = (take(kinds[k]) for k in ("s", "b", "o", "f"))
    strings = json.encoder.encode_basestring
    isfinite = math.isfinite

    def text(values: tuple[Any, ...]) -> str:
        if not all(map(isfinite, get_f(values))):
            return general(dict(zip(keys, values, strict=True)))  # NaN: the encoder's word
        return template % args((*values, *map(strings, get_s(values)),
                                *map(_BOOL.__getitem__, get_b(values)),
                                *map(general, get_o(values))))
    return text


def canonical(default: Callable[[Any], Any] | None = str) -> Callable[[Any], str]:
    """`encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=default)`,
    the canonical text a digest is made of, faster for the dicts a file repeats (an import
    digests each of its 10^6 samples): a template made once per shape (the keys in their order
    and each value's type) holds the sorted keys, and each value goes in as that encoder
    writes it (a text by its own `encode_basestring`, an int by `%d`, a finite float by `%r`,
    anything else by the encoder itself). tests/test_jsontext.py holds the two equal."""
    general = encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=default)
    plans: dict[tuple[tuple[Any, ...], tuple[type, ...]],
                Callable[[tuple[Any, ...]], str] | None] = {}

    def encode(value: Any) -> str:
        if type(value) is not dict:
            return general(value)
        values = tuple(value.values())
        shape = (tuple(value), tuple(map(type, values)))
        plan = plans.get(shape, _UNSEEN)
        if plan is _UNSEEN:
            plan = None
            if len(plans) < _MAX_SHAPES:
                plan = plans[shape] = _canonical_plan(*shape, general)
        return general(value) if plan is None else plan(values)
    return encode


_UNSEEN: Any = object()
_MAX_SHAPES = 64
