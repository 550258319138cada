"""A report's sample rows written fast: the JSON report's lines and the samples CSV's rows.

A report of 10^6 samples wrote each row by making a `SampleRow`, cleaning it (`text.clean_all`,
about 10 us), building a dictionary of 43 keys and handing it to the C encoder (12 us for the
840 characters, most of it the encoder's small pieces): about 27 us a sample for the JSON and
34 us for the CSV. Here a row's values are read from the `Sample` in one call, and a plan made
once per *type signature* (each value's exact type) writes them:

* a JSON line by one `%` format of a template that holds the keys and the nulls, each text
  encoded by the encoder's own `encode_basestring_ascii`, each number by `%d` / `%r` (what the
  encoder writes for an int and a finite float), the metrics by the report's own encoder;
* a CSV row as the cells `csvout._fast_cells` gives, through `csvout.cell` only where it
  changes something (`csvout.csv_batches`, with this module's groups and batches).

Anything a plan was not made for (a nested record such as counters, a value that is not finite,
a type other than text, int, float, bool, None and the metrics' dict) goes to the general way,
the row cleaned and written by `jsonout._fast_line` / `csvout._fast_cells`. Rows are written
uncleaned, then each batch's text is searched once (`text.json_needs_clean`,
`text.needs_clean`): a batch that holds anything `text.clean` would change is written again the
general way, so the output is the cleaned rows' by construction. tests/report/test_sample_lines.py
holds the two ways equal on generated rows, dirty ones included.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

from ..analyse.report import SampleRow
from ..codec import spec
from ..jsontext import encoder, take
from ..records import Sample
from ..text import clean_all, json_needs_clean

# One result set's rows: its tag, run id, host, kernel bits, target -> series label, samples.
Group = tuple[str, str, str | None, int | None, Mapping[str, str], Sequence[Sample]]

_NAMES = tuple(f.name for f in spec(Sample))
_KEYS = tuple(f.key for f in spec(Sample))
_VALUES = operator.attrgetter(*_NAMES)
_NONE = type(None)
_BOOL = {True: "true", False: "false"}
_DICT = encoder(allow_nan=False, default=str)  # jsonout._LINE's settings: the same text
_MAX_PLANS = 64
BATCH = 2000




LinePlan = Callable[[tuple[Any, ...], tuple[Any, ...]], str]


def _line_plan(types: tuple[type, ...]) -> LinePlan | None:
    """The line of a sample whose values have these types, from the row's own four values
    (encoded: set, host, kernel bits, series) and the sample's; None: the general way."""
    assert _KEYS[0] == "run_id"  # the line's second key: the sample's run id (SampleRow.to_dict)
    strs: list[int] = []
    bools: list[int] = []
    dicts: list[int] = []
    floats: list[int] = []
    spec_of: list[tuple[str, str | int]] = []  # (the template's text, where its value is)
    for i, t in enumerate(types):
        if t is _NONE:
            spec_of.append(("null", -1))
        elif t is str:
            strs.append(i)
            spec_of.append(("%s", ("s", len(strs) - 1)))  # type: ignore[arg-type]
        elif t is bool:
            bools.append(i)
            spec_of.append(("%s", ("b", len(bools) - 1)))  # type: ignore[arg-type]
        elif t is int:
            spec_of.append(("%d", i))
        elif t is float:
            floats.append(i)
            spec_of.append(("%r", i))
        elif t is dict:
            dicts.append(i)
            spec_of.append(("%s", ("d", len(dicts) - 1)))  # type: ignore[arg-type]
        else:
            return None
    # the arguments: the row's 4, the sample's values, then the encoded texts, bools, dicts
    width = len(types)
    base = {"s": 4 + width, "b": 4 + width + len(strs), "d": 4 + width + len(strs) + len(bools)}

    def place(where: Any) -> int:
        return 4 + where if isinstance(where, int) else base[where[0]] + where[1]
    parts = ['{"set": %s, "run_id": ' + spec_of[0][0].replace("%", "%", 1)]
    order = [0, place(spec_of[0][1])] if spec_of[0][1] != -1 else [0]
    parts[0] += ', "host": %s, "kernel_bits": %s, "series": %s'
    order += [1, 2, 3]
    for key, (text, where) in zip(_KEYS[1:], spec_of[1:], strict=True):
        parts.append(f", {encode_basestring_ascii(key).replace('%', '%%')}: {text}")
        if where != -1:
            order.append(place(where))
    template = "".join(parts) + "}"
    args = take(order)
    get_s, get_b, get_d, get_f = take(strs), take(bools), take(dicts), take(floats)
    isfinite = math.isfinite

    def line(own: tuple[Any, ...], values: tuple[Any, ...]) -> str:
        if not all(map(isfinite, get_f(values))):
            raise ValueError("not finite")  # the general way writes null
        return template % args((*own, *values, *map(encode_basestring_ascii, get_s(values)),
                                *map(_BOOL.__getitem__, get_b(values)),
                                *map(_DICT, get_d(values))))
    return line


def _own(tag: str, host: str | None, bits: int | None, series: str) -> tuple[str, ...] | None:
    """The row's own values as the line writes them, or None (a type the plan does not take)."""
    if type(tag) is not str or type(series) is not str or (host is not None and type(host)
                                                             is not str):
        return None
    if bits is not None and type(bits) is not int:
        return None
    return (encode_basestring_ascii(tag), "null" if host is None else
            encode_basestring_ascii(host), "null" if bits is None else str(bits),
            encode_basestring_ascii(series))


def _planned(plan: LinePlan | None, own: tuple[str, ...] | None,
             values: tuple[Any, ...]) -> str | None:
    """The plan's line, or None: no plan, or a value that is not finite (the general way)."""
    if plan is None or own is None:
        return None
    try:
        return plan(own, values)
    except ValueError:
        return None


def cleaned_row(group: Group, s: Sample) -> SampleRow:
    """The row the report's own reader gives for `s` (CleanRows): made, then cleaned."""
    tag, run_id, host, bits, labels, _ = group
    return clean_all(SampleRow(tag, run_id, host, bits, labels.get(s.target, s.target), s))


def json_batches(groups: Sequence[Group], general: Callable[[SampleRow], str]) -> Iterator[str]:
    """Each batch of sample lines ("  " before each, ",\\n" between), as the cleaned rows'
    lines by `general` (jsonout._fast_line) joined the same way would read."""
    plans: dict[tuple[type, ...], LinePlan | None] = {}
    for group in groups:
        tag, _, host, bits, labels, samples = group
        owns: dict[str, tuple[str, ...] | None] = {}
        for start in range(0, len(samples), BATCH):
            batch = samples[start:start + BATCH]
            lines = []
            for s in batch:
                values = _VALUES(s)
                kinds = tuple(map(type, values))
                plan = plans.get(kinds, _UNSEEN)
                if plan is _UNSEEN:
                    plan = plans[kinds] = _line_plan(kinds) if len(plans) < _MAX_PLANS else None
                own = owns.get(s.target, _UNSEEN)
                if own is _UNSEEN:
                    own = owns[s.target] = _own(tag, host, bits, labels.get(s.target, s.target))
                text = _planned(plan, own, values)
                lines.append(text if text is not None else general(cleaned_row(group, s)))
            out = "  " + ",\n  ".join(lines)
            if json_needs_clean(out):  # something to clean: the batch the general way
                out = "  " + ",\n  ".join(general(cleaned_row(group, s)) for s in batch)
            yield out


_UNSEEN: Any = object()

