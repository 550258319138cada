"""A stored number that is not finite is refused when the run is read (docs/reliability.md,
"A number that is not finite never leaves the store").

No run writes one (a sample with a non-finite time or metric fails, run/samples.py) and no
import lets one in (the codec refuses it), so a results database that holds inf, -inf or nan in
a sample's float field or metric was changed by something other than abibench: a hand edit, a
damaged copy, another program writing the shared PostgreSQL store. Read as it is, such a value
reached the statistics (an "internal error" from numeric's array check), the conditions' text
("CPU clock inf-inf MHz") and the export (`Infinity`, which is not JSON and which abibench's own
import then refuses). Every way a stored sample is read (records, columns, the export's rows)
passes its numbers through `finite` here, and a run holding one is refused in one line that
names the run, the sample and the field (exit 8, as for a database that fails its integrity
check); nothing is changed in the store.

The checks are passes in C over values the reader has already made (`map` and `filter` over a
column or a record's fields): at 10^6 samples a few hundred milliseconds at most.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

from ..errors import EXIT_STORE_CORRUPT, StoreError
from ..records import Sample
from .schema import SAMPLE_COLUMNS

# The Sample fields stored as REAL: a time, a share of a CPU, a clock, a temperature.
REAL_FIELDS = tuple(c.field for c in SAMPLE_COLUMNS if c.type == "{real}")
_REALS = operator.attrgetter(*REAL_FIELDS)
_VALUES = operator.methodcaller("values")


def finite(values: Iterable[Any]) -> bool:
    """Every number among `values` is finite (None, and 0, which `filter` drops, are). A whole
    number too large for a float (a JSON metric of 400 digits) is not: it would overflow to inf
    in the statistics."""
    if not isinstance(values, tuple | list):
        values = tuple(values)
    try:
        return all(map(math.isfinite, filter(None, values)))
    except OverflowError:
        return False
    except TypeError:  # a text among them: only numbers are judged here
        return all(_finite_number(v) for v in values)


def _finite_number(v: Any) -> bool:
    if type(v) is bool or not isinstance(v, int | float):
        return True
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def metrics_finite(metrics: Iterable[Mapping[str, Any] | None]) -> bool:
    """Every value of every metrics mapping is a finite number (or not a number at all: the
    reader's conversion judges the types)."""
    # the mappings' values in passes in C (a generator a mapping cost 0.9 s at 10^6)
    return finite(itertools.chain.from_iterable(map(_VALUES, filter(None, metrics))))


def refuse(run_id: str, where: str, field: str) -> NoReturn:
    raise StoreError(
        f"run '{run_id}': {where} holds a {field} that is not a finite number (inf or nan), "
        "which no abibench run or import writes: the results database was changed outside "
        "abibench; delete that sample or restore the database from a copy", EXIT_STORE_CORRUPT)


def _name(s: Sample) -> str:
    return f"the sample of {s.workload} on {s.target}, round {s.round}"


def check_sample(s: Sample) -> Sample:
    """The sample, if every float field and metric of it is finite; else the refusal."""
    if not finite(_REALS(s)):
        bad = next(f for f in REAL_FIELDS if not finite((getattr(s, f),)))
        refuse(s.run_id, _name(s), bad)
    if not metrics_finite((s.metrics,)):
        bad = next(k for k, v in s.metrics.items() if not finite((v,)))
        refuse(s.run_id, _name(s), f"metric '{bad}'")
    return s


_METRICS = operator.attrgetter("metrics")
_CHUNK = 2000


def checked(samples: Iterable[Sample]) -> Iterator[Sample]:
    """`samples`, each held to `check_sample` as it is read: judged a chunk at a time by two
    passes in C (a million samples one by one cost 1.9 s, a tenth of reading them), and a chunk
    that fails is walked sample by sample to name the one."""
    it = iter(samples)
    while chunk := list(itertools.islice(it, _CHUNK)):
        if not (finite(itertools.chain.from_iterable(map(_REALS, chunk)))
                and metrics_finite(map(_METRICS, chunk))):
            for s in chunk:
                check_sample(s)
        yield from chunk


def check_columns(run_id: str, workload: str, target: str,
                  columns: Mapping[str, Sequence[Any]]) -> None:
    """A (workload, target)'s counted samples read as columns (store/columns.py)."""
    for f in REAL_FIELDS:
        if f in columns and not finite(columns[f]):
            refuse(run_id, f"a sample of {workload} on {target}", f)
    if "metrics" in columns and not metrics_finite(columns["metrics"]):
        bad = next(k for m in columns["metrics"] if m for k, v in m.items() if not finite((v,)))
        refuse(run_id, f"a sample of {workload} on {target}", f"metric '{bad}'")


def check_export(run_id: str, d: dict[str, Any]) -> dict[str, Any]:
    """A sample's export dictionary (store/rowstream.py), as `check_sample` holds a record."""
    metrics = d.get("metrics")
    if finite(map(d.get, REAL_FIELDS)) and (
            not isinstance(metrics, Mapping) or metrics_finite((metrics,))):
        return d
    where = f"the sample of {d.get('workload')} on {d.get('target')}, round {d.get('round')}"
    for f in REAL_FIELDS:
        if not finite((d.get(f),)):
            refuse(run_id, where, f)
    if isinstance(metrics, Mapping) and not metrics_finite((metrics,)):
        refuse(run_id, where, f"metric '{next(k for k, v in metrics.items() if not finite((v,)))}'")
    return d
