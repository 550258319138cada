"""The shared PostgreSQL store when things go wrong, for real (a throw-away cluster,
tests/servers.py): a server out of reach or lost mid-run, an upload cut short, a wrong
password, text PostgreSQL cannot hold, a URL where a file was expected. Nothing measured is lost,
every error is one line, and no password is ever shown."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from abibench.abi import parse_abi_list
from abibench.errors import EXIT_STORE_UNREACHABLE, EXIT_USAGE, UsageError
from abibench.records import (
    HostContext,
    Outcome,
    Run,
    RunDoc,
    RunWarning,
    Sample,
    TargetStatus,
)
from abibench.run.schedule import Plan
from abibench.run.suite import Request, measure_suite
from abibench.store.exchange import import_doc, validate
from abibench.store.open import open_store
from abibench.store.postgres import PgStore
from abibench.store.spool import SpoolingSink, push, spool_path
from abibench.store.sql import SqlStore
from abibench.store.sqlite import Store
from abibench.store.url import redact, safe_url
from abibench.workloads.profile import load_workloads

from ..servers import PgCluster, free_port

Main = Callable[..., tuple[int, str, str]]
ErrorLine = Callable[[int, str, int], str]
FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own data directory (where the spool lives)."""
    monkeypatch.setenv("ABIBENCH_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


def _count(url: str, run_id: str) -> tuple[int, int]:
    """(samples, distinct row numbers) of a run, straight from the server."""
    with psycopg.connect(url) as db:
        row = db.execute("SELECT COUNT(*), COUNT(DISTINCT seq) FROM samples WHERE run_id=%s",
                         (run_id,)).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_credentials_from_pgpassfile_and_never_shown(pg_server: PgCluster, pg_url: str,
                                                     tmp_path: Path, data: Path,
                                                     main_in_process: Main,
                                                     error_line: ErrorLine,
                                                     make_doc: Callable[..., Any],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    password = pg_server.password
    bare = pg_url.replace(f":{password}@", "@")
    assert password not in bare and safe_url(pg_url) == bare == redact(pg_url).replace(
        ":***@", "@")
    monkeypatch.setenv("PGPASSFILE", str(pg_server.write_pgpass(tmp_path / "pgpass")))
    code, out, err = main_in_process("--db", bare, "runs")
    assert "holds no abibench results" in error_line(code, err, EXIT_USAGE)  # nothing written yet
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(make_doc()))
    assert main_in_process("--db", bare, "import", str(doc))[0] == 0
    code, out, err = main_in_process("--db", bare, "runs", "--json")
    assert (code, len(json.loads(out))) == (0, 1), err
    monkeypatch.setenv("ABIBENCH_DB", bare)  # the same without --db
    assert main_in_process("runs")[0] == 0
    monkeypatch.delenv("PGPASSFILE")
    wrong = pg_url.replace(password, "not-" + password)
    code, out, err = main_in_process("--db", wrong, "runs")
    line = error_line(code, err, EXIT_USAGE)
    assert "refused the login" in line and password not in line and "not-" not in line


def test_unreachable_server(data: Path, main_in_process: Main, error_line: ErrorLine) -> None:
    url = f"postgresql://nobody:secret-pw@127.0.0.1:{free_port('127.0.0.1')}/nowhere"
    for args in (["runs"], ["export"], ["compare", "a", "b"], ["import", "x.json"], ["push"]):
        code, _, err = main_in_process("--db", url, *args)
        if args == ["push"]:  # nothing was ever spooled for it: nothing to do
            assert code == 0, err
            continue
        line = error_line(code, err, EXIT_STORE_UNREACHABLE)
        assert "cannot be reached" in line and "secret-pw" not in line
        assert "postgresql://nobody@127.0.0.1:" in line


def _spin_request(rounds: int) -> Request:
    return Request(workloads=load_workloads([str(FIXTURES / "spin.toml")], None,
                                            {"millions": "1"}),
                   abis=parse_abi_list("x86_64"), plan=Plan(min_rounds=1, fixed_rounds=rounds,
                                                            warmup=1))


def test_server_stopped_mid_run_every_sample_uploaded_exactly_once(
        pg_server: PgCluster, pg_url: str, data: Path, shared_cache: Path,
        main_in_process: Main, error_line: ErrorLine) -> None:
    notices: list[str] = []
    seen: list[Sample] = []
    sink = SpoolingSink(pg_url, notices.append)

    def on_sample(s: Sample) -> None:
        seen.append(s)
        if len(seen) == 6:  # stored on both sides; now the server goes away
            pg_server.stop()

    try:
        result = measure_suite(_spin_request(30), sink, shared_cache, lambda _: None, on_sample)
        assert sink.spooling and len(notices) == 1, notices  # said once
        assert "cannot be reached" in notices[0] and "abibench --db" in notices[0]
        assert pg_server.password not in notices[0]
        doc = sink.load_run(result.run_id)  # the whole run, from the spool
        assert doc.run.status == "complete" and len(doc.samples) == 31 == len(seen)
    finally:
        sink.close()
        pg_server.start()
    # The server got the samples before it stopped; the spool has the whole run.
    before, _ = _count(pg_url, result.run_id)
    assert 6 <= before < 31
    spool = Store(spool_path(pg_url))
    assert [r.samples for r in spool.runs()] == [31]
    spool.close()

    code, out, err = main_in_process("--db", pg_url, "push")
    assert code == 0 and f"pushed run {result.run_id}" in out, err
    assert f"{31 - before} new samples of 31" in out
    assert _count(pg_url, result.run_id) == (31, 31)  # every sample, each exactly once
    code, out, err = main_in_process("--db", pg_url, "push")
    assert code == 0 and "nothing to push" in out, err
    assert _count(pg_url, result.run_id) == (31, 31)
    store = open_store(pg_url, readonly=True)
    stored = store.load_run(result.run_id)
    store.close()
    assert stored.run.status == "complete" and stored.samples == doc.samples


def test_an_upload_repeated_or_cut_short_stores_each_row_once(pg_url: str, tmp_path: Path,
                                                              make_doc: Callable[..., Any]) -> None:
    spool = Store(tmp_path / "spool.sqlite")
    run_id = import_doc(spool, RunDoc.from_dict(make_doc(rounds=4)), "x.json").run_id
    spool.discard_samples(run_id, "alpha", [2], "cut short")
    remote = PgStore(pg_url)
    # The live writer got the run and some rows through before the server went away.
    remote.put_rows("runs", spool.rows("runs", run_id))
    remote.put_rows("samples", spool.rows("samples", run_id)[:7])
    rows = {t: spool.rows(t, run_id) for t in ("artifacts", "samples", "outcomes")}
    first = push(spool, remote)
    assert first[0].new_samples == len(rows["samples"]) - 7
    for table, table_rows in rows.items():  # an upload that died after its commit, again
        assert remote.put_rows(table, table_rows) == 0
    assert spool.runs() == [] and push(spool, remote) == []
    assert remote.load_run(run_id).samples == RunDoc.from_dict(
        make_doc(rounds=4)).samples[:0] + tuple(remote.load_run(run_id).samples)
    assert len(remote.load_run(run_id).counted("alpha")) == 6  # the discarded round stays out
    assert remote.load_run(run_id).host == HostContext.from_dict(make_doc()["host"])
    remote.close()
    spool.close()


def test_unreachable_from_the_start_spools_the_whole_run(data: Path, shared_cache: Path) -> None:
    url = f"postgresql://u@127.0.0.1:{free_port('127.0.0.1')}/db"
    notices: list[str] = []
    sink = SpoolingSink(url, notices.append)
    try:
        result = measure_suite(_spin_request(3), sink, shared_cache, lambda _: None)
        assert len(notices) == 1 and sink.load_run(result.run_id).run.status == "complete"
    finally:
        sink.close()
    spool = Store(spool_path(url))
    assert [(r.id, r.samples) for r in spool.runs()] == [(result.run_id, 4)]
    spool.close()
    assert os.environ["ABIBENCH_DATA"] in str(spool_path(url))


@pytest.mark.parametrize("url", [
    "postgresql://someone:s3cret@127.0.0.1:1/results",
    "postgresql:/someone:s3cret@127.0.0.1:1/results",  # as pathlib folds it
    "sqlite:///results.sqlite", "mysql://someone:s3cret@db.example/results"])
def test_a_url_is_never_a_file(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               main_in_process: Callable[..., tuple[int, str, str]],
                               error_line: Callable[[int, str, int], str]) -> None:
    """Made into a path, a URL would become directories named after its user, password and
    host in the current directory, and a SQLite file named after its database."""
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("ABIBENCH_DATA", str(tmp_path / "data"))
    for readonly in (False, True):
        with pytest.raises(UsageError, match="is a URL") as refused:
            Store(Path(url), readonly=readonly)
        assert "s3cret" not in str(refused.value)
    if not url.startswith("postgresql://"):  # a server URL proper goes to the server
        doc = tmp_path / "doc.json"
        doc.write_text("{}")
        for args in (["runs"], ["import", str(doc)], ["run", "--workload", "nothing"],
                     ["compare", str(doc), str(doc)]):
            code, _, err = main_in_process("--db", url, *args)
            assert "s3cret" not in error_line(code, err, EXIT_USAGE)
    assert list(here.iterdir()) == []


def test_a_nul_character_never_fails_a_write(open_db: Callable[..., SqlStore], db_ref: str,
                                            make_doc: Callable[..., dict[str, Any]],
                                            make_run: Callable[..., Run],
                                            make_sample: Callable[..., Sample]) -> None:
    """A program may print NUL into what its check value captures, and an imported document
    may hold one; PostgreSQL's text cannot, so it keeps U+FFFD there (SQLite keeps the NUL)."""
    store = open_db()
    store.create_run(make_run("r1"), HostContext(hostname="h\x00st"))
    store.add_sample(make_sample("r1", check="sum=\x00\x01"))
    store.add_warning("r1", RunWarning("it said \x00", "w", "i386"))
    store.set_target_status("r1", TargetStatus("w", "i386", "failed", "why\x00"))
    store.set_outcome("r1", "w", Outcome(1, "stop\x00"))
    kept = "\ufffd" if db_ref.startswith("postgresql://") else "\x00"
    doc = store.load_run("r1")
    assert doc.host.hostname == "h\x00st"  # inside JSON, escaped: kept as it was
    assert doc.samples[0].check == f"sum={kept}\x01"
    assert doc.warnings[0].message == f"it said {kept}"
    assert doc.statuses[0].reason == f"why{kept}"
    assert doc.outcomes["w"].stop_reason == f"stop{kept}"
    raw = make_doc(run_id="imported")
    raw["samples"][0]["check"] = "x\x00y"
    imported = import_doc(store, RunDoc.from_dict(validate(raw, "nul.json")), "nul.json")
    assert store.load_run(imported.run_id).samples[0].check == f"x{kept}y"
