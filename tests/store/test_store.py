from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from abibench.errors import UsageError
from abibench.records import HostContext, Run, RunConfig, Sample
from abibench.store.sqlite import _SCHEMA, SCHEMA_VERSION, Store


def _sample(run_id: str, **kw: object) -> Sample:
    base: dict[str, object] = dict(
        run_id=run_id, workload="w", target="i386", round=1, position=0, warmup=False,
        status="ok", exit_code=0, wall_s=1.5, user_s=1.0, sys_s=0.1, max_rss_kb=2048,
        stdout_digest="d", check="c", metrics={"rate": 3.0})
    base.update(kw)
    return Sample(**base)  # type: ignore[arg-type]


def _run(run_id: str, started: str = "2026-01-01T00:00:00") -> Run:
    return Run(run_id, started, None, "running", "0", RunConfig({}))


def test_every_sample_is_visible_to_another_connection_at_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.sqlite")
    store.create_run(_run("r1"), HostContext(cpu_model="x"))
    store.add_sample(_sample("r1"))
    # A second reader (as after a crash of the writer) sees the sample without any close/commit.
    other = sqlite3.connect(tmp_path / "r.sqlite")
    assert other.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 1
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


def test_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    Store(path).db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(UsageError, match="newer abibench"):
        Store(path)


def test_run_references(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.sqlite")
    with pytest.raises(UsageError, match="no runs"):
        store.resolve_run(None)
    store.create_run(_run("20260101-a", "1"), HostContext())
    store.create_run(_run("20260102-b", "2"), HostContext())
    assert store.resolve_run("latest") == "20260102-b"
    assert store.resolve_run("20260101") == "20260101-a"
    with pytest.raises(UsageError, match="is ambiguous"):
        store.resolve_run("2026")
