"""Records described once: a dataclass's fields are its JSON form, its validator and its schema.

The records (records.py) are plain frozen dataclasses. Their field types, defaults and a small
`Rule` in each field's metadata are the only description of the run format; from them this
module derives

* ``encode``: a record as JSON data (what `abibench export` writes and the store keeps as text);
* ``decoder(cls, strict)``: JSON data back to the record, every value checked for its type, and,
  when ``strict`` (an imported file), for what a run can produce: identifiers by
  `ids.check_id`, timestamps that are real, quantities that cannot be negative, closed choices.
  A refusal is one `Invalid` naming the `$.path` of the field;
* ``json_schema(cls)``: the JSON Schema published as docs/schema.json;
* ``spec(cls)``: the fields themselves, from which store/schema.py derives the SQL columns.

A new field of a record therefore needs no second description anywhere.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
import re
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from datetime import UTC, datetime, timedelta
from functools import cache, lru_cache
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from .ids import id_problem

# Free-form data that travels as JSON (parameters, plan, host extras): typed as what it is.
JSON = str | int | float | bool | None | list["JSON"] | dict[str, "JSON"]
JSONDict = dict[str, JSON]

# The store keeps whole numbers as a signed 64-bit INTEGER/BIGINT; JSON has no limit.
INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1
# No run was measured before this, and none after now (plus a clock skew between hosts).
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
CLOCK_SKEW = timedelta(hours=1)


class Invalid(ValueError):
    """A value that is not what a run writes; `path` is where, as `$.samples[3].wall_s`."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix  # how to put it right, when not "export the run again"
        self._parts: list[str] = []

    def at(self, part: str) -> Invalid:
        """Prefix the place (called on the way out, so a path is built only for an error)."""
        self._parts.append(part)
        return self

    @property
    def path(self) -> str:
        return "$" + "".join(reversed(self._parts))


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:+=@~-]*")


def key_part(key: str) -> str:
    """A mapping's key as a step of a path: `.key`, or `["..."]` (JSON-escaped, so a key with
    a control character or a newline cannot break the one line an error is)."""
    if _PLAIN_KEY.fullmatch(key) and len(key) <= 80:
        return f".{key}"
    return f"[{json.dumps(key[:80])}]"


@dataclass(frozen=True)
class Rule:
    """What a field's type does not say. Put in a field's metadata with `rule(...)`."""

    min: float | None = None  # the least value: 0 for a quantity, 1 for a count of repeats
    choices: tuple[str, ...] = ()  # the only values a run writes
    id: str | None = None  # an identifier of this kind (ids.check_id); "target" is ABI[/provenance]
    keys: str | None = None  # the keys of this mapping are identifiers of this kind
    time: bool = False  # an ISO 8601 timestamp
    null_default: bool = False  # a null stands for the field's default (older versions wrote it)
    required: bool = False  # a document must have it, though a record built here need not
    blank: bool = False  # "" stands for "not recorded" (a timestamp older versions left out)
    key: bool = False  # the key this record has in the mapping holding it; not written inside
    extra: bool = False  # keys this version does not know: kept, written back, never used
    present: bool = False  # which of the fields named in its default the source had
    name: str | None = None  # the JSON key, when not the field's name
    column: str | None = None  # the SQL column, when not the field's name
    absent: Any = None  # what a document without it means (a field without a default)
    has_absent: bool = False  # set by `rule` when `absent` is given (None is a value too)


NO_RULE = Rule()


def rule(**kw: Any) -> dict[str, Rule]:
    return {"abibench": Rule(**kw, has_absent="absent" in kw)}


QUANTITY = rule(min=0)  # a time, a size, a count: never below 0


@dataclass(frozen=True)
class Field:
    name: str  # the attribute
    key: str  # the JSON key
    type: Any  # the resolved type
    rule: Rule
    default: Any  # what it is when absent from a document; MISSING: required

    @property
    def required(self) -> bool:
        return self.default is MISSING or self.rule.required


def _default(f: dataclasses.Field[Any], r: Rule) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return r.absent if r.has_absent else MISSING


@cache
def spec(cls: type) -> tuple[Field, ...]:
    """The fields of a record class, their types resolved."""
    hints = get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        r = f.metadata.get("abibench", NO_RULE)
        out.append(Field(f.name, r.name or f.name, hints[f.name], r, _default(f, r)))
    return tuple(out)


def as_array(cls: type) -> bool:
    """A record written as a JSON array of its fields (a [name, [counts]] pair)."""
    return bool(getattr(cls, "AS_ARRAY", False))


_JSON_SCALARS = {str, int, float, bool, type(None)}


def is_json(tp: Any) -> bool:
    """Whether a type is the JSON alias (its forward references resolved or not)."""
    return get_origin(tp) in (Union, types.UnionType) and set(get_args(tp)) >= _JSON_SCALARS


def is_json_dict(tp: Any) -> bool:
    return get_origin(tp) is dict and is_json(get_args(tp)[1])


def _optional(tp: Any) -> tuple[bool, Any]:
    """(True, X) for X | None."""
    if get_origin(tp) in (Union, types.UnionType) and not is_json(tp):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) < len(get_args(tp)):
            return True, (args[0] if len(args) == 1 else Union[tuple(args)])  # noqa: UP007
    return False, tp


def optional_of(tp: Any) -> tuple[bool, Any]:
    """(True, X) for X | None, else (False, tp)."""
    return _optional(tp)


def describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


# --------------------------------------------------------------------------- checks of a value


@lru_cache(maxsize=4096)  # a run repeats a few ids in every sample
def check_label(kind: str, value: str) -> None:
    """An identifier; a target is an ABI and an optional provenance, each an identifier."""
    parts = value.split("/", 1) if kind == "target" else [value]
    for part in parts:
        problem = id_problem(part)
        if problem is not None:
            raise Invalid(f"{kind} {value[:60]!r} {problem}")


def parse_time(value: str) -> datetime:
    """A timestamp as a run writes it (ISO 8601; without a zone it is UTC)."""
    when = datetime.fromisoformat(value)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def check_time(value: str) -> None:
    try:
        when = parse_time(value)
    except ValueError:
        raise Invalid(f"expected an ISO 8601 timestamp, found {value[:40]!r}") from None
    if when < EARLIEST:
        raise Invalid(f"timestamp {value[:40]!r} is before {EARLIEST.year}: no run was "
                      "measured then")
    if when > datetime.now(UTC) + CLOCK_SKEW:
        raise Invalid(f"timestamp {value[:40]!r} is in the future")


def _rule_check(r: Rule) -> Callable[[Any], None] | None:
    """The checks a rule adds to a scalar, in strict mode; None when it adds none."""
    checks: list[Callable[[Any], None]] = []
    if r.min is not None:
        least = r.min

        def at_least(v: Any) -> None:
            if v < least:
                why = ": it cannot be negative" if least == 0 else ""
                raise Invalid(f"expected a number >= {least:g}, found {v}{why}")
        checks.append(at_least)
    if r.choices:
        allowed = r.choices

        def one_of(v: Any) -> None:
            if v not in allowed:
                raise Invalid(f"expected one of {', '.join(allowed)}, found {v!r:.40}")
        checks.append(one_of)
    if r.id is not None:
        kind = r.id
        checks.append(lambda v: check_label(kind, v))
    if r.time:
        checks.append((lambda v: None if v == "" else check_time(v)) if r.blank else check_time)
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]

    def every(v: Any) -> None:
        for c in checks:
            c(v)
    return every


# --------------------------------------------------------------------------- decoding

Decode = Callable[[Any], Any]


def _expect(ok: bool, what: str, value: Any) -> None:
    if not ok:
        raise Invalid(f"expected {what}, found {describe(value)}")


def _str(v: Any) -> str:
    if type(v) is not str:
        raise Invalid(f"expected a string, found {describe(v)}")
    return v


def _int(v: Any) -> int:
    if type(v) is not int:
        raise Invalid(f"expected a whole number, found {describe(v)}")
    if not INT_MIN <= v <= INT_MAX:
        raise Invalid("expected a whole number within ±2**63 (a 64-bit integer)")
    return v


def _float(v: Any) -> float:
    if type(v) is float:
        if not math.isfinite(v):
            raise Invalid("expected a finite number")
        return v
    if type(v) is int:
        # An int beyond 1.8e308 has no float.
        if abs(v) > sys.float_info.max:
            raise Invalid("expected a finite number")
        return float(v)
    raise Invalid(f"expected a number, found {describe(v)}")


def _bool(v: Any) -> bool:
    if type(v) is not bool:
        raise Invalid(f"expected true or false, found {describe(v)}")
    return v


def _json(v: Any) -> Any:
    return v


def _json_dict(v: Any) -> Any:
    _expect(isinstance(v, dict), "an object", v)
    return v


_SCALARS: dict[Any, Decode] = {str: _str, int: _int, float: _float, bool: _bool}
# What the store wrote, or a document already checked: converted, not checked again (a test's
# hand-made record may hold an infinity or a whole number written as 2.0).
_LAX: dict[Any, Decode] = {str: str, int: int, float: float, bool: bool}


def decoder(tp: Any, strict: bool = True, r: Rule = NO_RULE) -> Decode:
    """A function from JSON data to a value of type `tp`, raising Invalid."""
    return _decoder(tp, strict, r)


@cache
def _decoder(tp: Any, strict: bool, r: Rule) -> Decode:
    if is_json(tp):
        return _json
    if is_json_dict(tp):
        return _json_dict
    optional, inner = _optional(tp)
    if optional:
        of = _decoder(inner, strict, r)
        return lambda v: None if v is None else of(v)
    if isinstance(inner, type) and dataclasses.is_dataclass(inner):
        return _record_decoder(inner, strict)
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        allowed = args

        def literal(v: Any) -> Any:
            if not any(type(v) is type(a) and v == a for a in allowed):  # True is not 1
                raise Invalid(f"expected one of {', '.join(map(str, allowed))}, "
                              f"found {v!r:.40}")
            return v
        return literal
    if origin in (tuple, list):
        item = _decoder(args[0], strict, r)
        make: Callable[[Any], Any] = tuple if origin is tuple else list

        def sequence(v: Any) -> Any:
            _expect(type(v) is list, "a list", v)
            out = []
            for i, x in enumerate(v):
                try:
                    out.append(item(x))
                except Invalid as exc:
                    raise exc.at(f"[{i}]") from None
            return make(out)
        return sequence
    if origin is dict:
        value_type = args[1]
        keyed = isinstance(value_type, type) and dataclasses.is_dataclass(value_type) \
            and any(f.rule.key for f in spec(value_type))
        by_key = _record(value_type, strict) if keyed else None
        value = _decoder(value_type, strict, r) if by_key is None else None
        key_kind = r.keys if strict else None

        def mapping(v: Any) -> Any:
            _expect(type(v) is dict, "an object", v)
            out = {}
            for k, x in v.items():
                try:
                    if key_kind is not None:
                        check_label(key_kind, k)
                    out[k] = by_key(x, k) if by_key is not None else value(x)  # type: ignore[misc]
                except Invalid as exc:
                    raise exc.at(key_part(k)) from None
            return out
        return mapping
    base = (_SCALARS if strict else _LAX).get(tp)
    if base is None:
        raise TypeError(f"no JSON form for {tp!r}")
    check = _rule_check(r) if strict else None
    if check is None:
        return base
    # bind as defaults: the closure is the hot path of an import
    def checked(v: Any, base: Decode = base, check: Callable[[Any], None] = check) -> Any:
        out = base(v)
        check(out)
        return out
    return checked


def _record_decoder(cls: type, strict: bool) -> Decode:
    full = _record(cls, strict)
    return lambda v: full(v, None)


@cache
def _record(cls: type, strict: bool) -> Callable[[Any, str | None], Any]:
    fields = spec(cls)
    plain = [(f, _decoder(f.type, strict, f.rule)) for f in fields
             if not (f.rule.key or f.rule.extra or f.rule.present)]
    key_field = next((f for f in fields if f.rule.key), None)
    key_check = _rule_check(key_field.rule) if key_field is not None and strict else None
    extra = next((f.name for f in fields if f.rule.extra), None)
    present = next((f for f in fields if f.rule.present), None)
    tracked = tuple(present.default) if present is not None else ()
    known = {f.key for f in fields}

    if as_array(cls):
        # the fields a list must hold: a later field with a default may be left off the end
        # (a file written before it existed)
        least = max((i + 1 for i, (f, _) in enumerate(plain) if f.default is MISSING),
                    default=0)

        def array(v: Any, key: str | None) -> Any:
            _expect(type(v) is list and least <= len(v) <= len(plain),
                    f"a list of {len(plain)} ({', '.join(f.key for f, _ in plain)})", v)
            kwargs = {}
            for i, ((f, dec), x) in enumerate(zip(plain[:len(v)], v, strict=True)):
                try:
                    kwargs[f.name] = dec(x)
                except Invalid as exc:
                    raise exc.at(f"[{i}]") from None
            return cls(**kwargs)
        return array

    # (name, key, decoder, null stands for the default, must be there, what its absence means)
    steps = [(f.name, f.key, dec, f.rule.null_default,
              f.default is MISSING or (strict and f.rule.required),
              f.rule.absent if f.rule.has_absent else MISSING) for f, dec in plain]

    def record(v: Any, key: str | None) -> Any:
        if type(v) is not dict:
            raise Invalid(f"expected an object, found {describe(v)}")
        kwargs: dict[str, Any] = {}
        for name, json_key, dec, null_default, needed, absent in steps:
            if json_key in v:
                x = v[json_key]
                if x is None and null_default:
                    continue
                try:
                    kwargs[name] = dec(x)
                except Invalid as exc:
                    raise exc.at(f".{json_key}") from None
            elif needed:
                raise Invalid("is missing").at(f".{json_key}")
            elif absent is not MISSING:
                kwargs[name] = absent
        if key_field is not None:
            if key_check is not None and key is not None:
                key_check(key)
            kwargs[key_field.name] = key if key is not None else ""
        if extra is not None:
            kwargs[extra] = {k: x for k, x in v.items() if k not in known}
        if present is not None:
            kwargs[present.name] = tuple(n for n in tracked if n in v)
        return cls(**kwargs)
    return record


# --------------------------------------------------------------------------- encoding


_SCALAR_TYPES = (str, int, float, bool, type(None))


def encode(value: Any) -> Any:
    """A record (or a value inside one) as JSON data."""
    if type(value) in _SCALAR_TYPES:  # most values: asked first, as a million samples' are
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encoder(type(value))(value)
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


@cache
def _encoder(cls: type) -> Callable[[Any], Any]:
    fields = spec(cls)
    plain = [f for f in fields if not (f.rule.key or f.rule.extra or f.rule.present)]
    extra = next((f.name for f in fields if f.rule.extra), None)
    present = next((f for f in fields if f.rule.present), None)
    tracked = frozenset(present.default) if present is not None else frozenset()
    simple = {f.name for f in plain if f.type in (str, int, float, bool)
              or _optional(f.type)[1] in (str, int, float, bool)}
    if as_array(cls):
        return lambda v: [encode(getattr(v, f.name)) for f in plain]
    names = [f.name for f in plain]
    keys = [f.key for f in plain]
    nested = [(i, f.key) for i, f in enumerate(plain) if f.name not in simple]
    optional = [(f.name, f.key) for f in plain if f.name in tracked]

    def one_by_one(v: Any) -> tuple[Any, ...]:
        return tuple(getattr(v, n) for n in names)
    read: Callable[[Any], Any] = operator.attrgetter(*names) if len(names) > 1 else one_by_one

    def run(v: Any) -> Any:
        row = read(v)  # every field in one call (a million samples' worth in an export)
        out = dict(zip(keys, row, strict=True))  # the fields' order is the document's
        for i, key in nested:
            out[key] = encode(row[i])
        if present is not None:
            has = getattr(v, present.name)
            for name, key in optional:
                if name not in has:
                    del out[key]
        if extra is not None:
            out.update(getattr(v, extra))
        return out
    return run


# --------------------------------------------------------------------------- JSON Schema


def json_schema(cls: type, head: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a record class as a document, `head` its own leading
    properties (format and version)."""
    defs: dict[str, Any] = {}
    root = _schema_of_record(cls, defs)
    if head:
        root = {**root, "properties": {**head, **root["properties"]},
                "required": [*head, *root["required"]]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **root,
            "$defs": dict(sorted(defs.items()))}


def _schema_of_record(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    fields = [f for f in spec(cls) if not (f.rule.key or f.rule.extra or f.rule.present)]
    doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    if as_array(cls):
        return {"type": "array", "description": doc,
                "prefixItems": [_schema_of(f.type, f.rule, defs) for f in fields],
                "minItems": sum(1 for f in fields if f.required), "maxItems": len(fields)}
    return {"type": "object", "description": doc,
            "properties": {f.key: _field_schema(f, defs) for f in fields},
            "required": [f.key for f in fields if f.required]}


def _field_schema(f: Field, defs: dict[str, Any]) -> dict[str, Any]:
    out = _schema_of(f.type, f.rule, defs)
    return {"anyOf": [out, {"type": "null"}]} if f.rule.null_default else out


def _schema_of(tp: Any, r: Rule, defs: dict[str, Any]) -> dict[str, Any]:
    if is_json(tp):
        return {}
    if is_json_dict(tp):
        return {"type": "object"}
    optional, inner = _optional(tp)
    if optional:
        return {"anyOf": [_schema_of(inner, r, defs), {"type": "null"}]}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # a placeholder against recursion
            defs[name] = _schema_of_record(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (tuple, list):
        return {"type": "array", "items": _schema_of(args[0], r, defs)}
    if origin is dict:
        out: dict[str, Any] = {"type": "object",
                               "additionalProperties": _schema_of(args[1], r, defs)}
        if r.keys:
            out["propertyNames"] = {"description": f"a {r.keys} identifier"}
        return out
    scalars: dict[Any, dict[str, Any]] = {
        str: {"type": "string"}, int: {"type": "integer", "minimum": INT_MIN, "maximum": INT_MAX},
        float: {"type": "number"}, bool: {"type": "boolean"}}
    out = dict(scalars[tp])
    if r.min is not None:
        out["minimum"] = int(r.min) if tp is int else r.min
    if r.choices:
        out["enum"] = list(r.choices)
    if r.time:
        out["format"] = "date-time"
        if r.blank:
            return {"anyOf": [out, {"const": ""}]}
    if r.id:
        out["description"] = f"a {r.id} identifier"
    return out
