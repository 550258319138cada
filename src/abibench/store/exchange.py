"""Reading other people's results: a JSON run document, checked before anything uses it.

An imported file is data, never code: it is parsed with :func:`json.loads` (no pickle, no eval,
no YAML tags), every field the reports and the statistics read is checked for its type, and the
artifact paths and commands it mentions are only ever displayed, never run. A file that fails a
check is refused with one line naming the file, the place in it and what is wrong (exit code 2).

The document is the one ``abibench export`` writes (``"format": "abibench-run"``,
``"version": 1``); unknown extra keys are allowed so that later minor additions still import.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..files import NotRegular, TooLarge, read_regular
from ..records import (
    DESIGNS,
    EXPORT_FORMAT,
    EXPORT_VERSION,
    JSONDict,
    RunDoc,
    RunWarning,
    TargetStatus,
)
from .sql import SqlStore

MAX_FILE_BYTES = 256 << 20  # a run of thousands of samples is a few MB; refuse absurd inputs


class SchemaError(UsageError):
    """The file is not a valid run document; the message names the file, the field and the fix."""


Check = Callable[[Any, str], None]

_FIX = "write the file with `abibench export RUN -o FILE`"


def _describe(value: Any) -> str:
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


class _Invalid(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def _expect(ok: bool, path: str, what: str, value: Any) -> None:
    if not ok:
        raise _Invalid(path, f"expected {what}, found {_describe(value)}")


def _str(value: Any, path: str) -> None:
    _expect(isinstance(value, str), path, "a string", value)


# The store keeps whole numbers as SQLite INTEGER, a signed 64-bit number; JSON has no limit.
INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1


def _int(value: Any, path: str) -> None:
    _expect(isinstance(value, int) and not isinstance(value, bool), path, "a whole number", value)
    if not INT_MIN <= value <= INT_MAX:
        raise _Invalid(path, "expected a whole number within ±2**63 (a 64-bit integer)")


def _num(value: Any, path: str) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    _expect(ok, path, "a number", value)
    # An int beyond 1.8e308 has no float (math.isfinite would raise OverflowError on it).
    if abs(value) > sys.float_info.max or not math.isfinite(value):
        raise _Invalid(path, "expected a finite number")


def _not_negative(check: Check) -> Check:
    """A quantity that cannot be below 0 (a time, a size, a peak RSS, a count)."""
    def run(value: Any, path: str) -> None:
        check(value, path)
        if value < 0:
            raise _Invalid(path, f"expected a number >= 0, found {value}: it cannot be negative")
    return run


_COUNT = _not_negative(_int)
_AMOUNT = _not_negative(_num)


def _POSITIVE_COUNT(value: Any, path: str) -> None:
    _int(value, path)
    if value < 1:
        raise _Invalid(path, f"expected a whole number >= 1, found {value}")


def _bool(value: Any, path: str) -> None:
    _expect(isinstance(value, bool), path, "true or false", value)


def _any(value: Any, path: str) -> None:
    return None


def _opt(check: Check) -> Check:
    def run(value: Any, path: str) -> None:
        if value is not None:
            check(value, path)
    return run


def _enum(*allowed: str) -> Check:
    def run(value: Any, path: str) -> None:
        if value not in allowed:
            raise _Invalid(path, f"expected one of {', '.join(allowed)}, found {value!r:.40}")
    return run


def _list(item: Check) -> Check:
    def run(value: Any, path: str) -> None:
        _expect(isinstance(value, list), path, "a list", value)
        for i, v in enumerate(value):
            item(v, f"{path}[{i}]")
    return run


def _map(item: Check) -> Check:
    def run(value: Any, path: str) -> None:
        _expect(isinstance(value, dict), path, "an object", value)
        for k, v in value.items():
            item(v, f"{path}.{k}")
    return run


def _obj(required: dict[str, Check], optional: dict[str, Check] | None = None) -> Check:
    def run(value: Any, path: str) -> None:
        _expect(isinstance(value, dict), path, "an object", value)
        for key, check in required.items():
            if key not in value:
                raise _Invalid(f"{path}.{key}", "is missing")
            check(value[key], f"{path}.{key}")
        for key, check in (optional or {}).items():
            if key in value:
                check(value[key], f"{path}.{key}")
    return run


_METRIC = _obj({"unit": _str, "better": _enum("higher", "lower")})
_WORKLOAD = _obj({"primary": _str, "metrics": _map(_METRIC), "targets": _list(_str)},
                 {"title": _str, "params": _map(_any), "seeds": _list(_str),
                  "validates": _opt(_bool), "no_validation": _opt(_str)})
_RUN = _obj({"id": _str, "started": _str, "finished": _opt(_str), "status": _str,
             "tool_version": _str,
             "config": _obj({"workloads": _map(_WORKLOAD)},
                            {"cflags": _list(_str), "abis": _list(_str), "cc": _opt(_str),
                             "plan": _map(_any)})})
_HOST = _obj({}, {
    "hostname": _opt(_str), "cpu_model": _opt(_str), "cpus_online": _opt(_COUNT),
    "machine": _opt(_str), "kernel_release": _opt(_str), "kernel_version": _opt(_str),
    "kernel_bits": _opt(_int), "kernel_x32": _opt(_str), "governor": _opt(_str),
    "virtualization": _opt(_str), "mem_total_kb": _opt(_COUNT),
    "load_average": _opt(_list(_num)), "libc": _opt(_str), "compilers": _opt(_map(_str)),
    "python": _opt(_str), "os_release": _opt(_str)})
_SIZES = _map(_map(_opt(_COUNT)))
_ARTIFACT = _obj({"workload": _str, "target": _str},
                 {"cached": _bool, "files": _list(_str), "sizes": _SIZES, "cflags": _list(_str),
                  "abi_flags": _list(_str), "commands": _list(_str),
                  "compiler_version": _opt(_str), "effective": _map(_str),
                  "build_seconds": _opt(_AMOUNT), "source_version": _opt(_str),
                  "source_package": _opt(_str), "digests": _map(_str)})
_STATUS = _obj({"workload": _str, "target": _str, "state": _str, "reason": _opt(_str)})
_WARNING = _obj({"workload": _opt(_str), "target": _opt(_str), "message": _str})
_OUTCOME = _obj({"rounds": _int, "stop_reason": _str})
# What cachegrind counted (optional: older runs and timed samples have none). Counts are
# whole numbers >= 0; functions are [name, [counts]] pairs.
def _function(value: Any, path: str) -> None:
    _expect(isinstance(value, list) and len(value) == 2, path, "a [name, [counts]] pair", value)
    _str(value[0], f"{path}[0]")
    _list(_COUNT)(value[1], f"{path}[1]")


_COUNTERS = _obj({"events": _list(_str), "totals": _list(_COUNT)},
                 {"functions": _list(_function), "attempts": _list(_COUNT), "agreed": _bool,
                  "simulation": _enum("insn", "cache"), "cache": _list(_str)})
_SAMPLE = _obj({"workload": _str, "target": _str, "round": _int, "position": _int,
                "warmup": _bool, "status": _str, "exit_code": _int, "wall_s": _AMOUNT,
                "user_s": _AMOUNT, "sys_s": _AMOUNT, "max_rss_kb": _COUNT,
                "stdout_digest": _str, "check": _opt(_str), "metrics": _map(_num)},
               {"run_id": _str, "error": _opt(_str), "started_at": _str, "env_pad": _int,
                "instructions": _opt(_COUNT), "kind": _enum("timed", "counters", "baseline"),
                "discarded": _opt(_str), "minflt": _opt(_COUNT), "majflt": _opt(_COUNT),
                "counters": _opt(_COUNTERS), "design": _enum(*DESIGNS), "cpu": _opt(_COUNT),
                "repeat": _POSITIVE_COUNT, "foreign_cpu_s": _opt(_AMOUNT),
                "steal_s": _opt(_AMOUNT), "covariate": _opt(_AMOUNT),
                "tree_peak_rss_kb": _opt(_COUNT), "tree_memory": _opt(_str), "emulated": _bool,
                "clock_mhz": _opt(_AMOUNT), "temp_c": _opt(_num), "throttled": _opt(_COUNT)})
_DOC = _obj({"format": _str, "version": _any, "run": _RUN, "host": _HOST,
             "samples": _list(_SAMPLE)},
            {"artifacts": _list(_ARTIFACT), "target_status": _list(_STATUS),
             "warnings": _list(_WARNING), "outcomes": _map(_OUTCOME)})

_BUILTIN_METRICS = ("wall", "user", "sys", "max_rss", "tree_peak_rss")


def check_version(doc: Any, source: str) -> None:
    """The first thing checked, so a file of another version gets that message, not a field error."""
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else None
        shown = f"format {found!r:.40}" if found is not None else "no \"format\": \"abibench-run\""
        raise SchemaError(f"{source}: not an abibench run document ({shown}): {_FIX}")
    version = doc.get("version")
    if version == EXPORT_VERSION and not isinstance(version, bool):
        return
    if isinstance(version, int) and not isinstance(version, bool) and version > EXPORT_VERSION:
        raise SchemaError(f"{source}: schema version {version} was written by a newer abibench; "
                          f"this one reads version {EXPORT_VERSION}: upgrade abibench to import it")
    raise SchemaError(f"{source}: schema version {version!r:.20} is not supported (this abibench "
                      f"reads version {EXPORT_VERSION}): {_FIX} with a current abibench")


def validate(doc: Any, source: str) -> dict[str, Any]:
    """Check a parsed document; return it typed as a dict or raise SchemaError (one line)."""
    check_version(doc, source)
    try:
        _DOC(doc, "$")
        _check_references(doc)
    except _Invalid as exc:
        raise SchemaError(f"{source}: {exc.path}: {exc.message}: {_FIX}") from None
    out: dict[str, Any] = doc
    return out


def document(doc: object, source: str) -> RunDoc:
    """A run document given as data (parsed JSON): checked, then typed."""
    return RunDoc.from_dict(validate(doc, source))


def _check_references(doc: dict[str, Any]) -> None:
    """What the statistics rely on beyond types: samples belong to declared workloads/targets."""
    workloads = doc["run"]["config"]["workloads"]
    for wid, meta in workloads.items():
        if meta["primary"] not in meta["metrics"] and meta["primary"] not in _BUILTIN_METRICS:
            raise _Invalid(f"$.run.config.workloads.{wid}.primary",
                           f"metric {meta['primary']!r:.40} is not declared in its metrics")
    for i, s in enumerate(doc["samples"]):
        meta = workloads.get(s["workload"])
        if meta is None:
            raise _Invalid(f"$.samples[{i}].workload",
                           f"workload {s['workload']!r:.40} is not in run.config.workloads")
        if s["target"] not in meta["targets"]:
            raise _Invalid(f"$.samples[{i}].target",
                           f"target {s['target']!r:.40} is not one of the workload's targets")
        counters = s.get("counters")
        if counters is not None:
            n = len(counters["events"])
            if len(counters["totals"]) != n:
                raise _Invalid(f"$.samples[{i}].counters.totals",
                               f"expected one total per event ({n}), found {len(counters['totals'])}")
            for j, fn in enumerate(counters.get("functions", [])):
                if len(fn[1]) > n:
                    raise _Invalid(f"$.samples[{i}].counters.functions[{j}]",
                                   f"expected at most one count per event ({n})")
        primary = meta["primary"]
        counted = s["status"] == "ok" and not s["warmup"] and s.get("kind", "timed") == "timed"
        if counted and primary not in _BUILTIN_METRICS and primary not in s["metrics"]:
            raise _Invalid(f"$.samples[{i}].metrics",
                           f"the primary metric {primary!r:.40} is missing from a counted sample")
    for i, a in enumerate(doc.get("artifacts", [])):
        if a.get("sizes") and not a.get("files"):
            raise _Invalid(f"$.artifacts[{i}].files", "is missing or empty although sizes are given")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def load_file(path: Path) -> RunDoc:
    """Read and validate one exported run document."""
    return RunDoc.from_dict(load_file_dict(path))


def load_file_dict(path: Path) -> dict[str, Any]:
    """Read and validate one exported run document, as its dictionary form."""
    source = str(path)
    try:
        # A FIFO or a device (/dev/zero) is refused, not read forever.
        raw = read_regular(path, MAX_FILE_BYTES)
    except TooLarge as exc:
        raise SchemaError(f"{source}: {exc.size >> 20} MiB is larger than the "
                          f"{MAX_FILE_BYTES >> 20} MiB an abibench run document can be: pass the "
                          "exported run file") from None
    except NotRegular as exc:
        raise UsageError(f"{source}: is {exc.strerror}: pass a JSON file written by "
                         "`abibench export`") from None
    except FileNotFoundError:
        raise UsageError(f"{source}: no such file: pass a file written by `abibench export`") \
            from None
    except IsADirectoryError:
        raise UsageError(f"{source}: is a directory: pass a JSON file written by `abibench export`") \
            from None
    except OSError as exc:
        raise UsageError(f"{source}: cannot read it ({exc.strerror}): check the path and its "
                         "permissions") from None
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise SchemaError(f"{source}: not UTF-8 text: {_FIX}") from None
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{source}: not valid JSON (line {exc.lineno} column {exc.colno}: "
                          f"{exc.msg}): {_FIX}") from None
    except ValueError as exc:  # NaN / Infinity
        raise SchemaError(f"{source}: {exc}: {_FIX}") from None
    except RecursionError:
        raise SchemaError(f"{source}: nested too deeply to be a run document: {_FIX}") from None
    return validate(doc, source)


def digest(doc: dict[str, Any]) -> str:
    """Content digest of a run document (independent of key order and whitespace)."""
    canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()


@dataclass(frozen=True)
class Imported:
    run_id: str
    new: bool  # False: the same document was already in the database
    samples: int


def _existing(store: SqlStore, doc: RunDoc, want: str) -> str | None:
    """The id under which exactly this document is already stored, if any."""
    base = doc.run.id
    for rid in store.run_ids():
        if rid != base and not rid.startswith(f"{base}-i"):
            continue
        stored = store.load_run(rid)
        note = stored.run.config.extra.get("imported")
        if isinstance(note, dict) and note.get("digest") == want:
            return rid
        if rid == base and digest(_without_import_note(stored)) == want:
            return rid
    return None


def _without_import_note(doc: RunDoc) -> dict[str, Any]:
    config = replace(doc.run.config, extra={k: v for k, v in doc.run.config.extra.items()
                                            if k != "imported"})
    return replace(doc, run=replace(doc.run, config=config)).to_dict()


def import_doc(store: SqlStore, doc: RunDoc, source: str) -> Imported:
    """Store a validated run document; never overwrites: a clashing id gets a suffix -iN."""
    want = digest(doc.to_dict())
    found = _existing(store, doc, want)
    if found is not None:
        return Imported(found, False, len(doc.samples))
    ids = set(store.run_ids())
    base = doc.run.id
    run_id = base
    n = 1
    while run_id in ids:
        run_id = f"{base}-i{n}"
        n += 1
    note: JSONDict = {"file": Path(source).name, "original_id": base, "digest": want,
            "imported_at": datetime.now(UTC).isoformat(timespec="seconds")}
    config = replace(doc.run.config, extra={**doc.run.config.extra, "imported": note})
    run = replace(doc.run, id=run_id, config=config)
    with store.transaction():
        store.create_run(run, doc.host, owned=False)  # nobody here writes an imported run
        for a in doc.artifacts:
            store.add_artifact(run_id, a)
        for st in doc.statuses:
            store.set_target_status(run_id, TargetStatus(st.workload, st.target, st.state,
                                                         st.reason))
        for w in doc.warnings:
            store.add_warning(run_id, RunWarning(w.message, w.workload, w.target))
        for wid, o in doc.outcomes.items():
            store.set_outcome(run_id, wid, o)
        for s in doc.samples:
            store.add_sample(replace(s, run_id=run_id))
    return Imported(run_id, True, len(doc.samples))
