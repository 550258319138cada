"""Reading other people's results: a JSON run document, checked before anything uses it.

An imported file is data, never code: it is parsed with :func:`json.loads` (no pickle, no eval,
no YAML tags), every field the reports and the statistics read is checked for its type, and the
artifact paths and commands it mentions are only ever displayed, never run. A file that fails a
check is refused with one line naming the file, the place in it and what is wrong (exit code 2).

The document is the one ``abibench export`` writes (``"format": "abibench-run"``,
``"version": 1``); unknown extra keys are allowed so that later minor additions still import.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..codec import Invalid, decoder
from ..errors import UsageError
from ..files import NotRegular, TooLarge, open_regular, read_regular
from ..jsontext import canonical, encoder
from ..records import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    JSONDict,
    Run,
    RunDoc,
    RunWarning,
    Sample,
    TargetStatus,
)
from ..runcheck import check_document, sample_checker
from ..text import may_spell_surrogate, not_text
from .batch import Batches, Fields, Rows, Single
from .gcpause import paused_collector
from .jsonstream import NotText, ObjectStream, StreamError, TooBig
from .rowstream import export_dicts
from .schema import SAMPLE_FIELDS
from .shapes import ShapeDecoder
from .sql import SqlStore

# An exported document is read as it streams (store/jsonstream.py): its size is bounded per
# sample and by the count of samples, not by the file's size (10^6 samples are 511 MiB).
MAX_FILE_BYTES = 256 << 20  # everything but the samples; and a file that is not a JSON object
MAX_SAMPLE_BYTES = 16 << 20  # one sample's JSON text
MAX_SAMPLES = 10_000_000


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
    """Read and validate one exported run document (its samples held as records, never its
    text: a document of 10^6 samples is read in the memory of their records)."""
    samples: list[Sample] = []

    def keep(head: RunDoc, checked: Iterator[Sample]) -> tuple[str, int]:
        samples.extend(checked)
        return head.run.id, len(samples)
    read = _stream(path, keep, digest=False)  # nothing here checks one
    if read.doc is None:
        return document(read.whole, read.source)
    return replace(read.doc, samples=tuple(samples))


def load_file_dict(path: Path) -> dict[str, Any]:
    """Read and validate one exported run document, as its dictionary form."""
    source, doc = _read(path)
    return validate(doc, source)


@contextlib.contextmanager
def _opening(source: str) -> Iterator[None]:
    """A file that cannot be read as a document: one line naming it and the fix."""
    try:
        yield
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


_NOT_JSON = (StreamError, TooBig, UnicodeDecodeError, RecursionError, ValueError)


_NOT_TEXT = ("a string holds a lone surrogate (a \\uD800-\\uDFFF escape without its pair), "
             "which is not text")


def _not_json(source: str, exc: BaseException) -> SchemaError:
    """Text that is not a JSON document, as `json.loads` would find it: one line."""
    if isinstance(exc, NotText):
        return SchemaError(f"{source}: line {exc.lineno} column {exc.colno}: {_NOT_TEXT}: {_FIX}")
    if isinstance(exc, StreamError):
        return SchemaError(f"{source}: not valid JSON (line {exc.lineno} column {exc.colno}: "
                           f"{exc.msg}): {_FIX}")
    if isinstance(exc, TooBig):
        return SchemaError(f"{source}: {exc.what} is larger than the {exc.limit >> 20} MiB an "
                           f"abibench run document allows: {_FIX}")
    if isinstance(exc, UnicodeDecodeError):
        return SchemaError(f"{source}: not UTF-8 text: {_FIX}")
    if isinstance(exc, RecursionError):
        return SchemaError(f"{source}: nested too deeply to be a run document: {_FIX}")
    return SchemaError(f"{source}: {exc}: {_FIX}")  # NaN / Infinity


@contextlib.contextmanager
def _parsing(source: str) -> Iterator[None]:
    """`_not_json` of what the block raises (a loop over 10^6 samples calls `_next` instead:
    a context manager a sample cost more than a microsecond)."""
    try:
        yield
    except _NOT_JSON as exc:
        raise _not_json(source, exc) from None


def _next(items: Iterator[Any], source: str) -> Any:
    """The next item of a streamed array (`_END` after the last), as `_parsing` would read it."""
    try:
        return next(items, _END)
    except _NOT_JSON as exc:
        raise _not_json(source, exc) from None


def _read(path: Path) -> tuple[str, Any]:
    """The parsed JSON of a file read whole (at most MAX_FILE_BYTES), and the file as messages
    name it."""
    source = str(path)
    with _opening(source):
        # A FIFO or a device (/dev/zero) is refused, not read forever.
        raw = read_regular(path, MAX_FILE_BYTES)
    try:
        text = raw.decode("utf-8")
        doc = json.loads(text, parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise SchemaError(f"{source}: not UTF-8 text: {_FIX}") from None
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{source}: not valid JSON (line {exc.lineno} column {exc.colno}: "
                          f"{exc.msg}): {_FIX}") from None
    except ValueError as exc:  # NaN / Infinity
        raise SchemaError(f"{source}: {exc}: {_FIX}") from None
    except RecursionError:
        raise SchemaError(f"{source}: nested too deeply to be a run document: {_FIX}") from None
    if may_spell_surrogate(text) and not_text(doc):
        raise SchemaError(f"{source}: {_NOT_TEXT}: {_FIX}")
    return source, doc


# --------------------------------------------------------------------------- streamed reading

# What a sample is checked against: the document's head before its samples (abibench writes
# them first); a file with its samples before them has the samples held until the head is read.
_HEAD = frozenset({"format", "version", "run", "host"})
_SAMPLE = ShapeDecoder(Sample)  # the general strict decoder, with a plan per shape
_BATCHES: Batches | None = Batches()  # a list of samples at once, by columns
_END = object()
_HELD_LIST = 2000  # held samples checked this many at a time (about what a scan gives)
# Given a document's checked head and its checked samples (an iterator to read to its end;
# records, or each sample's fields when `_stream(..., fields=True)`): where they went (a run
# id) and how many there were.
Take = Callable[[RunDoc, Iterator[Any]], tuple[str, int]]


@dataclass
class _Read:
    source: str
    doc: RunDoc | None  # the document's checked head (no samples); None: not a JSON object
    whole: Any = None  # ... which was then read whole, as it was
    digest: str = ""
    taken: tuple[str, int] = ("", 0)


def _stream(path: Path, take: Take, fields: bool = False, digest: bool = True,
            storable: bool = True) -> _Read:
    """Read one exported document as it streams: its head checked as a whole document's, each
    sample checked as it comes (codec and runcheck.sample_checker, the same rules) and handed
    to `take`; its digest (unless not wanted: "" then). A file that is not a JSON object is
    read whole, as before. `storable` (with `fields`): the import's storable rows (`batch.Rows`,
    `batch.Single`); without it each sample's field values, one tuple a sample."""
    source = str(path)
    with _opening(source):
        fd = open_regular(path, None)
    with os.fdopen(fd, "rb") as raw:
        stream = ObjectStream(raw, _reject_constant, MAX_SAMPLE_BYTES, MAX_FILE_BYTES)
        with _parsing(source):
            is_object = stream.starts_object()
        if is_object:
            return _members(stream, source, take, fields, _Digest() if digest else _NoDigest(),
                            storable)
    _, whole = _read(path)
    return _Read(source, None, whole)


def _members(stream: ObjectStream, source: str, take: Take, fields: bool,
             parts: _Digest, storable: bool = True) -> _Read:
    head: dict[str, Any] = {}
    taken: tuple[str, int] | None = None
    held: list[Any] | None = None
    later: list[SchemaError] = []  # a sample's refusal, said once the text is known to be JSON
    members = stream.members("samples")
    while True:
        with _parsing(source):
            member = next(members, None)
        if member is None:
            break
        key, value = member
        if key in head or (key == "samples" and (taken is not None or held is not None)):
            # json.loads would keep the last; a streamed sample was checked against the first
            raise SchemaError(f"{source}: $.{key:.40}: given twice: {_FIX}")
        if key != "samples" or not isinstance(value, Iterator):
            head[key] = value
        elif head.keys() >= _HEAD:
            early = document({**head, "samples": []}, source)
            taken = take(early, _checked(value, early, source, parts, later, fields, storable))
        else:
            held = _held(value, stream, source)
    if later:  # a sample was refused; the rest of the text has been read: it is JSON
        raise later[0]
    if taken is not None or held is not None:
        head["samples"] = []
    doc = document(head, source)  # the whole head: what came after the samples too
    if held is not None:
        lists = (held[k:k + _HELD_LIST] for k in range(0, len(held), _HELD_LIST))
        taken = take(doc, _checked(lists, doc, source, parts, later, fields, storable))
    if later:
        raise later[0]
    del head["samples"]
    return _Read(source, doc, digest=parts.of(head), taken=taken or ("", 0))


def _held(batches: Iterator[list[Any]], stream: ObjectStream, source: str) -> list[Any]:
    """Samples that came before the head: kept, within what a whole-file read allowed."""
    out: list[Any] = []
    start = stream.consumed()
    while True:
        with _parsing(source):
            x: Any = next(batches, _END)
        if x is _END:
            return out
        out.extend(x)
        if stream.consumed() - start > MAX_FILE_BYTES:
            raise SchemaError(f"{source}: $.samples: over {MAX_FILE_BYTES >> 20} MiB of samples "
                              f"before the run they belong to: {_FIX}")


def _checked(batches: Iterator[list[Any]], head: RunDoc, source: str, parts: _Digest,
             later: list[SchemaError], fields: bool = False, storable: bool = True
             ) -> Iterator[Any]:
    """Each sample as it is read (the stream gives them in lists), checked as it would be in a
    whole document. The first that is not what a run writes ends the samples: its refusal
    (one line, its `$.samples[i]` path) goes into `later`, and the rest of the array is still
    read, as JSON only, so that text which is not JSON further on is refused as `json.loads`
    refuses it (the whole read decodes before it checks: its syntax error wins over any
    sample's).

    `fields`: the samples as rows to store (`batch.Rows`, `batch.Single`): a whole list at
    once where store/batch.py is sure of it, else each sample's fields (schema.fields_row's),
    made without the record when the shape's plan is sure of them and the checker's `quick`
    rules pass them; any other sample is made and checked as a record, so its refusal is the
    record path's. Without `storable`, the same with a list given as its records' fields by
    column (`batch.Fields`, by the same checks) and a sample as its fields' tuple."""
    check = sample_checker(head)
    quick = check.quick
    plain = _SAMPLE.fields if fields else None
    columns = _BATCHES if fields else None
    i = 0
    while True:
        batch = _next(batches, source)
        if batch is _END:
            return
        if columns is not None and i + len(batch) <= MAX_SAMPLES:
            rows: Rows | Fields | None = columns(batch, check) if storable else \
                columns.fields(batch, check, parts.wanted)
            if rows is not None:
                if rows.texts is not None:
                    parts.add_texts(rows.texts)
                yield rows
                i += rows.n
                continue
        for x in batch:
            if i >= MAX_SAMPLES:
                raise SchemaError(f"{source}: $.samples: more than {MAX_SAMPLES:,} samples, the "
                                  "most a run document can hold: split the run")
            try:
                out: Any = plain(x) if plain is not None else None
                if out is None or not quick(out):
                    try:
                        sample: Sample = _SAMPLE(x)
                    except Invalid as exc:
                        raise exc.at(f"[{i}]").at(".samples") from None
                    check(i, sample)
                    out = SAMPLE_FIELDS(sample) if fields else sample
            except Invalid as exc:
                later.append(SchemaError(f"{source}: {exc.path}: {exc.message}: "
                                         f"{exc.fix or _FIX}"))
                while _next(batches, source) is not _END:
                    pass
                return
            parts.add(x)
            yield Single(out) if fields and storable else out
            i += 1


def stream_file(path: Path, take: Take, fields: bool = False, digest: bool = True
                ) -> tuple[RunDoc, str, tuple[str, int]]:
    """`_stream` for a reader outside this module (store/filecolumns.py): the document's
    checked head (no samples), its digest ("" when not wanted: it is about a third of the
    reading) and what `take` returned, or `load_file`'s refusal of a file that is not a JSON
    object."""
    # The samples' field values (store/filecolumns.py keeps them in columns): `batch.Fields`
    # for a list the import's batch path is sure of, else one tuple a sample; not the import's
    # rows, which are the stored form (metrics as JSON text).
    read = _stream(path, take, fields, digest, storable=False)
    if read.doc is None:
        document(read.whole, read.source)  # not an object: this raises
        raise SchemaError(f"{read.source}: not a run document: {_FIX}")
    return read.doc, read.digest, read.taken


def check_file(path: Path) -> None:
    """Check one exported document as `import` would, storing nothing."""
    read = _stream(path, lambda head, checked: (head.run.id, sum(1 for _ in checked)))
    if read.doc is None:
        document(read.whole, read.source)


_CANON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                         default=str)


# `_CANON.encode`, by a template per shape of sample (jsontext.canonical): the C encoder's
# sorted, small pieces were about 8 us of every sample of an import
_CANONICAL = canonical(default=str)


def digest(doc: dict[str, Any]) -> str:
    """Content digest of a run document (independent of key order and whitespace): the
    canonical JSON of everything but the samples, then of each sample in order. Made of parts
    so that a document read as it streams gets it without being held (`_Digest`)."""
    parts = _Digest()
    for sample in doc.get("samples", []):
        parts.add(sample)
    return parts.of({k: v for k, v in doc.items() if k != "samples"})


class _Digest:
    """The samples' part: the hash of each sample's canonical JSON and a newline, in order. The
    texts are hashed a batch at a time (the same bytes in the same order: the same hash)."""

    _BATCH = 1000
    wanted = True  # the samples' canonical texts are wanted

    def __init__(self) -> None:
        self._samples = hashlib.sha256()
        self._texts: list[str] = []

    def add(self, sample: Any) -> None:
        self._texts.append(_CANONICAL(sample))
        if len(self._texts) >= self._BATCH:
            self._flush()

    def add_texts(self, texts: list[str]) -> None:
        """Samples' canonical texts, made elsewhere (store/batch.py), in order."""
        self._texts.extend(texts)
        if len(self._texts) >= self._BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._texts:
            self._samples.update(("\n".join(self._texts) + "\n").encode())
            self._texts = []

    def of(self, head: dict[str, Any]) -> str:
        self._flush()
        whole = hashlib.sha256(_CANON.encode(head).encode())
        whole.update(b"\n" + self._samples.hexdigest().encode())
        return whole.hexdigest()


class _NoDigest(_Digest):
    """No digest: for a reader that does not check one (the samples are checked the same)."""

    wanted = False

    def add(self, sample: Any) -> None:
        pass

    def add_texts(self, texts: list[str]) -> None:
        pass

    def of(self, head: dict[str, Any]) -> str:
        return ""


@dataclass(frozen=True)
class Imported:
    run_id: str
    new: bool  # False: the same document was already in the database
    samples: int


def _existing(store: SqlStore, doc: RunDoc, want: str, exclude: str = "") -> str | None:
    """The id under which exactly this document is already stored, if any (`exclude`: the run
    an import is writing)."""
    base = doc.run.id
    for rid in store.run_ids():
        if rid == exclude or (rid != base and not rid.startswith(f"{base}-i")):
            continue
        note = store.run_config(rid).get("imported")  # a key the config does not know: extra
        if isinstance(note, dict) and note.get("digest") == want:
            return rid
        if rid == base and note is None and \
                digest(_without_import_note(store.load_run(rid))) == want:
            return rid
    return None


def _without_import_note(doc: RunDoc) -> dict[str, Any]:
    config = replace(doc.run.config, extra={k: v for k, v in doc.run.config.extra.items()
                                            if k != "imported"})
    return replace(doc, run=replace(doc.run, config=config)).to_dict()


def _free_id(store: SqlStore, base: str) -> str:
    """The document's own id, or with a suffix -iN when a run holds it: never overwritten."""
    ids = set(store.run_ids())
    run_id, n = base, 1
    while run_id in ids:
        run_id = f"{base}-i{n}"
        n += 1
    return run_id


def _noted(run: Run, run_id: str, source: str, want: str) -> Run:
    note: JSONDict = {"file": Path(source).name, "original_id": run.id, "digest": want,
                      "imported_at": datetime.now(UTC).isoformat(timespec="seconds")}
    config = replace(run.config, extra={**run.config.extra, "imported": note})
    return replace(run, id=run_id, config=config)


def _store_rest(store: SqlStore, run_id: str, doc: RunDoc) -> None:
    for a in doc.artifacts:
        store.add_artifact(run_id, a)
    for st in doc.statuses:
        store.set_target_status(run_id, TargetStatus(st.workload, st.target, st.state, st.reason))
    for w in doc.warnings:
        store.add_warning(run_id, RunWarning(w.message, w.workload, w.target))
    for wid, o in doc.outcomes.items():
        store.set_outcome(run_id, wid, o)
    for b in doc.system_boots:
        store.add_system_boot(run_id, b)


def import_doc(store: SqlStore, doc: RunDoc, source: str) -> Imported:
    """Store a validated run document; never overwrites: a clashing id gets a suffix -iN."""
    want = digest(doc.to_dict())
    found = _existing(store, doc, want)
    if found is not None:
        return Imported(found, False, len(doc.samples))
    run = _noted(doc.run, _free_id(store, doc.run.id), source, want)
    with store.transaction():
        store.create_run(run, doc.host, owned=False)  # nobody here writes an imported run
        _store_rest(store, run.id, doc)
        store.add_samples(run.id, doc.samples)
    return Imported(run.id, True, len(doc.samples))


class _AlreadyStored(Exception):
    """The document read to its end is one already stored: what was written is rolled back."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id


def import_file(store: SqlStore, path: Path) -> tuple[Imported, RunDoc]:
    """Store an exported document as it is read (store/jsonstream.py): each sample checked
    and written in batches, all of it in one transaction, so a document refused at its last
    sample leaves nothing stored. Returns what was stored and the document's head."""
    source = str(path)

    def write(head: RunDoc, checked: Iterator[Any]) -> tuple[str, int]:
        run = _noted(head.run, _free_id(store, head.run.id), source, "")
        store.create_run(run, head.host, owned=False)  # nobody here writes an imported run
        return run.id, store.add_sample_rows(run.id, checked)  # rows, not records

    read: _Read | None = None
    try:
        with store.transaction(), paused_collector():
            read = _stream(path, write, fields=True)
            if read.doc is None:
                document(read.whole, source)  # not an object: this raises
                raise SchemaError(f"{source}: not a run document: {_FIX}")
            run_id, count = read.taken
            found = _existing(store, read.doc, read.digest, exclude=run_id)
            if found is not None:
                raise _AlreadyStored(found)
            store.set_run_config(run_id, _noted(read.doc.run, run_id, source,
                                                read.digest).config)
            _store_rest(store, run_id, read.doc)
    except _AlreadyStored as stored:
        assert read is not None and read.doc is not None
        return Imported(stored.run_id, False, read.taken[1]), read.doc
    return Imported(run_id, True, count), read.doc


_LINE = encoder(default=str)  # the C encoder, made once: one line a sample
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
    for sample in export_dicts(store, run_id):  # from the rows, never as records
        batch.append("  " + _LINE(sample))
        if len(batch) == _EXPORT_BATCH:
            yield ("" if first else ",\n") + ",\n".join(batch)
            batch, first = [], False
    if batch:
        yield ("" if first else ",\n") + ",\n".join(batch)
    yield "\n ],\n" + after + "\n"
