"""Family: a fast path that reads another way (issue 30), for an exported file. `compare` and
`report` of a FILE read it as columns (store/filecolumns.load_file_columns: the import's
streamed reader asked for fields, a ColumnDoc over them); the definition is `load_file`, every
sample a record. The invariant (docs/reliability.md, "A fast path gives exactly what its
definition gives"): each answer the summary views ask, each whole view, each sample walked,
and each refusal (its class, exit code and line) is the record path's. Documents are
generated: runs of mixed samples (test_columnar's), the import's valid documents, mutated
runs (every runcheck rule bent, strings made hostile), broken documents (bad ids, wrong types,
missing fields, extreme numbers, duplicates, other versions), and texts cut or spoiled.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.codec import Invalid
from abibench.errors import EXIT_STORE_CORRUPT, AbibenchError
from abibench.records import ResultSet, RunDoc, Sample
from abibench.runcheck import sample_checker
from abibench.store import exchange, filecolumns
from abibench.store.batch import Batches
from abibench.store.beside import Beside, started
from abibench.store.columns import ColumnDoc, Columns, load_columns, queried
from abibench.store.exchange import SchemaError, load_file
from abibench.store.filecolumns import load_file_columns
from abibench.store.schema import SAMPLE_FIELDS
from abibench.store.shapes import ShapeDecoder
from abibench.store.sources import _cpus, _Later, _worth, load_sources
from abibench.store.sql import guarded
from tests.documents import HOSTILE, rewrite_strings, synthetic_doc
from tests.hostile.test_stored_numbers import _set, damage
from tests.invariants.test_columnar import SCALE, _answers, _head, _views, samples, stored
from tests.store.test_import_generated import VALID, broken
from tests.store.test_import_rows import _bend, mutated

SETTINGS = settings(max_examples=8 * SCALE, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
Doc = dict[str, Any]


@contextmanager
def written(text: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="abibench-filecols-") as tmp:
        path = Path(tmp) / "run.json"
        path.write_text(text, encoding="utf-8")
        yield path


def _doc_of(ss: list[Sample]) -> Doc:
    """The samples as an exported document holds them, each workload's primary metric the
    wall time (which every sample has: a custom one may be missing, which a file may not)."""
    out: Doc = replace(_head(), samples=tuple(ss)).to_dict()
    for meta in out["run"]["config"]["workloads"].values():
        meta["primary"] = "wall"
    return out


def _read(path: Path, columns: bool) -> RunDoc | tuple[Any, ...]:
    """The document, or its refusal as the command line shows it (class, exit code, line)."""
    try:
        return load_file_columns(path) if columns else load_file(path)
    except AbibenchError as exc:
        return ("refused", type(exc).__name__, exc.exit_code, str(exc))


def _shape(doc: RunDoc) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every workload and target the document names or holds."""
    workloads = {*doc.workloads, *(s.workload for s in doc.samples)}
    targets = {t for m in doc.workloads.values() for t in m.targets}
    targets |= {s.target for s in doc.samples}
    return tuple(sorted(workloads)), tuple(sorted(targets))


def same_reading(text: str) -> str:
    """Read the text both ways and hold them equal; "read" or "refused"."""
    with written(text) as path:
        fast, records = _read(path, True), _read(path, False)
        if not isinstance(records, RunDoc):
            assert fast == records
            return "refused"
        assert isinstance(fast, ColumnDoc)
        assert list(fast.samples) == list(records.samples)
        workloads, targets = _shape(records)
        metrics = sorted({m for s in records.samples for m in s.metrics} | {"wall", "max_rss"})
        assert _answers(fast, targets, workloads, tuple(metrics)) == \
            _answers(records, targets, workloads, tuple(metrics))
        if records.run.config.system is None:  # a system run has its own section
            assert _views([ResultSet(fast, str(path))]) == \
                _views([ResultSet(records, str(path))])
        return "read"


@SETTINGS
@given(ss=samples())
def test_a_file_of_mixed_samples_reads_as_its_records(ss: list[Sample]) -> None:
    assert same_reading(json.dumps(_doc_of(ss))) == "read"


@SETTINGS
@given(doc=mutated())
def test_a_mutated_file_reads_or_is_refused_as_its_records(doc: Doc) -> None:
    same_reading(json.dumps(doc))


@SETTINGS
@given(doc=VALID)
def test_a_generated_document_reads_as_its_records(doc: Doc) -> None:
    same_reading(json.dumps(doc))


@settings(SETTINGS, max_examples=15 * SCALE)
@given(case=broken())
def test_a_broken_document_is_refused_as_the_record_path_refuses_it(
        case: tuple[str, Doc, str]) -> None:
    assert same_reading(json.dumps(case[1])) == "refused"


@st.composite
def spoiled(draw: st.DrawFn) -> str:
    """A valid document's text cut short, or with one character put in or taken out."""
    text = json.dumps(_doc_of(draw(samples())), indent=draw(st.sampled_from([None, 1])))
    at = draw(st.integers(0, len(text)))
    how = draw(st.sampled_from(["cut", "insert", "delete"]))
    if how == "cut":
        return text[:at]
    if how == "insert":
        put: str = draw(st.sampled_from([*',:[]{}"x0-. \\', "NaN", "1e400"]))
        return text[:at] + put + text[at:]
    return text[:at] + text[at + 1:]


@settings(SETTINGS, max_examples=20 * SCALE)
@given(text=spoiled())
def test_a_spoiled_text_reads_or_is_refused_as_its_records(text: str) -> None:
    same_reading(text)


@settings(SETTINGS, max_examples=4 * SCALE)
@given(a=samples(), b=samples())
def test_compare_with_a_file_merges_as_the_records(a: list[Sample], b: list[Sample]) -> None:
    """`compare RUN FILE` and `compare FILE FILE`: the columns' views are the records'."""
    with stored(a) as (store, run_id), written(json.dumps(_doc_of(b))) as path:
        ref = str(path)
        fast = load_sources([run_id, ref, ref], store, columns=True)
        assert fast[1].doc is fast[2].doc  # a file named twice is read once
        records = [ResultSet(store.load_run(run_id), f"run {run_id}"),
                   ResultSet(load_file(path), ref), ResultSet(load_file(path), ref)]
        assert _views(fast) == _views(records)
        assert _views(fast[1:]) == _views(records[1:])
        stored_cols = ResultSet(load_columns(store, run_id), f"run {run_id}")
        assert _views([stored_cols, fast[1]]) == _views(records[:2])


def test_a_file_changed_before_its_samples_are_walked_is_refused() -> None:
    """The records read again from the file are the counted document's or a refusal."""
    doc = synthetic_doc(rounds=2)
    with written(json.dumps(doc)) as path:
        fast = load_file_columns(path)
        assert fast.samples[1] == load_file(path).samples[1]  # the first pass: kept
        fresh = load_file_columns(path)
        doc["samples"][0]["wall_s"] += 1.0
        path.write_text(json.dumps(doc), encoding="utf-8")
        os.utime(path, ns=(1, 1))
        assert fast.samples[1] == load_file(path).samples[1]  # kept: not read again
        with pytest.raises(SchemaError, match="changed while it was read"):
            list(fresh.samples)


def _sample_path_fields(head: RunDoc, items: list[Any]
                        ) -> tuple[list[tuple[Any, ...]], list[str]] | None:
    """Each sample's fields as the sample path gives them (the shape's plan when `quick`
    passes them, else the record's), and its canonical text; None when one is refused."""
    check = sample_checker(head)
    plans = ShapeDecoder(Sample)  # this example's own (the module's holds 64 shapes at most)
    out = []
    for i, x in enumerate(items):
        values = plans.fields(x)
        if values is None or not check.quick(values):
            try:
                record = plans(x)
                check(i, record)
            except Invalid:
                return None
            values = SAMPLE_FIELDS(record)
        out.append(values)
    return out, [exchange._CANONICAL(x) for x in items]


@SETTINGS
@given(doc=mutated())
def test_a_list_read_as_fields_is_the_sample_path_or_no_answer(doc: Doc) -> None:
    """store/batch.py's `Batches.fields` (a file's list of samples, by columns): each sample's
    fields exactly as the sample path gives them (types too: repr), the canonical texts when
    asked; or None, and no place taken. Hostile strings, extremes, missing metrics, keys
    moved or added: `mutated`'s."""
    items = json.loads(json.dumps(doc["samples"]))
    head = exchange.document({**doc, "samples": []}, "f.json")
    want = _sample_path_fields(head, items)
    for texts in (False, True):
        check = sample_checker(head)
        got = Batches().fields(items, check, texts)
        if got is None:
            assert not check._places
            continue
        assert want is not None and got.n == len(items)
        rows = [filecolumns._row(got.columns, j) for j in range(got.n)]
        assert repr(rows) == repr(want[0]) and rows == want[0]
        assert got.texts == (want[1] if texts else None)


@settings(SETTINGS, max_examples=2 * SCALE)
@given(rounds=st.integers(1, 4), hostile=st.booleans(),
       bend=st.sampled_from(["", "other metrics", "error text", "null check", "key order",
                             "optional floats", "negative zero", "unknown key"]))
def test_a_run_as_abibench_writes_it_is_read_by_lists(rounds: int, hostile: bool,
                                                      bend: str) -> None:
    """Not vacuous: a run's file as abibench writes it reaches filecolumns as lists checked
    by columns (`batch.Fields`), every sample of it, and reads as its records."""
    doc = synthetic_doc(rounds=rounds)
    for sample in doc["samples"] if bend else ():
        if bend in ("key order", "optional floats", "unknown key") or sample["round"] % 2:
            _bend(sample, bend)
    if hostile:
        doc = rewrite_strings(doc, lambda s: s + HOSTILE)
    text = json.dumps(doc)
    kinds: list[tuple[str, int]] = []

    def take(head: RunDoc, checked: Iterator[Any]) -> tuple[str, int]:
        kinds.extend((type(x).__name__, getattr(x, "n", 1)) for x in checked)
        return head.run.id, 0
    with written(text) as path:
        exchange.stream_file(path, take, fields=True, digest=False)
    assert {k for k, _ in kinds} == {"Fields"}
    assert sum(n for _, n in kinds) == len(doc["samples"])
    assert same_reading(text) == "read"


# --- Round 8: a stored run's columns read by a second process beside the file (store/beside.py)

def _columns_of(cols: Columns) -> tuple[Any, ...]:
    """Everything a `Columns` holds, values typed (repr) and in their order."""
    return (repr(list(cols.groups.items())), cols.first, cols.targets, cols.others,
            cols.other_ids, cols.total, cols.warmup, cols.failed, cols.rows)


def _refusal(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except AbibenchError as exc:
        return ("refused", type(exc).__name__, exc.exit_code, str(exc))


def _children() -> set[int]:
    """This process's children (by /proc), zombies too: one not reaped is left behind."""
    me, out = str(os.getpid()), set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me:
                out.add(int(entry))
    return out


@settings(SETTINGS, max_examples=10 * SCALE)
@given(ss=samples(), where=st.integers(0, 100), hurt=st.one_of(st.none(), damage()))
def test_a_run_read_beside_is_its_columns_read_here(
        ss: list[Sample], where: int, hurt: tuple[str, str, str] | None) -> None:
    """The child's columns are `queried`'s, every value of the same type in the same place; a
    run `queried` refuses (a stored number that is not finite) gives no columns, and is then
    read, and refused, here."""
    with stored(ss) as (store, run_id):
        if hurt is not None and ss:
            _set(store, run_id, where, hurt[0], hurt[1])
        here = _refusal(lambda: guarded(queried)(store, run_id))
        before = _children()
        got = Beside(store, run_id).columns()
        assert _children() <= before
        if isinstance(here, Columns):
            assert got is not None and _columns_of(got) == _columns_of(here)
        else:
            assert got is None and here[2] == EXIT_STORE_CORRUPT


@settings(SETTINGS, max_examples=8 * SCALE)
@given(a=samples(), b=samples(), where=st.integers(0, 100),
       hurt=st.one_of(st.none(), damage()), text=st.one_of(st.none(), spoiled()))
def test_compare_run_file_beside_answers_and_refuses_as_in_turn(
        a: list[Sample], b: list[Sample], where: int, hurt: tuple[str, str, str] | None,
        text: str | None) -> None:
    """`compare RUN FILE` (and FILE RUN, RUN FILE RUN) with the run read beside the file or in
    turn: the same views, or the same refusal (the first source's that has one: a damaged
    stored run before a broken file is the run's), and no process left."""
    with stored(a) as (store, run_id), \
            written(json.dumps(_doc_of(b)) if text is None else text) as path:
        if hurt is not None and a:
            _set(store, run_id, where, hurt[0], hurt[1])
        before = _children()
        for refs in ([run_id, str(path)], [str(path), run_id], [run_id, str(path), run_id]):
            def read(beside_from: int, refs: list[str] = refs) -> Any:
                return _views(load_sources(refs, store, columns=True, beside_from=beside_from))
            assert _refusal(lambda: read(0)) == _refusal(lambda: read(1 << 62))
        assert _children() <= before


def test_a_run_whose_reader_died_is_read_here() -> None:
    """The second process killed before it gave its columns: the run is read in this process,
    the same document."""
    with stored(synthetic_samples()) as (store, run_id):
        later = _Later(store, run_id)
        assert later._beside is not None and later._beside.pid is not None
        os.kill(later._beside.pid, signal.SIGKILL)
        assert _answers(later.doc()) == _answers(load_columns(store, run_id))


def _interrupted_while_a_child_lives(attempt: Callable[[Callable[[], Any]], Any]) -> None:
    """Run `attempt` until a Ctrl-C (KeyboardInterrupt) lands while a child of this process
    is alive: a timer, armed when the attempt calls the function it is given, has a handler
    that raises it only once it sees one (until then it asks again 2 ms later); an attempt
    that ends first is made again. Then no child is left, not even one unreaped."""
    seen: list[int] = []
    before = _children()

    def interrupt(signum: int, frame: Any) -> None:
        if _children() - before:
            seen.append(1)
            raise KeyboardInterrupt
        signal.setitimer(signal.ITIMER_REAL, 0.002)

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        for _ in range(20):
            try:
                attempt(lambda: signal.setitimer(signal.ITIMER_REAL, 0.002))
            except KeyboardInterrupt:
                break
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, old)
    assert seen and _children() <= before


# An interrupt Python prints as "Exception ignored" (raised inside an at-fork hook, say) is one
# lost: the test fails on it rather than passing on a later attempt.
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_while_the_second_process_reads_stops_it() -> None:
    """Ctrl-C while a stored run is read beside a file (the interrupt anywhere: the file's
    reading, the wait for the child), and while the child alone is waited for: it
    propagates, and the child is killed and reaped."""
    with stored(synthetic_samples(rounds=60)) as (store, run_id), \
            written(json.dumps(synthetic_doc(rounds=60))) as path:
        def compare(arm: Callable[[], Any]) -> None:
            arm()
            load_sources([run_id, str(path)], store, columns=True, beside_from=0)

        def wait(arm: Callable[[], Any]) -> None:  # the interrupt in `columns` (its wait)
            with started():
                beside = Beside(store, run_id)
                arm()
                beside.columns()
        if _cpus() >= 2:  # else load_sources reads in turn: no child to interrupt
            _interrupted_while_a_child_lives(compare)
        _interrupted_while_a_child_lives(wait)


def synthetic_samples(rounds: int = 3) -> list[Sample]:
    return list(RunDoc.from_dict(synthetic_doc(rounds=rounds)).samples)


def test_a_run_is_read_beside_only_when_the_file_hides_it() -> None:
    """`_worth`: a run of at most `most` samples (any for None, none for -1), counted."""
    ss = synthetic_samples()
    with stored(ss) as (store, run_id):
        assert _worth(store, run_id, len(ss)) and not _worth(store, run_id, len(ss) - 1)
        assert _worth(store, run_id, None) and not _worth(store, run_id, -1)
