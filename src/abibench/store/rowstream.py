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

from collections.abc import Callable, Iterator
from typing import Any

from ..codec import encode, spec
from ..records import Sample
from .finite import check_export
from .schema import SAMPLE_COLUMNS
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
