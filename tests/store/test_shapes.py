"""The import's fast sample decoder (store/shapes.py) is the general strict decoder.

The family: a decoder made faster for the common case that accepts what the general one
refuses, refuses what it accepts, or makes another record (a default taken for a null, a whole
number kept where a float goes, a check skipped for one shape). Generated here: samples as a
run writes them (derived from `Sample`'s own fields, so a new field is generated too), then
mutated one value at a time into every kind of value JSON has, the kinds a run never writes
(negative, beyond 64 bits, infinite, not an identifier, not a time, another type), keys
dropped, added, reordered. For each, the plan's record (when it makes one) equals the general
decoder's, and the decoder as the import calls it raises the same refusal at the same path.
bench/import_fuzz.py's longer run covers the whole import.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.codec import INT_MAX, INT_MIN, Field, Invalid, decoder, optional_of, spec
from abibench.records import Sample
from abibench.store.shapes import ShapeDecoder
from tests.store.test_import_generated import BAD_IDS, BAD_TIMES, record_of

GENERAL = decoder(Sample, strict=True)
KEYS = [f.key for f in spec(Sample)]
ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 2, INT_MAX, INT_MAX + 1, -(INT_MAX + 2), 1 << 70, 0.0, -0.0,
    -1e-300, 1.5, 1e308, 2.0, math.inf, -math.inf, "", "x", "timed", "ok", "i386", "x86_64/o",
    "2026-01-01T00:00:00+00:00", [], [1], {}, {"rate": 1.0}, {"rate": 1}, {"wall": 1.0},
    {"rate": math.inf}, {"a b": 1.0}, {"": 2.0}, *BAD_IDS, *BAD_TIMES]


def _edges(f: Field) -> list[Any]:
    """The values at the edge of what this field takes: just inside, just outside."""
    inner = optional_of(f.type)[1]
    r = f.rule
    if inner is int:
        least = INT_MIN if r.min is None else int(r.min)
        return [least, least - 1, INT_MAX, INT_MAX + 1, float(least + 1), True, "1"]
    if inner is float:
        low: float = -1e308 if r.min is None else r.min
        return [low, -1e-300 if r.min == 0 else low * 2 - 1, -0.0, math.inf, -math.inf,
                1, INT_MAX + 1, 1 << 1030, True, "1.0"]
    if inner is str:
        out: list[Any] = ["", 5, *BAD_IDS] if r.id else ["", 5, "\x1b[2J"]
        return out + ([*BAD_TIMES, "2026-01-01T00:00:00"] if r.time else []) + \
            ([*r.choices, "nope"] if r.choices else [])
    if inner is bool:
        return [0, 1, "true"]
    return [{}, [], {"rate": 1.0}, {"rate": 1}, {"rate": math.inf}, {"wall": 1.0},
            {"a b": 1.0}, {"rate": None}, 5]


EDGES = {f.key: [*_edges(f), None] for f in spec(Sample)}


def outcome(decode: Any, v: dict[str, Any]) -> Any:
    try:
        return ("made", decode(v))
    except Invalid as exc:
        return ("refused", exc.path, exc.message)


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A sample as a run writes it, then changed in up to four places."""
    sample: dict[str, Any] = dict(draw(record_of(Sample)))
    for _ in range(draw(st.integers(0, 4))):
        how = draw(st.sampled_from(["set", "set", "set", "drop", "add", "reorder"]))
        key = draw(st.sampled_from(KEYS))
        if how == "set":
            sample[key] = draw(st.sampled_from(EDGES[key]) | st.sampled_from(ODD_VALUES))
        elif how == "drop":
            sample.pop(key, None)
        elif how == "add":
            sample[draw(st.sampled_from(["extra", "wall", "Metrics"]))] = 1
        else:
            items = list(sample.items())
            sample = dict(draw(st.permutations(items)))
    return sample


def same(v: dict[str, Any]) -> None:
    # the JSON round trip: the values an import sees are what a file can hold
    v = json.loads(json.dumps(v, allow_nan=True))
    want = outcome(GENERAL, v)
    planned = ShapeDecoder(Sample).planned(v)
    if planned is not None:
        assert want == ("made", planned), v
    assert outcome(ShapeDecoder(Sample), v) == want, v


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record_of(Sample))
def test_every_field_at_every_edge_decodes_as_the_general_decoder(v: dict[str, Any]) -> None:
    """Each field of a sample a run writes, in turn, set to each value at the edge of what it
    takes, and left out."""
    same(v)
    for key, edges in EDGES.items():
        for edge in edges:
            same({**v, key: edge})
        same({k: x for k, x in v.items() if k != key})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_a_plan_makes_the_general_decoders_record_or_leaves_it_to_it(v: dict[str, Any]) -> None:
    same(v)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record_of(Sample))
def test_a_sample_as_a_run_writes_it_is_planned(v: dict[str, Any]) -> None:
    """The fast path is taken: a plan that never applied would pass the test above."""
    v = json.loads(json.dumps(v))
    got = ShapeDecoder(Sample).planned(v)
    assert got is not None and got == GENERAL(v)


def test_the_plans_are_bounded() -> None:
    dec = ShapeDecoder(Sample, max_shapes=2)
    base = {"workload": "w", "target": "i386", "round": 1, "position": 0, "warmup": False,
            "status": "ok", "exit_code": 0, "wall_s": 1.0, "user_s": 1.0, "sys_s": 0.0,
            "max_rss_kb": 1, "stdout_digest": "", "check": None}
    for extra in range(5):
        got = dec({**base, f"x{extra}": 1})
        assert got == GENERAL(base)
    assert len(dec._plans) == 2
