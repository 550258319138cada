"""A report's sample rows written fast: the JSON report's lines and the samples CSV's rows.

A report of 10^6 samples read every sample as a record (about 16 s) and wrote each row by
reading the record's fields and formatting them one row at a time. Here the rows are written a
batch at a time from the samples' fields as *columns* (one tuple of values per field of
`Sample`): a stored run's straight from its rows (store/rowstream.field_columns, through
walked.Columnar: no record is made), any other samples' from their records. Each column is
encoded in one pass in C (`map` of the encoder's own function for the column's type: texts by
`encode_basestring_ascii`, whole numbers and finite floats by their repr, which is what the
C encoder writes, the metrics by the report's own encoder), and the lines are one `%` format
of a template holding the keys, over the columns zipped. A CSV column is passed as it is when
the csv module writes it as `csvout.cell` would (whole numbers, None, finite floats, texts that
cannot start a formula), else through `cell`.

Anything the columns were not made for goes to the general way, the row made as a record,
cleaned and written by `jsonout._fast_line` / `csvout._fast_cells`: a row holding a value of
another type (a nested record such as counters) or a metric name that cleaning changes, that
row; a float that is not finite (no stored run holds one: store/finite.py), the batch. Rows are
written uncleaned, then each batch's text is searched once (`text.json_needs_clean`,
`text.needs_clean`): a batch holding anything `text.clean` would change is written again the
general way, so the output is the cleaned rows' by construction. tests/report/test_sample_lines.py
and tests/report/test_report_rows.py hold the two ways equal on generated rows and stored runs,
dirty ones included.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

from ..analyse.report import SampleRow
from ..codec import spec
from ..jsontext import encoder
from ..records import Sample
from ..store.rowstream import FIELD_NAMES, Columns, make_sample
from ..text import clean, clean_all, json_needs_clean
from ..walked import Columnar

# One result set's rows: its tag, run id, host, kernel bits, target -> series label, samples.
Group = tuple[str, str, str | None, int | None, Mapping[str, str], Sequence[Sample]]

_KEYS = tuple(f.key for f in spec(Sample))
_VALUES = operator.attrgetter(*FIELD_NAMES)
assert tuple(f.name for f in spec(Sample)) == FIELD_NAMES
TARGET = FIELD_NAMES.index("target")
METRICS = FIELD_NAMES.index("metrics")
_NONE = type(None)
_DICT = encoder(allow_nan=False, default=str)  # jsonout._LINE's settings: the same text
BATCH = 2000

# A value's JSON text, by its exact type, as the C encoder writes it inside a line.
_ENCODE: dict[type, Callable[[Any], str]] = {
    str: encode_basestring_ascii, int: int.__repr__, float: float.__repr__,
    _NONE: {None: "null"}.__getitem__, bool: {True: "true", False: "false"}.__getitem__,
    dict: _DICT}
_PLAIN = frozenset({str, int, float, bool, _NONE})
_FLOAT_OR_NONE = frozenset({float, _NONE})
_FLOATS = frozenset({float})
_isfinite = math.isfinite


def columns_of(samples: Sequence[Sample], size: int = BATCH) -> Iterator[Columns]:
    """The samples in order, `size` at a time, as field columns: a stored run's from its rows
    (walked.Columnar), any other's from the records."""
    if isinstance(samples, Columnar):
        got = samples.field_columns(size)
        if got is not None:
            return got
    return _record_columns(samples, size)


def _record_columns(samples: Iterable[Sample], size: int) -> Iterator[Columns]:
    it = iter(samples)
    while chunk := list(itertools.islice(it, size)):
        yield list(zip(*map(_VALUES, chunk), strict=True))


def metric_names(groups: Sequence[Group]) -> list[str]:
    """CleanRows.metric_names of the groups' rows: every metric any sample holds, cleaned,
    sorted; a stored run's from its columns already read, without its records."""
    names: set[str] = set()
    for *_, samples in groups:
        got = samples.metric_names() if isinstance(samples, Columnar) else None
        if got is None:
            for s in samples:
                names.update(s.metrics)
        else:
            names |= got
    return sorted({clean(m) for m in names})


def cleaned_row(group: Group, s: Sample) -> SampleRow:
    """The row the report's own reader gives for `s` (CleanRows): made, then cleaned."""
    tag, run_id, host, bits, labels, _ = group
    return clean_all(SampleRow(tag, run_id, host, bits, labels.get(s.target, s.target), s))


def row_values(cols: Columns, i: int) -> tuple[Any, ...]:
    return tuple(c[i] for c in cols)


def _all_finite(col: Sequence[Any], kinds: set[type]) -> bool:
    if kinds <= _FLOAT_OR_NONE:
        return all(map(_isfinite, filter(None, col)))  # None and 0.0 dropped: both finite
    return all(_isfinite(v) for v in col if type(v) is float)


def _odd_dicts(col: Sequence[Any]) -> list[int]:
    """The rows whose mapping holds a value the line's encoder may write otherwise than the
    record's encoder (codec.encode of a nested value)."""
    values = itertools.chain.from_iterable(map(dict.values, col))
    if _PLAIN.issuperset(map(type, values)):
        return []
    return [i for i, d in enumerate(col) if not _PLAIN.issuperset(map(type, d.values()))]


# A value's place in a line: its text, the same in every row of the batch (written into the
# template), or one text a row (a `%s` of the template).
Slot = str | Iterator[str]
_CONSTANT = frozenset({str, int, bool, _NONE})  # equal values of one of these: equal texts


def _json_column(col: Sequence[Any], odd: set[int]) -> Slot | None:
    """A column's JSON texts, or its one text when every row's is the same; `odd` gets the rows
    of a value not encoded here; None: a float that is not finite (the batch the general
    way)."""
    kinds = set(map(type, col))
    if len(kinds) == 1 and kinds <= _CONSTANT and len(set(col)) == 1:
        return _ENCODE[type(col[0])](col[0])  # (not floats: -0.0 == 0.0, written otherwise)
    if float in kinds and not _all_finite(col, kinds):
        return None
    if dict in kinds:
        odd.update(_odd_dicts(col if len(kinds) == 1 else
                              [v if type(v) is dict else {} for v in col]))
    if not kinds <= _ENCODE.keys():
        odd.update(i for i, v in enumerate(col) if type(v) not in _ENCODE)
        return map(_placeholder, col)
    if len(kinds) == 1:
        return map(_ENCODE[kinds.pop()], col)
    return map(operator.call, map(_ENCODE.__getitem__, map(type, col)), col)


def _placeholder(v: Any) -> str:
    """A value of a type the columns do not encode: its row is written the general way."""
    return _ENCODE.get(type(v), _nothing)(v)


def _nothing(_: Any) -> str:
    return ""


# The keys of a line: the row's own four values after the first key (the sample's run id, as
# SampleRow.to_dict places it), then the sample's.
assert _KEYS[0] == "run_id"
_LINE_KEYS = ("set", "run_id", "host", "kernel_bits", "series", *_KEYS[1:])
_AT = {"set": -1, "host": -2, "kernel_bits": -3, "series": -4,
       **{k: i for i, k in enumerate(_KEYS)}}  # where a key's slot is (negative: the row's)


def _key(k: str) -> str:
    return encode_basestring_ascii(k) + ": "


def _metric_values(col: Sequence[Any]) -> tuple[str, list[Iterator[str]]] | None:
    """When every mapping of the column has the same text keys in the same order and finite
    floats (a run's metrics): the template of the mapping (a `%s` a value) and its values'
    texts (one iterator once a key: zip takes a row's values from it in turn); else None."""
    shapes = set(map(tuple, col))
    if len(shapes) != 1:
        return None
    (keys,) = shapes
    if not all(type(k) is str for k in keys):
        return None
    values = list(itertools.chain.from_iterable(map(dict.values, col)))
    if not (_FLOATS.issuperset(map(type, values)) and all(map(_isfinite, values))):
        return None
    text = "{" + ", ".join(_key(k).replace("%", "%%") + "%s" for k in keys) + "}"
    return text, [map(float.__repr__, values)] * len(keys)


def _own_json(tag: Any, host: Any, bits: Any) -> tuple[str, str, str] | None:
    """The row's own values as the line writes them, or None (a type the columns do not
    take: the group goes the general way)."""
    if type(tag) is not str or (host is not None and type(host) is not str):
        return None
    if bits is not None and type(bits) is not int:
        return None
    return (encode_basestring_ascii(tag), "null" if host is None else
            encode_basestring_ascii(host), "null" if bits is None else str(bits))


def _series(labels: Mapping[str, str], targets: Sequence[Any],
            write: Callable[[Any], Any]) -> dict[Any, Any] | None:
    """Each target's series label as `write` gives it; None: a label that is not text."""
    out = {}
    for t in set(targets):
        label = labels.get(t, t)
        if type(label) is not str:
            return None
        out[t] = write(label)
    return out


def _json_lines(group: Group, cols: Columns,
                general: Callable[[SampleRow], str]) -> list[str] | None:
    """The batch's lines, uncleaned, odd rows the general way; None: the batch the general
    way. A template holds the keys and every text that is the same in each row; the rest are
    its `%s`, filled from the columns zipped."""
    tag, _, host, bits, labels, _ = group
    own = _own_json(tag, host, bits)
    series = _series(labels, cols[TARGET], encode_basestring_ascii)
    if own is None or series is None:
        return None
    targets = set(cols[TARGET])
    mine: dict[int, Slot] = {-1: own[0], -2: own[1], -3: own[2], -4: (
        series[next(iter(targets))] if len(targets) == 1 else
        map(series.__getitem__, cols[TARGET]))}
    odd: set[int] = set()
    parts: list[str] = []
    args: list[Iterator[str]] = []
    for key in _LINE_KEYS:
        at = _AT[key]
        fast = _metric_values(cols[at]) if at == METRICS and cols[at] else None
        if fast is not None:
            parts.append(_key(key).replace("%", "%%") + fast[0])
            args += fast[1]
            continue
        slot = mine[at] if at < 0 else _json_column(cols[at], odd)
        if slot is None:
            return None
        if isinstance(slot, str):
            parts.append((_key(key) + slot).replace("%", "%%"))
        else:
            parts.append(_key(key).replace("%", "%%") + "%s")
            args.append(slot)
    template = "{" + ", ".join(parts) + "}"
    try:
        lines = (list(map(template.__mod__, zip(*args, strict=False))) if args
                 else [template % ()] * len(cols[0]))
    except ValueError:  # a metric that is not finite: the batch the general way
        return None
    for i in odd:
        lines[i] = general(cleaned_row(group, make_sample(row_values(cols, i))))
    return lines


def json_batches(groups: Sequence[Group], general: Callable[[SampleRow], str]) -> Iterator[str]:
    """Each batch of sample lines ("  " before each, ",\\n" between), as the cleaned rows'
    lines by `general` (jsonout._fast_line) joined the same way would read."""
    for group in groups:
        for cols in columns_of(group[5], BATCH):
            lines = _json_lines(group, cols, general)
            out = "" if lines is None else "  " + ",\n  ".join(lines)
            if lines is None or json_needs_clean(out):  # the batch the general way
                rows = (cleaned_row(group, make_sample(v)) for v in zip(*cols, strict=True))
                out = "  " + ",\n  ".join(map(general, rows))
            yield out
