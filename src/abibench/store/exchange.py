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
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..codec import Invalid, decoder
from ..errors import UsageError
from ..files import NotRegular, TooLarge, read_regular
from ..records import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    JSONDict,
    RunDoc,
    RunWarning,
    TargetStatus,
    check_document,
)
from .sql import SqlStore

MAX_FILE_BYTES = 256 << 20  # a run of thousands of samples is a few MB; refuse absurd inputs


class SchemaError(UsageError):
    """The file is not a valid run document; the message names the file, the field and the fix."""


_FIX = "write the file with `abibench export RUN -o FILE`"


def check_version(doc: Any, source: str) -> None:
    """The first thing checked, so a file of another version gets that message, not a field error."""
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else None
        shown = f"format {found!r:.40}" if found is not None else "no \"format\": \"abibench-run\""
        raise SchemaError(f"{source}: $.format: not an abibench run document ({shown}): {_FIX}")
    version = doc.get("version")
    if type(version) is int and version == EXPORT_VERSION:
        return
    if type(version) is int and version > EXPORT_VERSION:
        raise SchemaError(f"{source}: $.version: schema version {version} was written by a newer "
                          f"abibench; this one reads version {EXPORT_VERSION}: upgrade abibench "
                          "to import it")
    raise SchemaError(f"{source}: $.version: schema version {version!r:.20} is not supported "
                      f"(this abibench reads version {EXPORT_VERSION}): {_FIX} with a current "
                      "abibench")


# The whole document, checked as a fresh run writes it: every type, every identifier, every
# timestamp and quantity, by the rules the records declare (codec.py).
_STRICT = decoder(RunDoc, strict=True)


def document(doc: object, source: str) -> RunDoc:
    """A run document given as data (parsed JSON): checked, then typed; SchemaError (one line
    naming the `$.path` of the field and the fix) when it is not what a run can produce."""
    check_version(doc, source)
    try:
        typed: RunDoc = _STRICT(doc)
        check_document(typed)
    except Invalid as exc:
        raise SchemaError(f"{source}: {exc.path}: {exc.message}: {exc.fix or _FIX}") from None
    return typed


def validate(doc: Any, source: str) -> dict[str, Any]:
    """Check a parsed document; return it typed as a dict or raise SchemaError (one line)."""
    document(doc, source)
    out: dict[str, Any] = doc
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def load_file(path: Path) -> RunDoc:
    """Read and validate one exported run document."""
    source, doc = _read(path)
    return document(doc, source)


def load_file_dict(path: Path) -> dict[str, Any]:
    """Read and validate one exported run document, as its dictionary form."""
    source, doc = _read(path)
    return validate(doc, source)


def _read(path: Path) -> tuple[str, Any]:
    """The parsed JSON of a file, and the file as messages name it."""
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
    return source, doc


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
        store.add_samples(run_id, doc.samples)
        for b in doc.system_boots:
            store.add_system_boot(run_id, b)
    return Imported(run_id, True, len(doc.samples))


_LINE = json.JSONEncoder(default=str)  # the C encoder: one line a sample
_EXPORT_BATCH = 2000  # samples per piece


def export_chunks(store: SqlStore, run_id: str) -> Iterator[str]:
    """The export document of a stored run, in pieces ending with a newline: indented, except
    its samples, each of which is one line. A run holds up to millions of samples; they are
    read from the store one at a time, never held as one document (the indenting encoder took
    885 MB and 8 s for 10^5 of them)."""
    head = RunDoc.from_dict(store.load_run_dict(run_id, with_samples=False)).to_dict()
    text = json.dumps(head, indent=1, default=str)
    mark = '\n "samples": [],\n'  # the top level's (deeper levels are indented further)
    before, found, after = text.partition(mark)
    assert found, "an export document has samples at its top level"
    yield before + '\n "samples": [\n'
    batch: list[str] = []
    first = True
    for sample in store.iter_samples(run_id):
        batch.append("  " + _LINE.encode(sample.to_dict()))
        if len(batch) == _EXPORT_BATCH:
            yield ("" if first else ",\n") + ",\n".join(batch)
            batch, first = [], False
    if batch:
        yield ("" if first else ",\n") + ",\n".join(batch)
    yield "\n ],\n" + after + "\n"
