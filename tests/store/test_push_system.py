"""A push carries every record of a run, each once: a system run's boots too.

The family: a table of a run's records that an upload, a claim or a recovery does not copy (a
system run's boots were such a table: stored locally, never uploaded), or copies twice when
the upload is cut and repeated. The tables are read from a real database's own schema, the
runs and the cuts are generated; the shared store is a real PostgreSQL server (tests/servers.py)
stopped in the middle of a system run.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench import __version__
from abibench.analyse.system import analyse_doc
from abibench.cli.system import resume_plan, system_sink
from abibench.probe.host import capture
from abibench.records import Run, RunConfig, RunWarning
from abibench.report import system as shown
from abibench.run.sysboot import boot_order, parse_combinations, pending_boots
from abibench.store.open import open_store
from abibench.store.spool import UPLOAD_ORDER, SpooledSink, SpoolingSink, push, spool_path
from abibench.store.sql import SqlStore
from abibench.store.sqlite import Store
from abibench.sysrecords import SystemBoot

from ..servers import PgCluster
from ..sysframes import system_boot, system_config

Main = Callable[..., tuple[int, str, str]]
COMBOS = ("amd64:i386", "amd64:x86_64")
RUN_ID = "20261126-183000-5a5b5c5d"


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own data directory (where the spool lives)."""
    monkeypatch.setenv("ABIBENCH_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


def _begin(sink: SqlStore | SpooledSink, boots: int) -> None:
    """A system run as `abibench system run` begins one: its configuration, its warning."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    sink.create_run(Run(RUN_ID, now, None, "running", __version__,
                        RunConfig(system=system_config(COMBOS, boots))), capture())
    sink.add_warning(RUN_ID, RunWarning("emulated: whole systems under QEMU TCG"))


def _boots(n: int) -> list[SystemBoot]:
    return [system_boot(i, COMBOS[i % 2], 300_000 - 1000 * i, complete=i % 3 != 2)
            for i in range(n)]


def test_every_table_of_a_run_is_uploaded(tmp_path: Path) -> None:
    # The tables a real database holds a run's records in, from its own schema: each one is
    # in what a push, a claim and a recovery copy (spool.UPLOAD_ORDER, from schema.COLUMNS).
    store = Store(tmp_path / "fresh.sqlite")
    try:
        tables = [r[0] for r in store.execute(
            "SELECT name FROM sqlite_master WHERE type='table'").fetchall()]
        holding = {t for t in tables if t == "runs" or any(
            c[1] == "run_id" for c in store.execute(f"PRAGMA table_info({t})").fetchall())}
    finally:
        store.close()
    assert "system_boots" in holding and holding <= set(UPLOAD_ORDER), holding - set(UPLOAD_ORDER)
    assert UPLOAD_ORDER[0] == "runs"  # the others refer to it


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 7), st.data())
def test_a_system_run_pushed_after_any_cut_holds_each_boot_once(boots: int,
                                                                data: st.DataObject) -> None:
    # The family: the live writer got any prefix of each table through before the server went
    # away (the cut); then a push, and the same push again from a copy of the spool taken
    # before it (a push whose process died after its commit, before the spool forgot the run).
    work = Path(tempfile.mkdtemp(prefix="abibench-pushsys-"))
    try:
        spool, dest = Store(work / "spool.sqlite"), Store(work / "dest.sqlite")
        _begin(spool, boots)
        for b in _boots(boots):
            spool.add_system_boot(RUN_ID, b)
        spool.finish_run(RUN_ID, "2026-11-26T18:40:00+00:00", "complete")
        rows = {t: spool.rows(t, RUN_ID) for t in UPLOAD_ORDER}
        dest.put_rows("runs", rows["runs"])
        for t in UPLOAD_ORDER[1:]:
            dest.put_rows(t, rows[t][:data.draw(st.integers(0, len(rows[t])), label=t)])
        spool.close()
        shutil.copy(work / "spool.sqlite", work / "again.sqlite")
        spool = Store(work / "spool.sqlite")
        first = push(spool, dest)
        assert [p.boots for p in first] == [boots] and spool.runs() == []
        again = Store(work / "again.sqlite")
        repeated = push(again, dest)
        assert [p.new_boots for p in repeated] == [0]
        for t in UPLOAD_ORDER[1:]:
            assert dest.rows(t, RUN_ID) == rows[t], t
        doc = dest.load_run(RUN_ID)
        assert [b.index for b in doc.system_boots] == list(range(boots))
        assert doc.system_boots == tuple(_boots(boots))
        for s in (spool, dest, again):
            s.close()
    finally:
        shutil.rmtree(work)


def _server_boots(url: str) -> tuple[int, int]:
    """(boots, distinct places) of the run, straight from the server."""
    with psycopg.connect(url) as db:
        row = db.execute("SELECT COUNT(*), COUNT(DISTINCT seq) FROM system_boots WHERE "
                         "run_id=%s", (RUN_ID,)).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_a_system_run_the_server_lost_is_pushed_once_and_reported_from_it(
        pg_server: PgCluster, pg_url: str, data: Path, main_in_process: Main,
        tmp_path: Path) -> None:
    boots = _boots(5)
    notices: list[str] = []
    sink = SpoolingSink(pg_url, notices.append)
    try:
        _begin(sink, 5)
        for b in boots:
            sink.add_system_boot(RUN_ID, b)
            if b.index == 1:  # two boots on both sides; now the server goes away
                pg_server.stop()
        sink.finish_run(RUN_ID, "2026-11-26T19:40:00+00:00", "complete")
        assert sink.spooling and len(notices) == 1 and "abibench --db" in notices[0], notices
        local = sink.load_run(RUN_ID)
    finally:
        sink.close()
        pg_server.start()
    assert _server_boots(pg_url) == (2, 2)
    assert local.system_boots == tuple(boots)

    code, out, err = main_in_process("--db", pg_url, "push")
    assert code == 0 and f"pushed run {RUN_ID}" in out, err
    assert "3 new system boots of 5 (2 were there already)" in out, out
    assert _server_boots(pg_url) == (5, 5)
    code, out, err = main_in_process("--db", pg_url, "push")
    assert code == 0 and "nothing to push" in out and _server_boots(pg_url) == (5, 5), err
    spool = Store(spool_path(pg_url))
    assert spool.runs() == []
    spool.close()

    # The shared store lists and reports it as the run's own writer would have.
    code, out, err = main_in_process("--db", pg_url, "runs")
    assert code == 0 and "complete    system run, 5 boots" in out, out + err
    code, out, err = main_in_process("--db", pg_url, "report", RUN_ID, "--json")
    assert code == 0, err
    analysed = analyse_doc(local)
    assert analysed is not None and json.loads(out) == json.loads(json.dumps(
        shown.to_json(analysed)))
    code, out, err = main_in_process("--db", pg_url, "report", RUN_ID)
    assert code == 0 and "amd64 kernel + i386 (idle; 2/3 boots reported)" in out, out + err
    store = open_store(pg_url, readonly=True)
    try:
        assert store.load_run(RUN_ID).system_boots == tuple(boots)
    finally:
        store.close()


def test_a_system_run_on_a_server_out_of_reach_is_pushed_then_resumed_on_it(
        pg_server: PgCluster, pg_url: str, data: Path, main_in_process: Main) -> None:
    # Through the command's own sink (cli/system.system_sink): the server down from the start,
    # the run interrupted after 3 of its 6 places; pushed; resumed on the server to the end.
    combos = tuple(parse_combinations(",".join(COMBOS)))
    pg_server.stop()
    try:
        with system_sink(pg_url) as sink:
            assert sink.spooling
            _begin(sink, 3)
            for i, c in pending_boots(combos, 3, 28)[:3]:
                sink.add_system_boot(RUN_ID, system_boot(i, f"{c.kernel}:{c.userspace}", 9000))
            sink.finish_run(RUN_ID, "2026-11-26T19:10:00+00:00", "interrupted")
    finally:
        pg_server.start()
    code, out, err = main_in_process("--db", pg_url, "push")
    assert code == 0 and "3 new system boots of 3" in out, out + err
    with system_sink(pg_url) as sink:
        plan = resume_plan(sink, RUN_ID, "server")
        assert plan.done == {0, 1, 2} and (plan.boots, plan.seed) == (3, 28)
        for i, c in pending_boots(plan.combos, plan.boots, plan.seed, plan.done):
            sink.add_system_boot(RUN_ID, system_boot(i, f"{c.kernel}:{c.userspace}", 9000))
        sink.finish_run(RUN_ID, "2026-11-26T19:20:00+00:00", "complete")
    assert _server_boots(pg_url) == (6, 6)
    store = open_store(pg_url, readonly=True)
    try:
        doc = store.load_run(RUN_ID)
    finally:
        store.close()
    assert [b.combination for b in doc.system_boots] == [
        f"{c.kernel}:{c.userspace}" for c in boot_order(combos, 3, 28)]
    spool = Store(spool_path(pg_url))
    assert spool.runs() == []  # the server has it whole: nothing waits in the spool
    spool.close()
