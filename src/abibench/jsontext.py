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
from collections.abc import Callable
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
