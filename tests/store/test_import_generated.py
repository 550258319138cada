"""An import is held to what a run can produce: generated documents, valid and broken.

The strategies are derived from the record types (abibench/codec.py `spec`), so a field added
to a record is generated, mutated and round-tripped without a change here. A valid document
must survive export -> import -> export unchanged; every member of each family of broken ones
(a second sample in one place, a timestamp no run wrote, an identifier that is not one, a
metric that redefines a built-in, a wrong type, a missing field, a number the store cannot
hold, an unknown version) is refused by `abibench import` in one line naming the `$.path`,
exit 2, and nothing is stored.

bench/import_fuzz.py runs the same properties for minutes.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.codec import (
    INT_MAX,
    INT_MIN,
    Field,
    Rule,
    as_array,
    is_json,
    is_json_dict,
    key_part,
    optional_of,
    parse_time,
    spec,
)
from abibench.records import BUILTIN_METRICS, EXPORT_FORMAT, EXPORT_VERSION, RunDoc
from abibench.store.exchange import document
from abibench.store.open import open_store

Doc = dict[str, Any]
Main = Callable[..., tuple[int, str, str]]

# --------------------------------------------------------------------------- derived strategies

IDS = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,11}", fullmatch=True)
ABIS = st.sampled_from(["i386", "x86_64", "x32", "armhf", "aarch64"])
TARGETS = st.one_of(ABIS, st.builds(lambda a, p: f"{a}/{p}", ABIS, IDS))
# Any text JSON and both stores hold: no lone surrogate (not UTF-8), no NUL (PostgreSQL text).
TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
               max_size=12)
TIMES = st.datetimes(min_value=datetime(2000, 1, 2), max_value=datetime(2026, 1, 1),
                     timezones=st.just(UTC)).map(lambda t: t.isoformat())
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(TEXT, inner, max_size=2),
    max_leaves=4)


def value_of(tp: Any, r: Rule) -> st.SearchStrategy[Any]:
    """JSON data of a field of this type and rule, as a run writes it."""
    if is_json(tp):
        return JSON_VALUES
    if is_json_dict(tp):
        return st.dictionaries(TEXT, JSON_VALUES, max_size=2)
    optional, inner = optional_of(tp)
    if optional:
        return st.none() | value_of(inner, r)
    if isinstance(inner, type) and dataclasses.is_dataclass(inner):
        return record_of(inner)
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (tuple, list):
        return st.lists(value_of(args[0], r), max_size=3)
    if origin is dict:
        keys = IDS if r.keys or _keyed(args[1]) else TEXT
        return st.dictionaries(keys, value_of(args[1], r), max_size=2)
    if tp is str:
        if r.choices:
            return st.sampled_from(r.choices)
        if r.id:
            return TARGETS if r.id == "target" else IDS
        if r.time:
            return TIMES | st.just("") if r.blank else TIMES
        return TEXT
    if tp is int:
        least = INT_MIN if r.min is None else int(r.min)
        return st.integers(least, INT_MAX)
    if tp is float:
        return st.floats(min_value=r.min, allow_nan=False, allow_infinity=False)
    if tp is bool:
        return st.booleans()
    raise TypeError(f"no strategy for {tp!r}")


def _keyed(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp) and \
        any(f.rule.key for f in spec(tp))


def _plain(cls: type) -> list[Field]:
    return [f for f in spec(cls) if not (f.rule.key or f.rule.extra or f.rule.present)]


def record_of(cls: type) -> st.SearchStrategy[Any]:
    fields = _plain(cls)
    if as_array(cls):
        return st.tuples(*(value_of(f.type, f.rule) for f in fields)).map(list)
    return st.fixed_dictionaries(
        {f.key: value_of(f.type, f.rule) for f in fields if f.required},
        optional={f.key: value_of(f.type, f.rule) for f in fields if not f.required})


def consistent(doc: Doc) -> Doc:
    """Make a generated document hold together as a run's does: samples of declared
    workloads and targets, one timed sample per place, the primary metric in every counted
    sample, no built-in metric redefined, a run that ends after it starts."""
    doc = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, **doc}
    run = doc["run"]
    if run["finished"] is not None and parse_time(run["finished"]) < parse_time(run["started"]):
        run["started"], run["finished"] = run["finished"], run["started"]
    workloads = run["config"].setdefault("workloads", {}) or {"w": {
        "primary": "wall", "targets": ["i386"], "metrics": {}}}
    run["config"]["workloads"] = workloads
    for meta in workloads.values():
        meta["metrics"] = {n: m for n, m in meta["metrics"].items() if n not in BUILTIN_METRICS}
        meta["targets"] = meta["targets"] or ["i386"]
        if meta["primary"] not in meta["metrics"]:
            meta["primary"] = "wall"
    ids = list(workloads)
    places: set[tuple[Any, ...]] = set()
    for i, s in enumerate(doc["samples"]):
        meta = workloads[ids[i % len(ids)]]
        s["workload"], s["target"] = ids[i % len(ids)], meta["targets"][i % len(meta["targets"])]
        metrics = {n: v for n, v in s.get("metrics", {}).items() if n not in BUILTIN_METRICS}
        s["metrics"] = metrics
        timed = s.get("kind", "timed") == "timed" and s.get("discarded") is None
        while timed and (s["workload"], s["target"], s["round"], s["position"]) in places:
            s["position"] = (s["position"] + 1) % INT_MAX
        if timed:
            places.add((s["workload"], s["target"], s["round"], s["position"]))
        if timed and s["status"] == "ok" and not s["warmup"] and meta["primary"] != "wall":
            metrics.setdefault(meta["primary"], 1.0)
        counters = s.get("counters")
        if counters is not None:
            n = len(counters["events"])
            counters["totals"] = (counters["totals"] + [0] * n)[:n]
            for fn in [*counters.get("functions", []), *counters.get("objects", [])]:
                fn[1] = fn[1][:n]
    for a in doc.get("artifacts", []):
        if a.get("sizes") and not a.get("files"):
            a["files"] = ["f"]
    return _consistent_system(doc)


def _consistent_system(doc: Doc) -> Doc:
    """A system run's boots (sysrecords.check_system): under the run's system configuration,
    of the combinations it lists, in their order and each once, of the phases a guest has."""
    boots = doc.get("system_boots") or []
    system = doc["run"]["config"].get("system")
    if boots and system is None:
        doc["system_boots"] = []
        return doc
    for i, b in enumerate(boots):
        b["index"] = i
        b["phases"] = dict(zip(("idle", "load"), (b.get("phases") or {}).values(),
                               strict=False))
        combo = f"{b['kernel']}:{b['userspace']}"
        if combo not in system["combinations"]:
            system["combinations"].append(combo)
    return doc


VALID = record_of(RunDoc).map(consistent)

# --------------------------------------------------------------------------- where fields are


@dataclasses.dataclass(frozen=True)
class Place:
    """A record inside a document: its class, its dictionary and its `$.path`."""

    cls: type
    data: dict[str, Any]
    path: str


def places(value: Any, tp: Any, path: str) -> Iterator[Place]:
    """Every record (an object, not an array) of a document, found by its declared type."""
    if value is None or is_json(tp) or is_json_dict(tp):
        return
    inner = optional_of(tp)[1]
    if isinstance(inner, type) and dataclasses.is_dataclass(inner):
        if as_array(inner):
            return
        yield Place(inner, value, path)
        for f in _plain(inner):
            if f.key in value:
                yield from places(value[f.key], f.type, f"{path}.{f.key}")
    elif get_origin(inner) in (tuple, list):
        for i, x in enumerate(value):
            yield from places(x, get_args(inner)[0], f"{path}[{i}]")
    elif get_origin(inner) is dict:
        for k, x in value.items():
            yield from places(x, get_args(inner)[1], f"{path}{key_part(k)}")


def _fields(doc: Doc, want: Callable[[Field], bool]) -> list[tuple[Place, Field]]:
    return [(p, f) for p in places(doc, RunDoc, "$") for f in _plain(p.cls)
            if f.key in p.data and want(f)]


def _scalar(f: Field) -> Any:
    return optional_of(f.type)[1]


BAD_IDS = ["", ".", "..", "../x", "/etc/passwd", "a b", "x" * 129, "\x1b[2J", "a\nb", "é"]
BAD_TIMES = ["yesterday", "1999-12-31T23:59:59+00:00", "9999-01-01T00:00:00+00:00",
             "2026-13-01T00:00:00", "2026-01-01T00:00:00+00:00 "]


def _wrong(tp: Any) -> Any:
    """A JSON value of another type than `tp` (and not null)."""
    inner = optional_of(tp)[1]
    origin = get_origin(inner)
    if inner is str or origin is Literal:
        return 5
    if inner in (int, float):
        return "1"
    if inner is bool:
        return 1
    if origin in (tuple, list) or (isinstance(inner, type) and as_array(inner)):
        return {"x": 1}
    return [1]


@st.composite
def broken(draw: st.DrawFn) -> tuple[str, Doc, str]:
    """(family, document, the `$.path` the refusal must name)."""
    doc = draw(VALID)
    if doc["samples"] and draw(st.booleans()):  # a timed sample that counts, to duplicate
        doc["samples"][0].update(kind="timed", discarded=None)
        doc = consistent(doc)
    timed = [i for i, s in enumerate(doc["samples"])
             if s.get("kind", "timed") == "timed" and s.get("discarded") is None]
    # The fields each family can break in this document (every field of the right kind).
    fields = {
        "bad id": _fields(doc, lambda f: f.rule.id is not None),
        "bad timestamp": _fields(doc, lambda f: f.rule.time),
        "wrong type": _fields(doc, lambda f: not is_json(f.type) and not is_json_dict(f.type)),
        "missing field": _fields(doc, lambda f: f.required),
        "extreme number": _fields(doc, lambda f: _scalar(f) in (int, float)),
    }
    families = [*(name for name, found in fields.items() if found), "shadowing metric",
                "bad version", *(["duplicate sample"] if timed else [])]
    family = draw(st.sampled_from(families))
    if family == "duplicate sample":
        copy = dict(doc["samples"][draw(st.sampled_from(timed))], status="failed")
        doc["samples"].append(copy)
        return family, doc, f"$.samples[{len(doc['samples']) - 1}].position"
    if family == "bad id":
        place, f = draw(st.sampled_from(fields[family]))
        bad = draw(st.sampled_from(BAD_IDS))
        if get_origin(f.type) in (tuple, list):
            place.data[f.key] = [bad]
            return family, doc, f"{place.path}.{f.key}[0]"
        place.data[f.key] = bad
        return family, doc, f"{place.path}.{f.key}"
    if family == "bad timestamp":
        place, f = draw(st.sampled_from(fields[family]))
        if f.key == "finished" and draw(st.booleans()):
            before = parse_time(doc["run"]["started"]) - timedelta(seconds=1)
            place.data[f.key] = before.isoformat()
        else:
            later = (datetime.now(UTC) + timedelta(days=2)).isoformat()
            place.data[f.key] = draw(st.sampled_from([*BAD_TIMES, later]))
        return family, doc, f"{place.path}.{f.key}"
    if family == "shadowing metric":
        name = draw(st.sampled_from(sorted(BUILTIN_METRICS)))
        own = BUILTIN_METRICS[name]
        if doc["samples"] and draw(st.booleans()):
            i = draw(st.integers(0, len(doc["samples"]) - 1))
            doc["samples"][i]["metrics"][name] = 1.0
            return family, doc, f"$.samples[{i}].metrics.{name}"
        wid = draw(st.sampled_from(sorted(doc["run"]["config"]["workloads"])))
        flipped = "higher" if own.better == "lower" else "lower"
        doc["run"]["config"]["workloads"][wid]["metrics"][name] = draw(st.sampled_from([
            {"unit": own.unit, "better": flipped}, {"unit": "ms", "better": own.better}]))
        return family, doc, f"$.run.config.workloads.{wid}.metrics.{name}"
    if family == "wrong type":
        place, f = draw(st.sampled_from(fields[family]))
        place.data[f.key] = _wrong(f.type)
        return family, doc, f"{place.path}.{f.key}"
    if family == "missing field":
        place, f = draw(st.sampled_from(fields[family]))
        del place.data[f.key]
        return family, doc, f"{place.path}.{f.key}"
    if family == "extreme number":
        place, f = draw(st.sampled_from(fields[family]))
        choices = [10**309] if _scalar(f) is float else [2**63, -(2**63) - 1]
        if f.rule.min is not None:
            choices.append(-1)
        place.data[f.key] = draw(st.sampled_from(choices))
        return family, doc, f"{place.path}.{f.key}"
    doc["version"] = draw(st.sampled_from(["1", 1.0, 2, 0, None, [], {"a": 1}, True, "\x1b[2J"]))
    return family, doc, "$.version"


# --------------------------------------------------------------------------- the properties


def _comparable(doc: Doc) -> Doc:
    """An exported run as it is whatever store holds it: its id, where it was imported from,
    and the run id copied into each sample are the store's."""
    out: Doc = json.loads(json.dumps(doc))
    out["run"]["id"] = ""
    out["run"]["config"].pop("imported", None)
    for s in out["samples"]:
        s["run_id"] = ""
    return out


def check_round_trip(main: Main, doc: Doc, where: Path) -> None:
    first = document(json.loads(json.dumps(doc)), "generated.json").to_dict()
    assert document(json.loads(json.dumps(first)), "again.json").to_dict() == first
    path, out, db = where / "run.json", where / "out.json", str(where / "results.sqlite")
    path.write_text(json.dumps(first))
    code, _, err = main("--db", db, "import", str(path))
    assert code == 0, err
    code, _, err = main("--db", db, "export", "latest", "-o", str(out))
    assert code == 0, err
    assert _comparable(json.loads(out.read_text())) == _comparable(first)


def check_refused(main: Main, family: str, doc: Doc, at: str, where: Path) -> None:
    path, db = where / "bad.json", where / "results.sqlite"
    path.write_text(json.dumps(doc))
    code, _, err = main("--db", str(db), "import", str(path))
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("abibench: error: "), \
        (family, code, err)
    assert f" {at}: " in err, (family, at, err)  # the path of the broken field
    if db.exists():
        assert open_store(str(db), readonly=True).run_ids() == [], family


SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(doc=VALID)
def test_every_valid_document_round_trips_export_import_export(main_in_process: Main,
                                                              doc: Doc) -> None:
    with tempfile.TemporaryDirectory() as where:
        check_round_trip(main_in_process, doc, Path(where))


@settings(SETTINGS, max_examples=120)
@given(case=broken())
def test_every_broken_document_is_refused_in_one_line_and_nothing_stored(
        main_in_process: Main, case: tuple[str, Doc, str]) -> None:
    family, doc, at = case
    with tempfile.TemporaryDirectory() as where:
        check_refused(main_in_process, family, doc, at, Path(where))


def test_latest_is_the_run_stored_last_not_the_latest_date(main_in_process: Main,
                                                           tmp_path: Path) -> None:
    # A run that claims a later date (within the clock skew an import allows) is stored
    # first; the one stored after it is "latest" although its date is earlier.
    db = str(tmp_path / "results.sqlite")
    for name, started in (("later", datetime.now(UTC) + timedelta(minutes=30)),
                          ("earlier", datetime(2020, 1, 1, tzinfo=UTC))):
        doc = consistent({"run": {"id": name, "started": started.isoformat(), "finished": None,
                                  "status": "complete", "tool_version": "0",
                                  "config": {"workloads": {}}},
                          "host": {}, "samples": []})
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
        assert main_in_process("--db", db, "import", str(tmp_path / f"{name}.json"))[0] == 0
    code, out, _ = main_in_process("--db", db, "export", "latest")
    assert code == 0 and json.loads(out)["run"]["id"] == "earlier"
