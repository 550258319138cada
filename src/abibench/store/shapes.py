"""A strict decoder for the one record an import decodes a million times (`Sample`), fast for
the shapes a file repeats and exactly `codec.decoder(cls, strict=True)` in what it accepts.

An exported run's samples all look alike: the same keys in the same order, each holding the
same JSON type. The general decoder asks every field, for every sample, whether it is there,
what type it has and what rule it obeys: a third of an import's time. Here a sample's *shape*
(its keys in order and the type of each value) chooses a plan made once: which value goes to
which field, which fields take their defaults, and the checks the values still need, grouped
so that most run as one built-in call over a tuple (`min`, `all(map(isfinite, ...))`).

A plan only ever says "this is the record the general decoder makes" or "not sure": any shape
it was not written for (a type the field does not take, a missing required key, a null for a
default, a whole number where a float goes) and any value that fails a check sends the sample
to the general decoder, which then makes the record or raises the refusal with its path, as it
always did. So the refusals are the general decoder's by construction, and
tests/store/test_shapes.py holds the records equal on generated samples.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import MISSING
from functools import cache
from typing import Any

from ..codec import (
    INT_MAX,
    INT_MIN,
    Decode,
    Field,
    Invalid,
    check_label,
    check_time,
    decoder,
    optional_of,
    spec,
)
from ..jsontext import take as _getter
from .schema import positional

_NONE = type(None)
_isfinite = math.isfinite
Plan = Callable[[tuple[Any, ...]], Any]  # the values of a dict in order -> record, or None


@dataclasses.dataclass
class _Checks:
    """What a shape's values still need checking, by kind (indexes into the values)."""

    ints: list[int] = dataclasses.field(default_factory=list)  # within 64 bits
    natural: list[int] = dataclasses.field(default_factory=list)  # ints >= 0 (quantities)
    floats: list[int] = dataclasses.field(default_factory=list)  # finite
    positive: list[int] = dataclasses.field(default_factory=list)  # floats >= 0 (quantities)
    one_by_one: list[tuple[int, Callable[[Any], Any]]] = dataclasses.field(default_factory=list)
    # values the field's own strict decoder makes (a nested record): (index, decoder)
    converts: list[tuple[int, Decode]] = dataclasses.field(default_factory=list)
    # fields whose default is made anew for each record: (the field's place, its factory)
    fresh: list[tuple[int, Callable[[], Any]]] = dataclasses.field(default_factory=list)




def _label_check(kind: str) -> Callable[[Any], Any]:
    return lambda v: check_label(kind, v)


def _choice_check(allowed: tuple[str, ...]) -> Callable[[Any], Any]:
    def one_of(v: Any) -> None:
        if v not in allowed:
            raise Invalid("not a choice")
    return one_of


def _least(least: float) -> Callable[[Any], Any]:
    def at_least(v: Any) -> None:
        if v < least:
            raise Invalid("below the least")
    return at_least


def _metrics_check(kind: str | None) -> Callable[[Any], Any]:
    """A mapping of names to numbers: every name an identifier of `kind`, every value a finite
    float (a whole number goes to the general decoder, which converts it). The mapping itself
    becomes the record's: it was just decoded, nothing else holds it."""
    def metrics(m: dict[str, Any]) -> None:
        for k, x in m.items():
            if type(x) is not float or not _isfinite(x):
                raise Invalid("not a finite float")
            if kind is not None:
                check_label(kind, k)
    return metrics


def _step(f: Field, typ: type, i: int, checks: _Checks) -> bool:
    """Add what a value of JSON type `typ` in field `f` needs; False: not a shape for a plan."""
    r = f.rule
    optional, inner = optional_of(f.type)
    if typ is _NONE:
        return optional and not r.null_default  # None is the value, unchecked (as decoded)
    if inner is str and typ is str:
        if r.id is not None:
            checks.one_by_one.append((i, _label_check(r.id)))
        if r.choices:
            checks.one_by_one.append((i, _choice_check(r.choices)))
        if r.time:
            checks.one_by_one.append((i, (lambda v: None if v == "" else check_time(v))
                                      if r.blank else check_time))
        return r.min is None and r.keys is None
    if inner is int and typ is int:
        (checks.natural if r.min == 0 else checks.ints).append(i)
        if r.min not in (None, 0):
            checks.one_by_one.append((i, _least(r.min)))
        return not r.choices and r.id is None and not r.time
    if inner is float and typ is float:
        checks.floats.append(i)
        if r.min == 0:
            checks.positive.append(i)
        elif r.min is not None:
            checks.one_by_one.append((i, _least(r.min)))
        return not r.choices and r.id is None and not r.time
    if inner is bool and typ is bool:
        return r.min is None and not r.choices and r.id is None and not r.time
    if inner == dict[str, float] and typ is dict:
        checks.one_by_one.append((i, _metrics_check(r.keys)))
        return True
    if inner in (str, int, float, bool) or typ in (str, int, float, bool):
        return False  # a type the field does not take, or one the decoder converts
    # a nested record or a list: its own strict decoder makes the value
    checks.converts.append((i, decoder(f.type, True, r)))
    return True


def _plan(cls: type, keys: tuple[str, ...], types: tuple[type, ...]
          ) -> tuple[Plan, Plan | None] | None:
    """The plan for one shape (the record, and its fields without the record when every field
    is a value as it came), or None when the general decoder must decide every sample."""
    fields = spec(cls)
    if any(f.rule.key or f.rule.extra or f.rule.present for f in fields):
        return None  # a record that keeps unknown keys or knows its key: not this plan's kind
    where = {k: i for i, k in enumerate(keys)}
    if len(where) != len(keys):
        return None
    checks = _Checks()
    take: list[int] = []  # each field's value: an index into the values, or -1 (its default)
    defaults: list[Any] = []
    for f in fields:
        i = where.get(f.key, -1)
        if i >= 0:
            if not _step(f, types[i], i, checks):
                return None
        elif f.default is MISSING or f.rule.required:
            return None  # the general decoder says "is missing"
        elif f.rule.has_absent:
            defaults.append(f.rule.absent)
        else:
            dc = next(d for d in dataclasses.fields(cls) if d.name == f.name)
            if dc.default_factory is not MISSING:  # a fresh object for each record
                checks.fresh.append((len(take), dc.default_factory))
            defaults.append(None if dc.default is MISSING else dc.default)
        take.append(i)
    return _compile(cls, take, defaults, checks, len(keys))


@cache
def _maker(cls: type) -> Callable[[Sequence[Any]], Any]:
    return positional(cls)  # generated code: made once per class, not per shape


def _compile(cls: type, take: list[int], defaults: list[Any], checks: _Checks,
             width: int) -> tuple[Plan, Plan | None]:
    make = _maker(cls)
    ints, natural = _getter(checks.ints), _getter(checks.natural)
    floats, positive = _getter(checks.floats), _getter(checks.positive)
    # each field's value in one call: the values, then the defaults after them
    fill = iter(range(width, width + len(defaults)))
    fields = _getter([i if i >= 0 else next(fill) for i in take])
    rest = tuple(defaults)
    singles = tuple(checks.one_by_one)
    converts = tuple((i, take.index(i), dec) for i, dec in checks.converts)
    fresh = tuple(checks.fresh)
    simple = not converts and not fresh

    def passes(values: tuple[Any, ...]) -> bool:
        got = ints(values)
        if got and not (min(got) >= INT_MIN and max(got) <= INT_MAX):
            return False
        got = natural(values)
        if got and not (min(got) >= 0 and max(got) <= INT_MAX):
            return False
        if not all(map(_isfinite, floats(values))):
            return False
        got = positive(values)
        if got and min(got) < 0:
            return False
        try:
            for i, check in singles:
                check(values[i])
        except Invalid:
            return False
        return True

    def build(values: tuple[Any, ...]) -> Any:
        if not passes(values):
            return None
        if simple:
            return make(fields(values + rest))
        try:
            out = list(fields(values + rest))
            for i, place, dec in converts:
                out[place] = dec(values[i])
        except Invalid:
            return None
        for place, factory in fresh:
            out[place] = factory()
        return make(out)

    def field_values(values: tuple[Any, ...]) -> Any:
        # the record's fields in their order, as `build` gives them to `make`: what a row is
        # made of without the record (store/exchange.py's import)
        return fields(values + rest) if passes(values) else None
    return build, (field_values if simple else None)


class ShapeDecoder:
    """`codec.decoder(cls, strict=True)`, with a plan per shape for the samples that fit one.
    The plans are bounded: a file whose samples take more shapes than `max_shapes` decodes
    the rest by the general decoder."""

    def __init__(self, cls: type, max_shapes: int = 64) -> None:
        self._general: Decode = decoder(cls, strict=True)
        self._cls = cls
        self._plans: dict[tuple[tuple[str, ...], tuple[type, ...]],
                         tuple[Plan, Plan | None] | None] = {}
        self._max = max_shapes

    def _planned(self, v: dict[str, Any]) -> tuple[tuple[Any, ...], Any]:
        values = tuple(v.values())
        shape = (tuple(v), tuple(map(type, values)))
        plan = self._plans.get(shape, _UNSEEN)
        if plan is _UNSEEN:
            plan = None
            if len(self._plans) < self._max:
                plan = self._plans[shape] = _plan(self._cls, *shape)
        return values, plan

    def __call__(self, v: Any) -> Any:
        if type(v) is dict:
            values, plan = self._planned(v)
            if plan is not None:
                made = plan[0](values)
                if made is not None:
                    return made
        return self._general(v)

    def fields(self, v: Any) -> tuple[Any, ...] | None:
        """The record's fields in their order (what `cls(*fields)` makes), when a plan is sure
        of them without making the record: every value as it came, nothing converted; None
        otherwise (then `self(v)` decides, as always)."""
        if type(v) is dict:
            values, plan = self._planned(v)
            if plan is not None and plan[1] is not None:
                out: tuple[Any, ...] | None = plan[1](values)
                return out
        return None

    def planned(self, v: dict[str, Any]) -> Any:
        """The plan's record for `v`, or None when the general decoder decides (for tests)."""
        values = tuple(v.values())
        plan = _plan(self._cls, tuple(v), tuple(map(type, values)))
        return None if plan is None else plan[0](values)


_UNSEEN: Any = object()
