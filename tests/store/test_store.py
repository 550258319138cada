from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from abibench.errors import EXIT_STORE_READONLY, EXIT_USAGE, StoreError, UsageError
from abibench.records import HostContext, Run, RunConfig, RunDoc, Sample
from abibench.store import owner
from abibench.store.exchange import import_doc, validate
from abibench.store.open import open_store
from abibench.store.schema import POSTGRESQL, SCHEMA_TEMPLATE, SQLITE, migrations, schema
from abibench.store.sql import SqlStore
from abibench.store.sqlite import _MIGRATIONS, _SCHEMA, SCHEMA_VERSION, Store

OpenDb = Callable[..., SqlStore]


def _sample(run_id: str, **kw: object) -> Sample:
    base: dict[str, object] = dict(
        run_id=run_id, workload="w", target="i386", round=1, position=0, warmup=False,
        status="ok", exit_code=0, wall_s=1.5, user_s=1.0, sys_s=0.1, max_rss_kb=2048,
        stdout_digest="d", check="c", metrics={"rate": 3.0}, started_at="2026-01-01T00:00:01")
    base.update(kw)
    return Sample(**base)  # type: ignore[arg-type]


def _run(run_id: str, started: str = "2026-01-01T00:00:00") -> Run:
    return Run(run_id, started, None, "running", "0", RunConfig({}))


def test_every_sample_is_visible_to_another_connection_at_once(open_db: OpenDb) -> None:
    store = open_db()
    store.create_run(_run("r1"), HostContext(cpu_model="x"))
    store.add_sample(_sample("r1"))
    # A second reader (as after a crash of the writer) sees the sample without any close/commit.
    other = open_db(readonly=True)
    assert other.runs()[0].samples == 1
    doc = store.load_run("r1")
    assert doc.to_dict()["format"] == "abibench-run" and doc.run.status == "running"
    assert doc.samples[0].metrics == {"rate": 3.0}
    assert doc.samples[0].kind == "timed"


def test_version_1_database_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA)
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.execute("INSERT INTO runs VALUES ('old', 's', NULL, 'complete', '0', '{}', '{}')")
    db.execute("INSERT INTO samples(run_id, workload, target, round, position, warmup, status, "
               "exit_code, wall_s, user_s, sys_s, max_rss_kb, stdout_digest, metrics_json, "
               "started_at, env_pad) VALUES ('old','w','i386',1,0,0,'ok',0,1,1,0,10,'d','{}','',0)")
    db.commit()
    db.close()
    store = Store(path)
    assert store.samples("old")[0].kind == "timed"
    version = store.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    assert int(version) == SCHEMA_VERSION


def test_a_database_holding_a_later_steps_column_under_an_earlier_version_converges(
        tmp_path: Path) -> None:
    # A development build numbered its steps differently: version 6 already with the columns
    # this release adds at step 7. Migrating must add what is missing and skip what is there.
    path = tmp_path / "branch.sqlite"
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA)
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.commit()
    db.close()
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE samples DROP COLUMN minflt")
    db.execute("UPDATE meta SET value='6' WHERE key='schema_version'")
    db.commit()
    db.close()
    store = Store(path)
    assert store.has_column("samples", "minflt")
    assert store.has_column("samples", "tree_peak_rss_kb")
    version = store.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    assert int(version) == SCHEMA_VERSION


def test_version_1_postgresql_database_is_migrated(pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as db:
        for statement in _SCHEMA_PG:
            db.execute(statement)
        db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        db.execute("INSERT INTO runs VALUES ('old', 's', NULL, 'complete', '0', '{}', '{}')")
    store = open_store(pg_url)
    store.add_sample(_sample("old"))
    assert store.samples("old")[0].kind == "timed"
    assert store.check_version() == SCHEMA_VERSION
    store.close()


_SCHEMA_PG = [s.strip() for s in POSTGRESQL.render(SCHEMA_TEMPLATE).split(";") if s.strip()]


def _raw_execute(db_ref: str, statements: list[tuple[str, tuple[object, ...]]]) -> None:
    """Statements (with `?`) straight into the database, around abibench's store."""
    if db_ref.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db_ref, autocommit=True) as pg:
            for query, params in statements:
                pg.execute(query.replace("?", "%s"), params)
        return
    db = sqlite3.connect(db_ref)
    for query, params in statements:
        db.execute(query, params)
    db.commit()
    db.close()


def test_the_last_database_before_row_numbers_is_migrated_and_its_rows_numbered(
        db_ref: str) -> None:
    """Schema 7 is what the one-machine abibench before the shared store writes (samples with
    their design, CPU, repeats, page faults, counter profiles and tree memory): it migrates in
    place, every row is numbered per run in the order it was written, and new rows continue
    the numbering."""
    dialect = POSTGRESQL if db_ref.startswith("postgresql://") else SQLITE
    before = 7  # the version before step 8 numbered rows
    statements: list[tuple[str, tuple[object, ...]]] = [
        (q, ()) for q in [*schema(dialect),
                          *(q for step in migrations(dialect)[:before - 1] for q in step)]]
    statements.append(("INSERT INTO meta VALUES ('schema_version', ?)", (str(before),)))
    columns = ("run_id, workload, target, round, position, warmup, status, exit_code, wall_s, "
               "user_s, sys_s, max_rss_kb, stdout_digest, check_value, metrics_json, error, "
               "started_at, env_pad, instructions, kind, discarded, design, cpu, repeat, "
               "foreign_cpu_s, steal_s, covariate, minflt, majflt, counters_json, "
               "tree_peak_rss_kb, tree_memory")
    for run_id in ("a", "b"):
        statements.append(("INSERT INTO runs(id, started, finished, status, tool_version, "
                           "host_json, config_json) VALUES (?, 's', 'f', 'complete', '0', '{}', "
                           "'{}')", (run_id,)))
        statements.append(("INSERT INTO warnings(run_id, workload, target, message) VALUES "
                           "(?, NULL, NULL, 'm')", (run_id,)))
    for i in range(6):  # the two runs' samples interleaved, as two writers would store them
        run_id = "ab"[i % 2]
        statements.append((f"INSERT INTO samples({columns}) VALUES (?, 'w', ?, ?, 0, 0, 'ok', 0, "
                           "1.5, 1.0, 0.1, 2048, 'd', NULL, '{}', NULL, 's', 0, NULL, 'timed', "
                           "NULL, 'simultaneous', ?, 3, 0.25, 0.0, 1e6, 120, 0, NULL, 4096, "
                           "'cgroup-v2')", (run_id, "i386" if i < 4 else "x86_64", i // 2, i % 2)))
    _raw_execute(db_ref, statements)

    store = open_store(db_ref)
    assert store.check_version() == SCHEMA_VERSION
    for run_id in ("a", "b"):
        samples = store.samples(run_id)
        assert [(s.round, s.design, s.cpu, s.repeat, s.foreign_cpu_s, s.covariate, s.minflt,
                 s.tree_peak_rss_kb, s.tree_memory) for s in samples] == \
            [(r, "simultaneous", "ab".index(run_id), 3, 0.25, 1e6, 120, 4096, "cgroup-v2")
             for r in range(3)]
        assert [row[1] for row in store.rows("samples", run_id)] == [0, 1, 2]
        assert [row[1] for row in store.rows("warnings", run_id)] == [0]
    store.add_sample(_sample("a", round=9, design="covariate", covariate=2.5))
    assert [row[1] for row in store.rows("samples", "a")] == [0, 1, 2, 3]
    assert store.samples("a")[-1].covariate == 2.5
    store.close()


def test_newer_database_is_refused(open_db: OpenDb, db_ref: str) -> None:
    open_db().execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    for readonly in (False, True):
        with pytest.raises(UsageError, match=r"newer abibench \(schema 99; this one knows") as e:
            open_store(db_ref, readonly=readonly)
        assert e.value.exit_code == EXIT_USAGE


def test_run_references(open_db: OpenDb) -> None:
    store = open_db()
    with pytest.raises(UsageError, match="no runs"):
        store.resolve_run(None)
    store.create_run(_run("20260101-a", "1"), HostContext())
    store.create_run(_run("20260102-b", "2"), HostContext())
    assert store.resolve_run("latest") == "20260102-b"
    assert store.resolve_run("20260101") == "20260101-a"
    with pytest.raises(UsageError, match="is ambiguous"):
        store.resolve_run("2026")


# --------------------------------------------------------------------------- owners


def _set(store: SqlStore, run_id: str, **values: object) -> None:
    for column, value in values.items():
        store.execute(f"UPDATE runs SET {column}=? WHERE id=?", (value, run_id))


def test_a_run_records_its_owner_and_reads_running_while_it_lives(open_db: OpenDb) -> None:
    store = open_db()
    store.create_run(_run("r1"), HostContext())
    row = store.execute("SELECT * FROM runs").fetchone()
    assert row["owner_pid"] == os.getpid() and row["owner_host"] == socket.gethostname()
    assert row["owner_start"] == owner.start_time(os.getpid())
    assert row["owner_boot"] == owner.boot_id()
    assert store.runs()[0].status == "running"
    assert store.load_run("r1").run.status == "running"


@pytest.mark.parametrize(("change", "status"), [
    ({"owner_start": -1}, "abandoned"),  # the pid now belongs to another process
    ({"owner_boot": "another boot"}, "abandoned"),
    ({"owner_pid": 2**22 + 7}, "abandoned"),  # above pid_max: no such process
    ({"owner_host": "elsewhere", "owner_boot": "another boot"}, "running"),  # cannot be judged
    ({"owner_pid": None}, "running"),  # no owner recorded (an older abibench)
])
def test_owner_judged_when_read(open_db: OpenDb, change: dict[str, object], status: str) -> None:
    store = open_db()
    store.create_run(_run("r1"), HostContext())
    _set(store, "r1", **change)
    assert store.runs()[0].status == status
    assert store.load_run("r1").run.status == status
    assert store.execute("SELECT status FROM runs").fetchone()["status"] == "running"  # as stored


def test_only_running_runs_can_be_abandoned(open_db: OpenDb) -> None:
    store = open_db()
    store.create_run(_run("r1"), HostContext())
    store.finish_run("r1", "2026-01-01T00:01:00", "interrupted")
    _set(store, "r1", owner_start=-1)
    assert store.runs()[0].status == "interrupted"


def test_claim_run(open_db: OpenDb) -> None:
    store = open_db()
    store.create_run(_run("dead"), HostContext())
    _set(store, "dead", owner_pid=2**22 + 7)
    store.finish_run("dead", "2026-01-01T00:01:00", "running")  # as a killed writer left it
    store.claim_run("dead")
    row = store.execute("SELECT * FROM runs WHERE id='dead'").fetchone()
    assert (row["status"], row["owner_pid"], row["finished"]) == ("running", os.getpid(), None)
    with pytest.raises(UsageError, match=r"run dead is still running \(pid \d+ on "):
        store.claim_run("dead")  # now this live process owns it
    store.create_run(_run("there"), HostContext())
    _set(store, "there", owner_host="elsewhere")
    with pytest.raises(UsageError, match=r"still running .* on elsewhere"):
        store.claim_run("there")
    store.create_run(_run("old"), HostContext())
    _set(store, "old", owner_pid=None)  # stored before owners were: nobody can write it now
    store.claim_run("old")
    store.finish_run("old", "2026-01-01T00:02:00", "failed")
    store.claim_run("old")
    store.finish_run("old", "2026-01-01T00:03:00", "complete")
    with pytest.raises(UsageError, match="run old is complete: nothing to resume"):
        store.claim_run("old")
    with pytest.raises(UsageError, match="run 'nope' not found"):
        store.claim_run("nope")


def test_imported_run_has_no_owner(open_db: OpenDb,
                                   make_doc: Callable[..., dict[str, Any]]) -> None:
    doc = make_doc()
    doc["run"]["status"] = "running"  # exported while it ran elsewhere
    store = open_db()
    res = import_doc(store, RunDoc.from_dict(doc), "x.json")
    assert store.execute("SELECT owner_pid FROM runs").fetchone()["owner_pid"] is None
    assert store.load_run(res.run_id).run.status == "running"


def test_version_5_database_gains_tree_memory(tmp_path: Path) -> None:
    """A database as the version before tree memory wrote it: its samples have none, new ones
    keep theirs, and both export and import again."""
    path = tmp_path / "v5.sqlite"
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA)
    for step in _MIGRATIONS[:4]:
        for statement in step:
            db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', '5')")
    db.execute("INSERT INTO runs(id, started, finished, status, tool_version, host_json, "
               "config_json) VALUES ('v5', '2026-01-01T00:00:00', NULL, 'complete', '0', '{}', "
               "'{\"workloads\": {\"w\": {\"primary\": \"wall\", \"metrics\": {}, "
               "\"targets\": [\"i386\"]}}}')")
    db.execute("INSERT INTO samples(run_id, workload, target, round, position, warmup, status, "
               "exit_code, wall_s, user_s, sys_s, max_rss_kb, stdout_digest, metrics_json, "
               "started_at, env_pad, design, repeat) VALUES ('v5','w','i386',1,0,0,'ok',0,1,1,"
               "0,10,'d','{}','2026-01-01T00:00:01',0,'sequential',1)")
    db.commit()
    db.close()
    store = Store(path)
    store.add_sample(_sample("v5", round=2, tree_peak_rss_kb=512_000, tree_memory="cgroup-v1"))
    old, new = store.samples("v5")
    assert (old.tree_peak_rss_kb, old.tree_memory) == (None, None)
    assert (new.tree_peak_rss_kb, new.tree_memory) == (512_000, "cgroup-v1")
    assert new.value("tree_peak_rss") == 512_000.0 and old.value("tree_peak_rss") is None
    exported = json.loads(json.dumps(store.load_run("v5").to_dict()))
    again = RunDoc.from_dict(validate(exported, "x.json"))
    assert [s.tree_peak_rss_kb for s in again.samples] == [None, 512_000]
    # A document without the fields (an older export) still imports.
    for sample in exported["samples"]:
        del sample["tree_peak_rss_kb"], sample["tree_memory"]
    assert all(s.tree_memory is None for s in
               RunDoc.from_dict(validate(exported, "x.json")).samples)


# --------------------------------------------------------------------------- discarded samples


def test_discarded_samples_are_kept_and_exported(open_db: OpenDb,
                                                 make_doc: Callable[..., dict[str, Any]]) -> None:
    store = open_db()
    run_id = import_doc(store, RunDoc.from_dict(make_doc(rounds=3)), "x.json").run_id
    assert store.discard_samples(run_id, "alpha", [2, 3, 9], "round cut short") == 4
    assert store.discard_samples(run_id, "alpha", [3], "again") == 0  # the first reason stays
    doc = store.load_run(run_id)
    marks = {(s.workload, s.target, s.round): s.discarded for s in doc.samples if s.round > 1}
    assert marks == {("alpha", t, r): "round cut short" for t in ("i386", "x86_64")
                     for r in (2, 3)} | {("beta", t, r): None for t in ("i386", "x86_64")
                                         for r in (2, 3)}
    assert len(doc.counted("alpha")) == 2 and len(doc.counted("beta")) == 6
    exported = json.loads(json.dumps(doc.to_dict()))
    assert [s["discarded"] for s in exported["samples"]].count("round cut short") == 4
    again = RunDoc.from_dict(validate(exported, "x.json"))
    assert [s.discarded for s in again.samples] == [s.discarded for s in doc.samples]
    store.add_sample(_sample(run_id, discarded="measured twice"))
    assert store.samples(run_id)[-1].discarded == "measured twice"


# --------------------------------------------------------------------------- counted runs


def test_counters_and_page_faults_are_stored_exported_and_imported(
        tmp_path: Path, cachegrind_profile: Callable[..., Any],
        make_doc: Callable[..., dict[str, Any]]) -> None:
    store = Store(tmp_path / "r.sqlite")
    run_id = import_doc(store, RunDoc.from_dict(make_doc(rounds=1)), "x.json").run_id
    prof = cachegrind_profile("bignum", "i386", attempts=(12872461, 12872460))
    store.add_sample(_sample(run_id, workload="alpha", round=5, minflt=123, majflt=0))
    store.add_sample(_sample(run_id, workload="alpha", round=6, kind="counters",
                             instructions=prof.totals[0], counters=prof))
    *_, timed, counted = store.samples(run_id)
    assert (timed.minflt, timed.majflt, timed.counters) == (123, 0, None)
    assert counted.counters == prof
    doc = store.load_run(run_id)
    exported = json.loads(json.dumps(doc.to_dict()))
    assert exported["samples"][-1]["counters"]["functions"][0][0] == "mul_add_words"
    again = RunDoc.from_dict(validate(exported, "x.json"))
    assert again.samples == doc.samples
    # an exported counter profile is checked like every other field
    exported["samples"][-1]["counters"]["totals"] = [1, 2]
    with pytest.raises(UsageError, match=r"counters\.totals: expected one total per event"):
        validate(exported, "x.json")
    exported["samples"][-1]["counters"] = {"events": ["Ir"], "totals": [-1]}
    with pytest.raises(UsageError, match=r"counters\.totals\[0\]: expected a number >= 0"):
        validate(exported, "x.json")


def _at_version(path: Path, version: int) -> None:
    """A database exactly as the abibench of that schema version left it: the first schema and
    the migration steps up to that version."""
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA)
    for step in _MIGRATIONS[:version - 1]:
        for statement in step:
            db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(version),))
    db.execute("INSERT INTO runs(id, started, finished, status, tool_version, config_json, "
               "host_json) VALUES ('v5', 's', NULL, 'complete', '0', '{}', '{}')")
    db.commit()
    db.close()


def _columns(store: Store) -> set[str]:
    return {r["name"] for r in store.db.execute("PRAGMA table_info(samples)")}


def test_version_5_database_gets_page_faults_and_counters(tmp_path: Path) -> None:
    # Version 5 recorded how each sample was measured (design, CPU, repeats, the machine
    # around it); version 6 adds page faults and counter profiles. A sample stored by version
    # 5 keeps what it had and reads as having no page faults and no profile.
    path = tmp_path / "v5.sqlite"
    _at_version(path, 5)
    db = sqlite3.connect(path)
    db.execute("INSERT INTO samples(run_id, workload, target, round, position, warmup, status, "
               "exit_code, wall_s, user_s, sys_s, max_rss_kb, stdout_digest, metrics_json, "
               "started_at, env_pad, design, cpu, repeat, foreign_cpu_s, steal_s, covariate) "
               "VALUES ('v5','w','i386',1,0,0,'ok',0,1,1,0,10,'d','{}','',0,'simultaneous',1,3,"
               "0.25,0.01,1.5e9)")
    db.commit()
    db.close()
    read = Store(path, readonly=True)  # read as it is, never migrated
    old = read.samples("v5")[0]
    assert (old.design, old.cpu, old.repeat, old.minflt, old.counters) == (
        "simultaneous", 1, 3, None, None)
    read.close()
    store = Store(path)
    version = store.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    assert int(version) == SCHEMA_VERSION >= 6
    assert {"design", "covariate", "minflt", "majflt", "counters_json"} <= _columns(store)
    (migrated,) = store.samples("v5")
    assert migrated == old
    store.add_sample(_sample("v5", round=2, design="covariate", covariate=2.0e9, minflt=7,
                             majflt=1))
    new = store.samples("v5")[-1]
    assert (new.design, new.covariate, new.minflt, new.majflt) == ("covariate", 2.0e9, 7, 1)


def test_a_fresh_database_has_every_column_of_every_step(tmp_path: Path) -> None:
    fresh = Store(tmp_path / "new.sqlite")
    stepwise = tmp_path / "steps.sqlite"
    _at_version(stepwise, SCHEMA_VERSION)
    assert _columns(fresh) == _columns(Store(stepwise))


def test_exchange_carries_how_a_sample_was_measured_and_what_was_counted(
        tmp_path: Path, cachegrind_profile: Callable[..., Any],
        make_doc: Callable[..., dict[str, Any]]) -> None:
    # Both sets of fields added to a sample since version 4 of the store (the sampling design
    # and the machine around it; page faults and counter profiles) go out and come back.
    store = Store(tmp_path / "r.sqlite")
    run_id = import_doc(store, RunDoc.from_dict(make_doc(rounds=1)), "x.json").run_id
    prof = cachegrind_profile("ptrchase", "x86_64")
    store.add_sample(_sample(run_id, workload="alpha", round=5, design="simultaneous", cpu=1,
                             repeat=4, foreign_cpu_s=0.5, steal_s=0.0, covariate=1e9,
                             minflt=90, majflt=2))
    store.add_sample(_sample(run_id, workload="alpha", round=6, kind="counters",
                             instructions=prof.totals[0], counters=prof, minflt=400, majflt=0))
    exported = json.loads(json.dumps(store.load_run(run_id).to_dict()))
    timed, counted = exported["samples"][-2:]
    assert (timed["design"], timed["repeat"], timed["minflt"]) == ("simultaneous", 4, 90)
    assert counted["counters"]["simulation"] == "cache"
    other = Store(tmp_path / "other.sqlite")
    again = import_doc(other, RunDoc.from_dict(validate(exported, "x.json")), "x.json")
    assert other.load_run(again.run_id).samples[-2:] == store.load_run(run_id).samples[-2:]
    # A file written before either set existed has none of those keys, and is read as such.
    for s in exported["samples"]:
        for key in ("design", "cpu", "repeat", "foreign_cpu_s", "steal_s", "covariate",
                    "minflt", "majflt", "counters"):
            s.pop(key, None)
    older = RunDoc.from_dict(validate(exported, "x.json"))
    assert {(s.design, s.repeat, s.minflt, s.counters) for s in older.samples} == {
        ("sequential", 1, None, None)}
    exported["samples"][-1]["repeat"] = 0
    with pytest.raises(UsageError, match=r"repeat"):
        validate(exported, "x.json")


# --------------------------------------------------------------------------- read-only opening


def _version_1(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA)
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.execute("INSERT INTO runs VALUES ('old', 's', NULL, 'running', '0', '{}', '{}')")
    db.execute("INSERT INTO samples(run_id, workload, target, round, position, warmup, status, "
               "exit_code, wall_s, user_s, sys_s, max_rss_kb, stdout_digest, metrics_json, "
               "started_at, env_pad) VALUES ('old','w','i386',1,0,0,'ok',0,1,1,0,10,'d','{}','',0)")
    db.commit()
    db.close()


def test_older_schema_is_read_as_it_is_when_read_only(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _version_1(path)
    before = path.read_bytes()
    store = Store(path, readonly=True)
    (listing,) = store.runs()
    assert (listing.status, listing.samples) == ("running", 1)  # no owner: stays as stored
    doc = store.load_run("old")
    assert (doc.samples[0].kind, doc.samples[0].discarded) == ("timed", None)
    assert (doc.samples[0].minflt, doc.samples[0].counters) == (None, None)
    with pytest.raises(StoreError) as caught:
        store.add_sample(_sample("old"))
    assert caught.value.exit_code == EXIT_STORE_READONLY
    store.close()
    assert path.read_bytes() == before  # never migrated


def test_read_only_refusals(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no results database at .*: run `abibench run` first"):
        Store(tmp_path / "missing.sqlite", readonly=True)
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(UsageError, match="holds no abibench results"):
        Store(empty, readonly=True)
    newer = tmp_path / "newer.sqlite"
    Store(newer).db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(UsageError, match="newer abibench"):
        Store(newer, readonly=True)


def test_no_sqlite_error_leaves_the_store(tmp_path: Path) -> None:
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(StoreError, match=r"dir\.sqlite"):
        Store(tmp_path / "dir.sqlite")


def test_no_engine_error_leaves_the_store(open_db: OpenDb) -> None:
    store = open_db()
    store.create_run(_run("r1"), HostContext())
    with pytest.raises(StoreError, match=r"UNIQUE constraint failed|duplicate key value"):
        store.create_run(_run("r1"), HostContext())
    with pytest.raises(StoreError), store.transaction():
        store.create_run(_run("r2"), HostContext())
        store.create_run(_run("r2"), HostContext())
    assert store.run_ids() == ["r1"]  # the transaction was undone as a whole
    store.close()
    with pytest.raises(StoreError, match=r"closed database|connection is closed"):
        store.runs()


@pytest.mark.parametrize(("value", "ok"), [("0.25", True), ("", True), ("soon", False),
                                            ("-1", False)])
def test_busy_timeout_from_the_environment(db_ref: str, monkeypatch: pytest.MonkeyPatch,
                                           value: str, ok: bool) -> None:
    monkeypatch.setenv("ABIBENCH_DB_TIMEOUT", value)
    if ok:
        store = open_store(db_ref)
        assert store.timeout == (0.25 if value else 30.0)
        store.close()
    else:
        with pytest.raises(StoreError, match="ABIBENCH_DB_TIMEOUT") as caught:
            open_store(db_ref)
        assert caught.value.exit_code == 2


def test_db_before_or_after_the_command(tmp_path: Path, make_doc: Callable[..., Any],
                                        main_in_process: Callable[..., tuple[int, str, str]]
                                        ) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(make_doc()))
    here, there = str(tmp_path / "here.sqlite"), str(tmp_path / "there.sqlite")
    assert main_in_process("import", str(doc), "--db", here)[0] == 0
    for args in (("--db", here, "runs", "--json"), ("runs", "--json", "--db", here),
                 ("--db", there, "runs", "--json", "--db", here)):  # the command's own wins
        code, out, err = main_in_process(*args)
        assert code == 0 and len(json.loads(out)) == 1, err
    assert not Path(there).exists()


def test_every_sample_field_comes_back_as_stored(open_db: OpenDb,
                                                 cachegrind_profile: Callable[..., Any]) -> None:
    """What each backend gives back is the sample as written: how it was measured, its page
    faults, the counter profile of a counted run, the tree memory."""
    store = open_db()
    store.create_run(_run("r1"), HostContext())
    written = [
        _sample("r1", round=1, design="simultaneous", cpu=1, repeat=4, foreign_cpu_s=0.5,
                steal_s=0.01, covariate=1.5e6, minflt=321, majflt=2, tree_peak_rss_kb=9000,
                tree_memory="cgroup-v2", instructions=2**40),
        _sample("r1", target="armhf", round=1, emulated=True, clock_mhz=1200.0, temp_c=61.5,
                throttled=0x50005, kind="baseline"),
        _sample("r1", round=2, kind="counters", instructions=123456789,
                counters=cachegrind_profile("ptrchase", "i386")),
    ]
    for s in written:
        store.add_sample(s)
    assert store.samples("r1") == written
    assert open_db(readonly=True).load_run("r1").samples == tuple(written)


def test_a_database_of_the_previous_schema_migrates_and_keeps_emulated_and_board_fields(
        tmp_path: Path) -> None:
    from abibench.store.sqlite import _MIGRATIONS

    path = tmp_path / "before.sqlite"
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA)
    for step in _MIGRATIONS[:-1]:  # what the version before this one wrote
        for statement in step:
            db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION - 1),))
    config = {"workloads": {"w": {"primary": "wall", "metrics": {},
                                  "targets": ["i386", "armhf"]}}}
    db.execute("INSERT INTO runs(id, started, finished, status, tool_version, host_json, "
               "config_json) VALUES ('old', '2026-01-01T00:00:00', NULL, 'complete', '0', '{}', ?)",
               (json.dumps(config),))
    db.execute("INSERT INTO samples(run_id, workload, target, round, position, warmup, status, "
               "exit_code, wall_s, user_s, sys_s, max_rss_kb, stdout_digest, metrics_json, "
               "started_at, env_pad) VALUES ('old','w','i386',1,0,0,'ok',0,1,1,0,10,'d','{}','',0)")
    db.commit()
    db.close()
    store = Store(path)
    (before,) = store.samples("old")
    assert not before.emulated and before.clock_mhz is None and before.throttled is None
    store.add_sample(_sample("old", target="armhf", emulated=True, clock_mhz=1200.0, temp_c=61.5,
                             throttled=0x50005, kind="baseline"))
    after = store.samples("old")[1]
    assert (after.emulated, after.clock_mhz, after.temp_c, after.throttled, after.kind) == \
        (True, 1200.0, 61.5, 0x50005, "baseline")
    exported = store.load_run("old").to_dict()
    validate(json.loads(json.dumps(exported)), "export")  # the new fields pass the importer
