"""Family: a number that is not finite, in a results database changed outside abibench, reaches
the statistics, a report's text or an export (docs/reliability.md, "A number that is not finite
never leaves the store"). Found in round 5: `wall_s = inf` in one stored sample made `report`,
`explain` and `compare` end in an internal error, `clock_mhz = inf` printed "CPU clock inf-inf
MHz", and `export` wrote `Infinity`, which is not JSON and which abibench's own import refuses.

Hypothesis generates the members: a stored run (the columnar reader's generator: warm-ups,
failures, counting runs, baselines, discarded samples), one of its samples, one float field or
one metric, and a value no run writes (inf and -inf in a REAL column; in the metrics' JSON text
`Infinity`, `-Infinity`, `NaN`, an exponent past the float range, a whole number of 309 to 500
digits). Every way a stored sample is read (records, columns, the export's rows) must refuse
the run in one StoreError with exit 8 that names the run and the field; the same sample with a
large finite value must read.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.errors import EXIT_STORE_CORRUPT, StoreError
from abibench.records import Sample
from abibench.store.columns import load_columns
from abibench.store.finite import REAL_FIELDS
from abibench.store.rowstream import export_dicts
from abibench.store.schema import SAMPLE_COLUMNS
from abibench.store.sqlite import Store
from tests.invariants.test_columnar import samples, stored

_COLUMN = {c.field: c.name for c in SAMPLE_COLUMNS}


def _readers(store: Store, run_id: str) -> dict[str, object]:
    return {"records": lambda: store.load_run(run_id),
            "columns": lambda: load_columns(store, run_id).n_counted(),
            "export": lambda: list(export_dicts(store, run_id))}


@st.composite
def damage(draw: st.DrawFn) -> tuple[str, str, str]:
    """(field, SQL for the new value, what the message names)."""
    if draw(st.booleans()):
        field = draw(st.sampled_from(REAL_FIELDS))
        return field, draw(st.sampled_from(["1e999", "-1e999"])), field
    text = draw(st.one_of(
        st.sampled_from(["Infinity", "-Infinity", "NaN", "1e999", "-1E400", "2.5e+309"]),
        st.builds(lambda sign, n: sign + "9" * n, st.sampled_from(["", "-"]),
                  st.integers(309, 500))))
    metric = draw(st.sampled_from(["rate", "time", "odd metric"]))
    return "metrics", "'" + json.dumps({metric: 0.0}).replace("0.0", text) + "'", metric


def _set(store: Store, run_id: str, position: int, field: str, sql_value: str) -> None:
    ids = [r[0] for r in store.execute(
        "SELECT id FROM samples WHERE run_id=? ORDER BY id", (run_id,))]
    with store.transaction():
        store.execute(f"UPDATE samples SET {_COLUMN[field]} = {sql_value} WHERE id=?",
                      (ids[position % len(ids)],))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ss=samples().filter(bool), where=st.integers(0, 100), hurt=damage())
def test_a_stored_number_that_is_not_finite_is_refused_by_every_reader(
        ss: list[Sample], where: int, hurt: tuple[str, str, str]) -> None:
    field, value, named = hurt
    with stored(ss) as (store, run_id):
        _set(store, run_id, where, field, value)
        for how, read in _readers(store, run_id).items():
            with pytest.raises(StoreError) as refused:
                read()  # type: ignore[operator]
            message = str(refused.value)
            assert refused.value.exit_code == EXIT_STORE_CORRUPT, (how, message)
            assert run_id in message and named in message, (how, message)
            assert "\n" not in message


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ss=samples().filter(bool), where=st.integers(0, 100),
       field=st.sampled_from((*REAL_FIELDS, "metrics")))
def test_a_large_finite_stored_number_is_read(ss: list[Sample], where: int, field: str) -> None:
    big = repr(math.nextafter(math.inf, 0))
    value = f"'{json.dumps({'rate': 1.0}).replace('1.0', big)}'" if field == "metrics" else big
    with stored(ss) as (store, run_id):
        _set(store, run_id, where, field, value)
        for read in _readers(store, run_id).values():
            read()  # type: ignore[operator]
