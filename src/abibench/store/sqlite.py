"""Durable results: one SQLite file, every sample committed the moment it exists."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..records import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    Artifact,
    HostContext,
    Outcome,
    Run,
    RunDoc,
    RunWarning,
    Sample,
    TargetStatus,
)

SCHEMA_VERSION = 2


@dataclass(frozen=True)
class RunListing:
    """One line of `abibench runs`."""

    id: str
    started: str
    finished: str | None
    status: str
    samples: int

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "started": self.started, "finished": self.finished,
                "status": self.status, "samples": self.samples}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, started TEXT NOT NULL, finished TEXT, status TEXT NOT NULL,
    tool_version TEXT NOT NULL, host_json TEXT NOT NULL, config_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS artifacts (
    id INTEGER PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id), workload TEXT NOT NULL,
    target TEXT NOT NULL, cached INTEGER NOT NULL, info_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS target_status (
    id INTEGER PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id), workload TEXT NOT NULL,
    target TEXT NOT NULL, state TEXT NOT NULL, reason TEXT);
CREATE TABLE IF NOT EXISTS samples (
    id INTEGER PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id), workload TEXT NOT NULL,
    target TEXT NOT NULL, round INTEGER NOT NULL, position INTEGER NOT NULL,
    warmup INTEGER NOT NULL, status TEXT NOT NULL, exit_code INTEGER NOT NULL,
    wall_s REAL NOT NULL, user_s REAL NOT NULL, sys_s REAL NOT NULL, max_rss_kb INTEGER NOT NULL,
    stdout_digest TEXT NOT NULL, check_value TEXT, metrics_json TEXT NOT NULL, error TEXT,
    started_at TEXT NOT NULL, env_pad INTEGER NOT NULL, instructions INTEGER);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id, workload, target);
CREATE TABLE IF NOT EXISTS outcomes (
    run_id TEXT NOT NULL REFERENCES runs(id), workload TEXT NOT NULL, rounds INTEGER NOT NULL,
    stop_reason TEXT NOT NULL, PRIMARY KEY (run_id, workload));
CREATE TABLE IF NOT EXISTS warnings (
    id INTEGER PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id), workload TEXT,
    target TEXT, message TEXT NOT NULL);
"""


# Each step takes the database from version i+1 to i+2; _SCHEMA is version 1.
_MIGRATIONS: list[str] = [
    "ALTER TABLE samples ADD COLUMN kind TEXT NOT NULL DEFAULT 'timed'",
]
assert len(_MIGRATIONS) == SCHEMA_VERSION - 1


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
        except (OSError, sqlite3.Error) as exc:
            raise UsageError(f"cannot open results database {path}: {exc}; choose another with "
                             "--db") from None
        self.db.row_factory = sqlite3.Row
        self._migrate()

    def _migrate(self) -> None:
        self.db.executescript(_SCHEMA)
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = 1 if row is None else int(row["value"])
        if version > SCHEMA_VERSION:
            raise UsageError(f"{self.path} was written by a newer abibench (schema "
                             f"{version}): upgrade abibench or use another --db")
        with self.db:
            self.db.execute("BEGIN")
            for step in _MIGRATIONS[version - 1:]:
                self.db.execute(step)
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                            (str(SCHEMA_VERSION),))

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside is committed together, or not at all."""
        self.db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # Writing: each call is its own transaction, committed before it returns.
    def create_run(self, run: Run, host: HostContext) -> None:
        self.db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?)",
                        (run.id, run.started, run.finished, run.status, run.tool_version,
                         json.dumps(host.to_dict()), json.dumps(run.config.to_dict())))

    def finish_run(self, run_id: str, finished: str | None, status: str) -> None:
        self.db.execute("UPDATE runs SET finished=?, status=? WHERE id=?",
                        (finished, status, run_id))

    def add_artifact(self, run_id: str, artifact: Artifact) -> None:
        info = {**artifact.info_dict(), **artifact.extra}
        self.db.execute("INSERT INTO artifacts(run_id, workload, target, cached, info_json) "
                        "VALUES (?,?,?,?,?)", (run_id, artifact.workload, artifact.target,
                                               int(artifact.cached), json.dumps(info)))

    def set_target_status(self, run_id: str, status: TargetStatus) -> None:
        self.db.execute("INSERT INTO target_status(run_id, workload, target, state, reason) "
                        "VALUES (?,?,?,?,?)", (run_id, status.workload, status.target,
                                               status.state, status.reason))

    def add_warning(self, run_id: str, warning: RunWarning) -> None:
        self.db.execute("INSERT INTO warnings(run_id, workload, target, message) VALUES (?,?,?,?)",
                        (run_id, warning.workload, warning.target, warning.message))

    def set_outcome(self, run_id: str, workload: str, outcome: Outcome) -> None:
        self.db.execute("INSERT OR REPLACE INTO outcomes VALUES (?,?,?,?)",
                        (run_id, workload, outcome.rounds, outcome.stop_reason))

    def add_sample(self, s: Sample) -> None:
        self.db.execute(
            "INSERT INTO samples(run_id, workload, target, round, position, warmup, status, "
            "exit_code, wall_s, user_s, sys_s, max_rss_kb, stdout_digest, check_value, "
            "metrics_json, error, started_at, env_pad, instructions, kind) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (s.run_id, s.workload, s.target, s.round, s.position, int(s.warmup), s.status,
             s.exit_code, s.wall_s, s.user_s, s.sys_s, s.max_rss_kb, s.stdout_digest, s.check,
             json.dumps(s.metrics), s.error, s.started_at, s.env_pad, s.instructions, s.kind))

    # Reading
    def run_ids(self) -> list[str]:
        return [r["id"] for r in self.db.execute("SELECT id FROM runs ORDER BY started, id")]

    def resolve_run(self, ref: str | None) -> str:
        ids = self.run_ids()
        if not ids:
            raise UsageError(f"no runs in {self.path}: run `abibench run` first")
        if ref in (None, "latest", "last"):
            return ids[-1]
        matches = [i for i in ids if i == ref] or [i for i in ids if ref and i.startswith(ref)]
        if len(matches) != 1:
            raise UsageError(f"run '{ref}' {'is ambiguous' if matches else 'not found'} in "
                             f"{self.path}: see `abibench runs`")
        return matches[0]

    def runs(self) -> list[RunListing]:
        rows = self.db.execute(
            "SELECT r.id, r.started, r.finished, r.status, COUNT(s.id) AS samples FROM runs r "
            "LEFT JOIN samples s ON s.run_id = r.id GROUP BY r.id ORDER BY r.started, r.id")
        return [RunListing(r["id"], r["started"], r["finished"], r["status"], r["samples"])
                for r in rows]

    def samples(self, run_id: str) -> list[Sample]:
        rows = self.db.execute("SELECT * FROM samples WHERE run_id=? ORDER BY id", (run_id,))
        return [
            Sample(run_id=r["run_id"], workload=r["workload"], target=r["target"],
                   round=r["round"], position=r["position"], warmup=bool(r["warmup"]),
                   status=r["status"], exit_code=r["exit_code"], wall_s=r["wall_s"],
                   user_s=r["user_s"], sys_s=r["sys_s"], max_rss_kb=r["max_rss_kb"],
                   stdout_digest=r["stdout_digest"], check=r["check_value"],
                   metrics=json.loads(r["metrics_json"]), error=r["error"],
                   started_at=r["started_at"], env_pad=r["env_pad"],
                   instructions=r["instructions"], kind=r["kind"])
            for r in rows
        ]

    def load_run(self, run_id: str) -> RunDoc:
        """Everything about one run."""
        return RunDoc.from_dict(self.load_run_dict(run_id))

    def load_run_dict(self, run_id: str) -> dict[str, Any]:
        """Everything about one run, as the versioned export document."""
        run = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if run is None:
            raise UsageError(f"run '{run_id}' not found in {self.path}")
        artifacts = [
            {"workload": r["workload"], "target": r["target"], "cached": bool(r["cached"]),
             **json.loads(r["info_json"])}
            for r in self.db.execute("SELECT * FROM artifacts WHERE run_id=? ORDER BY id",
                                     (run_id,))
        ]
        statuses = [dict(r) for r in self.db.execute(
            "SELECT workload, target, state, reason FROM target_status WHERE run_id=? ORDER BY id",
            (run_id,))]
        warnings = [dict(r) for r in self.db.execute(
            "SELECT workload, target, message FROM warnings WHERE run_id=? ORDER BY id",
            (run_id,))]
        outcomes = {r["workload"]: {"rounds": r["rounds"], "stop_reason": r["stop_reason"]}
                    for r in self.db.execute("SELECT * FROM outcomes WHERE run_id=?", (run_id,))}
        return {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "run": {"id": run["id"], "started": run["started"], "finished": run["finished"],
                    "status": run["status"], "tool_version": run["tool_version"],
                    "config": json.loads(run["config_json"])},
            "host": json.loads(run["host_json"]),
            "artifacts": artifacts,
            "target_status": statuses,
            "warnings": warnings,
            "outcomes": outcomes,
            "samples": [s.to_dict() for s in self.samples(run_id)],
        }
