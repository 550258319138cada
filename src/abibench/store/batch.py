"""An import's samples a batch at a time (the items one scan of the stream gives, about 2,000):
checked, made into rows and into the digest's canonical texts column by column, with no
Python code run per sample (issue 30: 10^6 samples in 30 s).

A batch whose samples all have the same keys is transposed into one tuple per key (a C call);
each column is then checked once by its field's rule (`min`/`max` over the column, `isfinite`
mapped over it, an identifier or a timestamp checked once per distinct value) and by the
checker's rules on columns (`runcheck.SampleChecker.quick_columns`); a row is a `zip` of the
converted columns, and a sample's canonical text one `%` of a template holding its sorted keys.

It answers only "these are the rows and texts the sample path gives" or "not sure" (None):
anything it was not written for (a key set that varies, a type a field does not take as it
is, a nested record, a default made afresh, any value that fails a check) sends the whole batch
to the sample path (store/exchange.py's `_checked`: store/shapes.py's plan, then the record),
which stores it or refuses with the `$.path` it always did. tests/store/test_import_rows.py
holds the rows and the digest equal to the record path's on generated documents.
"""

from __future__ import annotations

import dataclasses
import json.encoder
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import MISSING
from itertools import chain, repeat
from typing import Any, cast

from ..codec import INT_MAX, INT_MIN, Field, Invalid, check_label, check_time, optional_of, spec
from ..jsontext import encoder
from ..records import Sample
from ..runcheck import SampleChecker
from .schema import SAMPLE_COLUMNS, fields_row, sample_row, to_json

_NONE = type(None)
_isfinite = math.isfinite
_FIELDS = spec(Sample)
_DATA = {d.name: d for d in dataclasses.fields(Sample)}
_STR = json.encoder.encode_basestring  # the canonical encoder's (ensure_ascii=False)
_ASCII = json.encoder.encode_basestring_ascii  # a stored JSON column's (json.dumps)
_BOOL = {True: "true", False: "false"}
_METRICS = dict[str, float]
Column = Sequence[Any]


@dataclasses.dataclass(frozen=True)
class Rows:
    """A batch checked: its rows (given where its numbering starts) and canonical texts."""

    n: int
    columns: tuple[Column, ...]  # the samples table's columns after run_id and seq
    texts: list[str]  # each sample's canonical JSON, in order

    def nulls(self) -> frozenset[int]:
        """The columns (indexes into `columns`) that are null in every row."""
        return frozenset(i for i, col in enumerate(self.columns)
                         if col[0] is None and list(col).count(None) == self.n)

    def rows(self, first: int, run_id: str, keep: Sequence[int] | None = None
             ) -> Iterator[tuple[Any, ...]]:
        """The rows, each (run_id, seq, the columns...); `keep`: only these columns."""
        columns = self.columns if keep is None else tuple(self.columns[i] for i in keep)
        return zip(repeat(run_id, self.n), range(first, first + self.n), *columns,
                   strict=True)


@dataclasses.dataclass(frozen=True)
class Fields:
    """A batch checked, as its records' fields: one column per Sample field (by name), each
    value as the record holds it (a field the samples leave out: its default, repeated)."""

    n: int
    columns: dict[str, Column]
    texts: list[str] | None  # each sample's canonical JSON, when a digest is wanted


def _kept(row: tuple[Any, ...], keep: Sequence[int] | None) -> tuple[Any, ...]:
    return row if keep is None else (*row[:2], *(row[2 + i] for i in keep))


@dataclasses.dataclass(frozen=True)
class Single:
    """One sample's fields (in the record's order), as one row: the sample path's."""

    values: tuple[Any, ...]
    n = 1

    def nulls(self) -> frozenset[int]:
        return frozenset()

    def rows(self, first: int, run_id: str, keep: Sequence[int] | None = None
             ) -> Iterator[tuple[Any, ...]]:
        return iter((_kept(fields_row(self.values, first, run_id), keep),))


@dataclasses.dataclass(frozen=True)
class Record:
    """One sample record, as one row (`schema.sample_row`)."""

    sample: Sample
    n = 1

    def nulls(self) -> frozenset[int]:
        return frozenset()

    def rows(self, first: int, run_id: str, keep: Sequence[int] | None = None
             ) -> Iterator[tuple[Any, ...]]:
        return iter((_kept(sample_row(self.sample, first, run_id), keep),))


def _values(col: Column, typ: type, optional: bool) -> Column | None:
    """The column's values but its nulls, when every value is of JSON type `typ` (or null
    where the field is optional); None otherwise."""
    kinds = set(map(type, col))
    if _NONE in kinds:
        if not optional:
            return None
        kinds.discard(_NONE)
        if not kinds:
            return ()
        col = [v for v in col if v is not None]
    return col if kinds <= {typ} else None


def _scalar_ok(f: Field, col: Column) -> bool:
    """shapes._step's rules for a scalar field, on a whole column (each distinct value of a
    text checked once: a rule is a function of the value)."""
    r = f.rule
    optional, inner = optional_of(f.type)
    got = _values(col, inner, optional and not r.null_default)
    if got is None:
        return False
    if inner is str:
        if r.min is not None or r.keys is not None:
            return False
        distinct = set(got)
        if r.choices and not distinct <= set(r.choices):
            return False
        try:
            for v in distinct:
                if r.id is not None:
                    check_label(r.id, v)
                if r.time and not (r.blank and v == ""):
                    check_time(v)
        except Invalid:
            return False
        return True
    if r.choices or r.id is not None or r.time:
        return False
    if inner is bool:
        return r.min is None
    if not got:
        return True
    if inner is int:
        least = INT_MIN if r.min is None else r.min
        return bool(min(got) >= least and max(got) <= INT_MAX)
    if inner is float:
        return all(map(_isfinite, got)) and (r.min is None or min(got) >= r.min)
    return False


class _Metrics:
    """A column of metric mappings (str -> finite float) with the same keys in every sample:
    their stored JSON text and their canonical text, each float's repr made once for both."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.stored = "{" + ", ".join(_ASCII(k).replace("%", "%%") + ": %s"
                                      for k in keys) + "}"
        order = sorted(range(len(keys)), key=keys.__getitem__)
        self.order = order
        self.canonical = "{" + ",".join(_STR(keys[i]).replace("%", "%%") + ":%s"
                                        for i in order) + "}"

    def texts(self, col: Column) -> tuple[list[str], list[str]] | None:
        per_key = list(zip(*map(dict.values, col), strict=True))
        if not per_key:  # {} in every sample
            return ["{}"] * len(col), ["{}"] * len(col)
        if not _floats(list(chain.from_iterable(per_key))):
            return None
        reprs = [list(map(float.__repr__, values)) for values in per_key]
        stored = list(map(self.stored.__mod__, zip(*reprs, strict=True)))
        canonical = list(map(self.canonical.__mod__, zip(*(reprs[i] for i in self.order),
                                                               strict=True)))
        return stored, canonical


def _floats(values: list[Any]) -> bool:
    """Every value is a finite float (shapes._metrics_check's rule on a metric's value)."""
    return set(map(type, values)) <= {float} and all(map(_isfinite, values))


def _metric_shapes(f: Field, col: Column) -> set[tuple[str, ...]] | None:
    """The metrics column's key sets when every value is a mapping whose names are
    identifiers of the field's kind (shapes._metrics_check); None when not sure."""
    if set(map(type, col)) != {dict}:
        return None
    shapes = set(map(tuple, col))
    try:
        if f.rule.keys is not None:
            for k in set(chain.from_iterable(shapes)):
                check_label(f.rule.keys, k)
    except Invalid:
        return None
    return shapes


def _metrics_ok(f: Field, col: Column) -> bool:
    """`_metrics`'s checks without its texts (a reader that keeps the mappings)."""
    return _metric_shapes(f, col) is not None and \
        _floats(list(chain.from_iterable(map(dict.values, col))))


def _metrics(f: Field, col: Column) -> tuple[list[str], list[str]] | None:
    """A metrics column checked (shapes._metrics_check: names are identifiers of the field's
    kind, values finite floats) and its two texts; None when not sure. Samples whose names
    differ (workloads with other metrics) get each text by its own encoder, per sample."""
    shapes = _metric_shapes(f, col)
    if shapes is None:
        return None
    if len(shapes) == 1:
        (keys,) = shapes
        return _Metrics(keys).texts(col)
    if not _floats(list(chain.from_iterable(map(dict.values, col)))):
        return None
    return cast(list[str], list(map(to_json, col))), list(map(_NESTED, col))  # dicts: text


# the canonical text of a nested value: what jsontext.canonical writes inside a sample
_NESTED = encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _canonical(col: Column) -> list[str] | None:
    """Each value of a scalar column as the canonical encoder writes it. A text or a whole
    number that repeats is written once (equal texts, and equal ints, are written alike;
    not floats: 0.0 == -0.0)."""
    kinds = set(map(type, col))
    if kinds == {_NONE}:
        return ["null"] * len(col)
    if kinds <= {str, _NONE}:
        write: Callable[[Any], str] = _STR
    elif kinds <= {int, _NONE}:
        write = int.__repr__
    elif kinds <= {float, _NONE}:  # finite: checked by the field's rule
        write = float.__repr__
    elif kinds <= {bool, _NONE}:
        write = _BOOL.__getitem__
    else:
        return None
    if write is not float.__repr__:
        distinct = set(col)
        if 4 * len(distinct) <= len(col):
            table = {v: "null" if v is None else write(v) for v in distinct}
            return list(map(table.__getitem__, col))
    if _NONE in kinds:
        return [write(v) if v is not None else "null" for v in col]
    return list(map(write, col))


@dataclasses.dataclass(frozen=True)
class _Layout:
    """Where each field of a Sample is in a batch's keys (-1: absent, its default)."""

    keys: tuple[str, ...]
    where: tuple[int, ...]
    defaults: tuple[Any, ...]
    template: str  # the canonical text of a sample with these keys: `%s` per value, sorted
    order: tuple[int, ...]  # the keys' indexes in sorted order


def _layout(keys: tuple[str, ...]) -> _Layout | None:
    """shapes._plan's placing of the fields for these keys; None where it makes no plan."""
    if len(set(keys)) != len(keys) or not all(type(k) is str for k in keys):
        return None
    if any(f.rule.key or f.rule.extra or f.rule.present for f in _FIELDS):
        return None
    index = {k: i for i, k in enumerate(keys)}  # a key no field has: in the text only
    where, defaults = [], []
    for f in _FIELDS:
        i = index.get(f.key, -1)
        default: Any = None
        if i < 0:
            if f.default is MISSING or f.rule.required:
                return None
            dc = _DATA[f.name]
            if f.rule.has_absent:
                default = f.rule.absent
            elif dc.default_factory is not MISSING:
                return None  # a fresh object for each record
            else:
                default = None if dc.default is MISSING else dc.default
        where.append(i)
        defaults.append(default)
    order = tuple(sorted(range(len(keys)), key=keys.__getitem__))
    template = "{" + ",".join(_STR(keys[i]).replace("%", "%%") + ":%s" for i in order) + "}"
    return _Layout(keys, tuple(where), tuple(defaults), template, order)


_CONVERT = {c.field: c for c in SAMPLE_COLUMNS if c.name != "run_id"}
_FLAGS = frozenset(f.name for f in _FIELDS if optional_of(f.type)[1] is bool)
_ROW_FIELDS = tuple(c.field for c in SAMPLE_COLUMNS if c.name != "run_id")


def _stored(field: str, col: Column, metrics_text: list[str] | None) -> Column:
    """A field's column as the samples table stores it (Column.to_sql of each value)."""
    column = _CONVERT[field]
    if column.plain or (col[0] is None and list(col).count(None) == len(col)
                        and column.to_sql(None) is None):
        return col
    if metrics_text is not None:
        return metrics_text
    if field in _FLAGS and None not in col:
        return list(map(int, col))
    return list(map(column.to_sql, col))


class Batches:
    """The batch fast path: `self(items, checker)` is a `Rows` or None (not sure)."""

    def __init__(self, max_shapes: int = 64) -> None:
        self._layouts: dict[tuple[str, ...], _Layout | None] = {}
        self._max = max_shapes

    def _layout_of(self, items: list[Any]) -> _Layout | None:
        if not items or set(map(type, items)) != {dict}:
            return None
        shapes = set(map(tuple, items))
        if len(shapes) != 1:
            return None
        (keys,) = shapes
        if keys not in self._layouts:
            if len(self._layouts) >= self._max:
                return None
            self._layouts[keys] = _layout(keys)
        return self._layouts[keys]

    def __call__(self, items: list[Any], check: SampleChecker) -> Rows | None:
        """The import's: the batch as the samples table's rows and its canonical texts."""
        got = self._checked(items, check, True)
        if got is None:
            return None
        by_field, metrics, texts = got
        assert texts is not None
        columns = tuple(_stored(name, by_field[name], metrics[0] if metrics is not None
                                and name == "metrics" else None) for name in _ROW_FIELDS)
        return Rows(len(items), columns, texts)

    def fields(self, items: list[Any], check: SampleChecker, texts: bool) -> Fields | None:
        """A reader's that keeps the records' fields (store/filecolumns.py): the batch as one
        column per field, the values as the record holds them; the canonical texts only when
        `texts` (a digest is wanted)."""
        got = self._checked(items, check, texts)
        if got is None:
            return None
        return Fields(len(items), got[0], got[2])

    def _checked(self, items: list[Any], check: SampleChecker, texts: bool
                 ) -> tuple[dict[str, Column], tuple[list[str], list[str]] | None,
                            list[str] | None] | None:
        """Every check of the batch, by columns: each field's column (by name, a default's
        repeated), the metrics' two texts and the samples' canonical texts (when `texts`);
        None when not sure. The checker's rules last: they take the samples' places."""
        layout = self._layout_of(items)
        if layout is None:
            return None
        n = len(items)
        given: list[Column] = list(zip(*map(dict.values, items), strict=True))
        by_field: dict[str, Column] = {}
        metrics: tuple[list[str], list[str]] | None = None
        for f, i, default in zip(_FIELDS, layout.where, layout.defaults, strict=True):
            if i < 0:
                by_field[f.name] = (default,) * n
                continue
            col = given[i]
            if optional_of(f.type)[1] == _METRICS:
                if texts:
                    metrics = _metrics(f, col)
                    if metrics is None:
                        return None
                elif not _metrics_ok(f, col):
                    return None
            elif not _scalar_ok(f, col):
                return None
            by_field[f.name] = col
        canonical = _texts(layout, given, metrics, n) if texts else None
        if (texts and canonical is None) or not check.quick_columns(by_field, n):
            return None
        return by_field, metrics, canonical


def _texts(layout: _Layout, given: list[Column], metrics: tuple[list[str], list[str]] | None,
           n: int) -> list[str] | None:
    """Each sample's canonical text (the digest's part), or None when a value is not one
    `_canonical` writes."""
    canon: list[list[str]] = []
    for i in layout.order:
        if layout.keys[i] == _METRICS_KEY and metrics is not None:
            canon.append(metrics[1])
            continue
        text = _canonical(given[i])
        if text is None:
            return None
        canon.append(text)
    return list(map(layout.template.__mod__, zip(*canon, strict=True))) if canon else ["{}"] * n


_METRICS_KEY = next(f.key for f in _FIELDS if f.name == "metrics")
