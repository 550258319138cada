"""A run's samples streamed from their rows straight to their export form, never as records.

`abibench export` of 10^6 samples went rows -> `Sample` records -> `to_dict` -> JSON: a record
built and taken apart again for each sample. Here each row becomes the export document's
dictionary directly: its columns in the order of `Sample`'s fields, each value converted by
the same functions the store's reader and the record's encoder use (`Column.from_sql`, then
`codec.encode` for the values that are not plain numbers or text), so the dictionary is
`sample.to_dict()` of the record the reader would have made. tests/store/test_rowstream.py
holds the two equal on generated samples, in both backends' tests.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..codec import encode, optional_of, spec
from ..records import Sample
from .finite import REAL_FIELDS, check_export, check_sample, finite, metrics_finite
from .schema import SAMPLE_COLUMNS, Column, positional
from .sql import SqlStore


def _shaper(names: list[str]) -> Callable[[tuple[Any, ...]], dict[str, Any]]:
    """The export dictionary of a row holding the sample columns `names` (those this database
    has, in the order of SAMPLE_COLUMNS); a column the database predates is its default."""
    keys = [f.key for f in spec(Sample)]
    assert [c.field for c in SAMPLE_COLUMNS] == [f.name for f in spec(Sample)]
    columns = [c.name for c in SAMPLE_COLUMNS]
    place = [columns.index(n) for n in names]
    complete = place == list(range(len(columns)))
    defaults = [c.default for c in SAMPLE_COLUMNS]
    # (place, from the column's value to the field's JSON value)
    convert = [(i, c.from_sql) for i, c in enumerate(SAMPLE_COLUMNS) if not c.plain]

    def shape(row: tuple[Any, ...]) -> dict[str, Any]:
        if complete:
            v = list(row)
        else:
            v = list(defaults)
            for j, i in enumerate(place):
                v[i] = row[j]
        for i, conv in convert:
            x = conv(v[i])
            kind = type(x)
            if kind in _PLAIN:
                v[i] = x
            elif kind is dict and _PLAIN.issuperset(map(type, x.values())):
                v[i] = x  # a mapping of numbers (metrics), just decoded: encode() would copy it
            else:
                v[i] = encode(x)
        return dict(zip(keys, v, strict=True))
    return shape


_PLAIN = frozenset({str, int, float, bool, type(None)})


def export_dicts(store: SqlStore, run_id: str) -> Iterator[dict[str, Any]]:
    """Each stored sample of a run as `Sample.to_dict()` gives it, in the order written."""
    have = {d[0] for d in store.execute("SELECT * FROM samples WHERE 0=1").description}
    names = [c.name for c in SAMPLE_COLUMNS if c.name in have]
    shape = _shaper(names)
    cursor = store.execute(f"SELECT {', '.join(names)} FROM samples WHERE run_id=? "
                           "ORDER BY id", (run_id,))
    for row in cursor:
        # SQLite's rows are sequences, PostgreSQL's (psycopg's dict_row) are mappings
        yield check_export(run_id, shape(tuple(row.values()) if isinstance(row, dict)
                                         else tuple(row)))


# ----------------------------------------------------------------- a run's samples as columns

# The Sample's fields in order: a batch of samples is one tuple of values per field, each value
# as the record the store's reader makes would hold it (report/samplerows.py writes the JSON
# report's lines and the samples CSV's rows from these, column by column).
FIELD_NAMES = tuple(f.name for f in spec(Sample))
BATCH = 2000
make_sample: Callable[[Sequence[Any]], Sample] = positional(Sample)  # the record, when needed
assert [c.field for c in SAMPLE_COLUMNS] == list(FIELD_NAMES)
assert tuple(f.name for f in dataclasses.fields(Sample)) == FIELD_NAMES  # positional's order
_REAL_AT = [FIELD_NAMES.index(f) for f in REAL_FIELDS]
_METRICS_AT = FIELD_NAMES.index("metrics")


# The flags stored as 0/1 (warmup, emulated): their conversion is bool's, None kept.
_FLAGS = frozenset(f.name for f in spec(Sample) if optional_of(f.type)[1] is bool)
_FLOATS = frozenset({float})
_DICTS = frozenset({dict})
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)


def metrics_column(texts: Sequence[Any], convert: Any) -> tuple[Any, ...]:
    """The metrics column as the reader makes it (`convert`: the column's own from_sql,
    `parse(schema.loads(text))`). Each text is scanned by the C scanner schema.loads ends in,
    in one pass (`map`); a text it does not take whole (space around it, junk after it, not
    JSON) goes through `convert`, which decides or refuses. A dictionary of floats is already
    what the lax decoder makes of it (`float(x) is x` for a float); anything else goes through
    `convert` too."""
    try:
        scanned = list(map(_SCAN, texts, itertools.repeat(0)))
    except TypeError:  # a text that is not a str
        return tuple(map(convert, texts))
    if len(scanned) != len(texts):  # the scanner's StopIteration (no JSON there) ends a map
        return tuple(map(convert, texts))
    values = list(map(_FIRST, scanned))
    whole = list(map(_SECOND, scanned)) == list(map(len, texts))
    if whole and _DICTS.issuperset(map(type, values)) and _FLOATS.issuperset(
            map(type, itertools.chain.from_iterable(map(dict.values, values)))):
        return tuple(values)  # the common case: every text one dictionary of floats
    return tuple(v if type(v) is dict and n == len(t) and _FLOATS.issuperset(
        map(type, v.values())) else convert(t) for v, n, t in zip(
        values, map(_SECOND, scanned), texts, strict=True))


def _convert(c: Column, raw: tuple[Any, ...], n: int) -> tuple[Any, ...]:
    """One stored column of a batch as the reader converts it (`c.from_sql` of each value),
    the common cases in one pass in C."""
    if c.plain:
        return raw
    if raw.count(None) == n:  # every conversion keeps None (an optional record, a flag)
        return raw
    if c.field == "metrics":
        return metrics_column(raw, c.from_sql)
    if c.field in _FLAGS and None not in raw:
        return tuple(map(bool, raw))
    return tuple(map(c.from_sql, raw))


Columns = list[tuple[Any, ...]]  # a batch of samples: one tuple of values per field


def _column_reader(names: Sequence[str],
                   ) -> Callable[[list[tuple[Any, ...]]], tuple[tuple[Any, ...], Columns]]:
    """From a batch of rows holding the row id and then the sample columns `names` (in the
    order of SAMPLE_COLUMNS) to the ids and the batch's fields as columns; a column the
    database predates is its default (each value its own object, as the reader makes it)."""
    have = {n: j for j, n in enumerate(names, 1)}

    def read(rows: list[tuple[Any, ...]]) -> tuple[tuple[Any, ...], Columns]:
        raw = list(zip(*rows, strict=True))
        n = len(rows)
        return raw[0], [_convert(c, raw[have[c.name]], n) if c.name in have
                        else tuple(c.from_sql(c.default) for _ in range(n))
                        for c in SAMPLE_COLUMNS]
    return read


def check_fields(columns: Columns) -> Columns:
    """A batch of samples as field columns, held to `finite.check_sample` (the rule for a
    record): judged by two passes in C, and a batch that fails is made into records one by one
    so that the refusal names the sample, as the records' reader's does."""
    reals = itertools.chain.from_iterable(columns[i] for i in _REAL_AT)
    if not (finite(tuple(reals)) and metrics_finite(columns[_METRICS_AT])):
        for values in zip(*columns, strict=True):
            check_sample(make_sample(values))
    return columns


def field_columns(store: SqlStore, run_id: str, size: int = BATCH) -> Iterator[Columns]:
    """A run's samples in the order written (store.iter_samples's), `size` at a time, each
    batch as one tuple per field of Sample: the values of the records the reader would make,
    never a record (tests/report/test_report_rows.py holds the two equal)."""
    return (cols for _, cols in id_field_columns(store, run_id, size))


def id_field_columns(store: SqlStore, run_id: str, size: int = BATCH,
                     ) -> Iterator[tuple[tuple[int, ...], Columns]]:
    """`field_columns`, each batch with its rows' ids."""
    have = {d[0] for d in store.execute("SELECT * FROM samples WHERE 0=1").description}
    names = [c.name for c in SAMPLE_COLUMNS if c.name in have]
    read = _column_reader(names)
    rows = iter(store.tuples(f"SELECT id, {', '.join(names)} FROM {store.samples_of(run_id)} "
                             "WHERE run_id=? ORDER BY id", (run_id,)))
    while batch := list(itertools.islice(rows, size)):
        ids, cols = read(batch)  # type: ignore[arg-type]
        yield ids, check_fields(cols)
