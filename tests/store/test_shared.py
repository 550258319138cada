"""The shared PostgreSQL store for real: a throw-away cluster (tests/servers.py), the CLI on a
URL, credentials never shown, and nothing lost when the server goes away mid-run."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from abibench.abi import parse_abi_list
from abibench.errors import EXIT_STORE_UNREACHABLE, EXIT_USAGE
from abibench.records import HostContext, Sample
from abibench.run.schedule import Plan
from abibench.run.suite import Request, measure_suite
from abibench.store.open import open_store
from abibench.store.postgres import PgStore
from abibench.store.spool import SpoolingSink, push, spool_path
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


def test_the_cli_on_a_shared_database(pg_url: str, data: Path, main_in_process: Main,
                                      tmp_path: Path,
                                      make_doc: Callable[..., dict[str, Any]]) -> None:
    files = []
    for i, host in enumerate(("alpha-host", "beta-host")):
        f = tmp_path / f"{host}.json"
        f.write_text(json.dumps(make_doc(run_id=f"run{i}", host=host, seed=i)))
        files.append(str(f))
    code, out, err = main_in_process("--db", pg_url, "import", *files)
    assert code == 0, err
    code, out, err = main_in_process("--db", pg_url, "import", files[0])
    assert code == 0 and "already stored" in out, err
    code, out, err = main_in_process("--db", pg_url, "runs", "--json")
    assert code == 0 and [r["id"] for r in json.loads(out)] == ["run0", "run1"], err
    # The server returns exactly what a SQLite file does.
    sqlite = str(tmp_path / "same.sqlite")
    assert main_in_process("--db", sqlite, "import", *files)[0] == 0
    for run_id in ("run0", "run1"):
        code, out, err = main_in_process("--db", pg_url, "export", run_id)
        assert code == 0, err
        docs = [json.loads(out), json.loads(main_in_process("--db", sqlite, "export", run_id)[1])]
        for d in docs:  # the moment of the import is the one thing that differs
            del d["run"]["config"]["imported"]["imported_at"]
        assert docs[0] == docs[1]
    code, out, err = main_in_process("--db", pg_url, "compare", "run0", "run1")
    assert code == 0 and "alpha-host" in out and "beta-host" in out, err
    code, out, err = main_in_process("--db", pg_url, "report", "run0", "--json")
    assert code == 0 and json.loads(out), err
    for output in (out, err):
        assert pg_url.split(":")[2].split("@")[0] not in output  # the password


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
    from abibench.records import RunDoc
    from abibench.store.exchange import import_doc

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
