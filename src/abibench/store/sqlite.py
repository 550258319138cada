"""Durable results: one SQLite file, every sample committed the moment it exists.

Opened for writing (`run`, `import`), the database is checked first (`PRAGMA quick_check`:
a damaged file is never written to), migrated, and every call is its own transaction. Opened
read-only (`runs`, `report`, `compare`, `export`), it is never migrated or written, so results
on a read-only file, directory or mount can still be read; an older schema is read as it is,
with the defaults its missing columns stand for. Every SQLite failure leaves a public method
as one `StoreError` (store/faults.py), never as a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from ..errors import UsageError
from ..records import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    Artifact,
    CounterProfile,
    HostContext,
    Outcome,
    Run,
    RunDoc,
    RunWarning,
    Sample,
    TargetStatus,
)
from . import faults, owner
from .owner import Owner

SCHEMA_VERSION = 8


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


# Each step takes the database from version i+1 to i+2; _SCHEMA is version 1. A step is never
# edited once released: a change is a new step.
_MIGRATIONS: list[tuple[str, ...]] = [
    # 2: a sample under a counter (valgrind) is of its own kind; its times mean nothing
    ("ALTER TABLE samples ADD COLUMN kind TEXT NOT NULL DEFAULT 'timed'",),
    # 3: the process that writes a run, so that a run whose writer died reads as abandoned
    ("ALTER TABLE runs ADD COLUMN owner_pid INTEGER",
     "ALTER TABLE runs ADD COLUMN owner_start INTEGER",
     "ALTER TABLE runs ADD COLUMN owner_boot TEXT",
     "ALTER TABLE runs ADD COLUMN owner_host TEXT"),
    # 4: why a stored sample no longer counts (NULL: it counts)
    ("ALTER TABLE samples ADD COLUMN discarded TEXT",),
    # 5: how a sample was measured (design, CPU, repeats) and the machine around it
    ("ALTER TABLE samples ADD COLUMN design TEXT NOT NULL DEFAULT 'sequential'",
     "ALTER TABLE samples ADD COLUMN cpu INTEGER",
     "ALTER TABLE samples ADD COLUMN repeat INTEGER NOT NULL DEFAULT 1",
     "ALTER TABLE samples ADD COLUMN foreign_cpu_s REAL",
     "ALTER TABLE samples ADD COLUMN steal_s REAL",
     "ALTER TABLE samples ADD COLUMN covariate REAL"),
    # 6: page faults of every sample, and what cachegrind counted in a counted run (JSON:
    # event totals, the top functions, the attempts until two agreed)
    ("ALTER TABLE samples ADD COLUMN minflt INTEGER",
     "ALTER TABLE samples ADD COLUMN majflt INTEGER",
     "ALTER TABLE samples ADD COLUMN counters_json TEXT"),
    # 7: the peak memory of a sample's whole process tree ([run] memory = "tree") and how it
    # was measured (cgroup-v2, cgroup-v1, sampled)
    ("ALTER TABLE samples ADD COLUMN tree_peak_rss_kb INTEGER",
     "ALTER TABLE samples ADD COLUMN tree_memory TEXT"),
    # 8: a sample run under an emulator (its times measure QEMU, its memory includes QEMU's);
    # a board's clock, temperature and throttling bits after the sample (NULL: not exposed)
    ("ALTER TABLE samples ADD COLUMN emulated INTEGER NOT NULL DEFAULT 0",
     "ALTER TABLE samples ADD COLUMN clock_mhz REAL",
     "ALTER TABLE samples ADD COLUMN temp_c REAL",
     "ALTER TABLE samples ADD COLUMN throttled INTEGER"),
]
assert len(_MIGRATIONS) == SCHEMA_VERSION - 1

_TABLES = ("meta", "runs", "artifacts", "target_status", "samples", "outcomes", "warnings")

# What a column added by a migration stands for in a database that predates it (read-only).
_ADDED_DEFAULTS: dict[str, Any] = {"kind": "timed", "discarded": None, "design": "sequential",
                                   "cpu": None, "repeat": 1, "foreign_cpu_s": None,
                                   "steal_s": None, "covariate": None, "minflt": None,
                                   "majflt": None, "counters_json": None, "owner_pid": None,
                                   "tree_peak_rss_kb": None, "tree_memory": None,
                                   "emulated": 0, "clock_mhz": None, "temp_c": None,
                                   "throttled": None,
                                   "owner_start": None, "owner_boot": None, "owner_host": None}


def _field(row: sqlite3.Row, name: str) -> Any:
    # `name in row` would search the row's values, not its column names.
    return row[name] if name in row.keys() else _ADDED_DEFAULTS[name]  # noqa: SIM118


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


P = ParamSpec("P")
R = TypeVar("R")


def _guarded(method: Callable[Concatenate[Store, P], R]) -> Callable[Concatenate[Store, P], R]:
    """Every SQLite failure of a public method leaves it as one StoreError."""
    def run(self: Store, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise faults.translate(exc, self.path, self.timeout) from exc

    return functools.wraps(method)(run)


def _writer(method: Callable[Concatenate[Store, P], R]) -> Callable[Concatenate[Store, P], R]:
    """A method that writes: refused on a store opened read-only, guarded like every other."""
    def run(self: Store, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if self.readonly:
            raise faults.readonly(self.path, "opened read-only, for reading")
        return method(self, *args, **kwargs)

    return _guarded(functools.wraps(method)(run))


class Store:
    """The results database at path; `readonly` for the commands that only read it.

    timeout: how long a write waits for another process's lock (seconds; default from
    ABIBENCH_DB_TIMEOUT, else 30) before it fails with EXIT_STORE_LOCKED.
    """

    def __init__(self, path: Path, readonly: bool = False, timeout: float | None = None) -> None:
        self.path = path
        self.readonly = readonly
        self.timeout = faults.busy_timeout() if timeout is None else timeout
        try:
            self.db = self._open_readonly() if readonly else self._open_writable()
            self.db.row_factory = sqlite3.Row
            # An older schema opened read-only has no owners: its runs keep their status.
            self._owner_columns = self._has_column("runs", "owner_pid")
        except sqlite3.Error as exc:
            self.close()
            raise faults.translate(exc, path, self.timeout) from exc

    def _connect(self, target: str, uri: bool = False) -> sqlite3.Connection:
        return sqlite3.connect(target, uri=uri, isolation_level=None, timeout=self.timeout)

    def _open_writable(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise faults.from_os(exc, self.path) from exc
        db = self._connect(str(self.path))
        try:
            # Checked before anything writes: a damaged file is left exactly as it was.
            self._check_intact(db)
            db.execute("PRAGMA journal_mode=WAL")
            self._migrate(db)
        except BaseException:
            db.close()
            raise
        return db

    def _open_readonly(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise UsageError(f"no results database at {self.path}: run `abibench run` first")
        uri = self.path.absolute().as_uri()
        db = self._connect(f"{uri}?mode=ro", uri=True)
        try:
            db.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()
        except sqlite3.OperationalError as exc:
            db.close()
            if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_CANTOPEN:
                raise
            db = self._open_immutable(uri)
        try:
            self._check_readable(db)
        except BaseException:
            db.close()
            raise
        return db

    def _open_immutable(self, uri: str) -> sqlite3.Connection:
        """A WAL database on a read-only mount: SQLite cannot create the -shm index it reads
        the log through. Without a log, nobody can be writing there and the file is complete,
        so it is read as immutable; with one, that would silently miss what the log holds."""
        wal = self.path.with_name(self.path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise faults.readonly(self.path, f"{wal} holds results not yet in the database and "
                                  "its -shm index cannot be created here; open the database once "
                                  "where it can be written, then read it here")
        db = self._connect(f"{uri}?immutable=1", uri=True)
        try:
            db.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def _check_intact(self, db: sqlite3.Connection) -> None:
        rows = db.execute("PRAGMA quick_check").fetchall()
        if [r[0] for r in rows] != ["ok"]:
            raise faults.corrupt(self.path, f"quick_check: {rows[0][0] if rows else 'no answer'}")

    def _check_readable(self, db: sqlite3.Connection) -> None:
        """An older schema is read as it is; a newer one or a foreign file is refused."""
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type='table'")}
        if not set(_TABLES) <= tables:
            raise UsageError(f"{self.path} holds no abibench results: run `abibench run` first "
                             "or choose another with --db")
        self._check_version(db)

    def _check_version(self, db: sqlite3.Connection) -> int:
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = 1 if row is None else int(row[0])
        if version > SCHEMA_VERSION:
            raise UsageError(f"{self.path} was written by a newer abibench (schema "
                             f"{version}): upgrade abibench or use another --db")
        return version

    def _migrate(self, db: sqlite3.Connection) -> None:
        # IMMEDIATE takes the write lock now: a database that cannot be written, or that another
        # process holds, fails here at once, before a run probes and builds anything.
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(_SCHEMA):
                db.execute(statement)
            version = self._check_version(db)
            for step in _MIGRATIONS[version - 1:]:
                for statement in step:
                    db.execute(statement)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                       (str(SCHEMA_VERSION),))
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise

    def _has_column(self, table: str, column: str) -> bool:
        return any(r["name"] == column for r in self.db.execute(f"PRAGMA table_info({table})"))

    def close(self) -> None:
        # Everything was committed call by call; a final checkpoint that fails (a full disk)
        # leaves the log beside the file, and the next open reads it.
        db: sqlite3.Connection | None = getattr(self, "db", None)  # None: opening failed
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside is committed together, or not at all."""
        if self.readonly:
            raise faults.readonly(self.path, "opened read-only, for reading")
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise faults.translate(exc, self.path, self.timeout) from exc
        try:
            yield
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(self.db)
            raise faults.translate(exc, self.path, self.timeout) from exc
        except BaseException:
            _rollback(self.db)
            raise

    # Writing: each call is its own transaction, committed before it returns.
    @_writer
    def create_run(self, run: Run, host: HostContext, owned: bool = True) -> None:
        """owned: this process writes the run (False for an imported run: nobody writes it)."""
        who = owner.current() if owned else None
        self.db.execute(
            "INSERT INTO runs(id, started, finished, status, tool_version, host_json, config_json, "
            "owner_pid, owner_start, owner_boot, owner_host) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (run.id, run.started, run.finished, run.status, run.tool_version,
             json.dumps(host.to_dict()), json.dumps(run.config.to_dict()),
             *(_owner_values(who))))

    @_writer
    def finish_run(self, run_id: str, finished: str | None, status: str) -> None:
        self.db.execute("UPDATE runs SET finished=?, status=? WHERE id=?",
                        (finished, status, run_id))

    @_writer
    def claim_run(self, run_id: str) -> None:
        """Make this process the writer of a stored run again (`run --resume`): status running.

        Refused when the run is complete, or running with a writer that is alive or cannot be
        judged (another host). A running run with no recorded writer (stored before writers
        were recorded) can be claimed: no abibench that could still write it records none.
        """
        with self.transaction():
            row = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
            if row is None:
                raise UsageError(f"run '{run_id}' not found in {self.path}: see `abibench runs`")
            status = self._status(row)
            if status == "complete":
                raise UsageError(f"run {run_id} is complete: nothing to resume; start a new one "
                                 "with `abibench run`")
            who = self._owner_of(row)
            if status == owner.RUNNING and who is not None:
                raise UsageError(f"run {run_id} is still running (pid {who.pid} on {who.host}): "
                                 "let it finish or stop it, then resume it")
            self.db.execute("UPDATE runs SET status=?, finished=NULL, owner_pid=?, owner_start=?, "
                            "owner_boot=?, owner_host=? WHERE id=?",
                            (owner.RUNNING, *_owner_values(owner.current()), run_id))

    @_writer
    def add_artifact(self, run_id: str, artifact: Artifact) -> None:
        info = {**artifact.info_dict(), **artifact.extra}
        self.db.execute("INSERT INTO artifacts(run_id, workload, target, cached, info_json) "
                        "VALUES (?,?,?,?,?)", (run_id, artifact.workload, artifact.target,
                                               int(artifact.cached), json.dumps(info)))

    @_writer
    def set_target_status(self, run_id: str, status: TargetStatus) -> None:
        self.db.execute("INSERT INTO target_status(run_id, workload, target, state, reason) "
                        "VALUES (?,?,?,?,?)", (run_id, status.workload, status.target,
                                               status.state, status.reason))

    @_writer
    def add_warning(self, run_id: str, warning: RunWarning) -> None:
        self.db.execute("INSERT INTO warnings(run_id, workload, target, message) VALUES (?,?,?,?)",
                        (run_id, warning.workload, warning.target, warning.message))

    @_writer
    def set_outcome(self, run_id: str, workload: str, outcome: Outcome) -> None:
        self.db.execute("INSERT OR REPLACE INTO outcomes VALUES (?,?,?,?)",
                        (run_id, workload, outcome.rounds, outcome.stop_reason))

    @_writer
    def add_sample(self, s: Sample) -> None:
        self.db.execute(
            "INSERT INTO samples(run_id, workload, target, round, position, warmup, status, "
            "exit_code, wall_s, user_s, sys_s, max_rss_kb, stdout_digest, check_value, "
            "metrics_json, error, started_at, env_pad, instructions, kind, discarded, design, "
            "cpu, repeat, foreign_cpu_s, steal_s, covariate, minflt, majflt, counters_json, "
            "tree_peak_rss_kb, tree_memory, emulated, clock_mhz, temp_c, throttled) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (s.run_id, s.workload, s.target, s.round, s.position, int(s.warmup), s.status,
             s.exit_code, s.wall_s, s.user_s, s.sys_s, s.max_rss_kb, s.stdout_digest, s.check,
             json.dumps(s.metrics), s.error, s.started_at, s.env_pad, s.instructions, s.kind,
             s.discarded, s.design, s.cpu, s.repeat, s.foreign_cpu_s, s.steal_s, s.covariate,
             s.minflt, s.majflt,
             None if s.counters is None else json.dumps(s.counters.to_dict()),
             s.tree_peak_rss_kb, s.tree_memory, int(s.emulated), s.clock_mhz, s.temp_c,
             s.throttled))

    @_writer
    def discard_samples(self, run_id: str, workload: str, rounds: Iterable[int],
                        reason: str) -> int:
        """Mark the samples of these rounds of a workload as no longer counted (kept as they
        were measured); a sample already discarded keeps its first reason. Returns how many."""
        marked = 0
        with self.transaction():
            for rnd in sorted(set(rounds)):
                marked += self.db.execute(
                    "UPDATE samples SET discarded=? WHERE run_id=? AND workload=? AND round=? "
                    "AND discarded IS NULL", (reason, run_id, workload, rnd)).rowcount
        return marked

    # Reading
    def _owner_of(self, row: sqlite3.Row) -> Owner | None:
        pid = _field(row, "owner_pid")
        if pid is None:
            return None
        return Owner(int(pid), _field(row, "owner_start"), _field(row, "owner_boot"),
                     str(_field(row, "owner_host") or ""))

    def _status(self, row: sqlite3.Row, here: Owner | None = None) -> str:
        """The stored status, or `abandoned` for a running run whose writer has died."""
        return owner.effective_status(row["status"], self._owner_of(row),
                                      here or owner.current())

    @_guarded
    def run_ids(self) -> list[str]:
        return [r["id"] for r in self.db.execute("SELECT id FROM runs ORDER BY started, id")]

    @_guarded
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

    @_guarded
    def runs(self) -> list[RunListing]:
        owners = (", r.owner_pid, r.owner_start, r.owner_boot, r.owner_host"
                  if self._owner_columns else "")
        rows = self.db.execute(
            f"SELECT r.id, r.started, r.finished, r.status{owners}, "
            "(SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id) AS samples FROM runs r "
            "ORDER BY r.started, r.id")
        here = owner.current()
        return [RunListing(r["id"], r["started"], r["finished"], self._status(r, here),
                           r["samples"]) for r in rows]

    @_guarded
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
                   instructions=r["instructions"], kind=_field(r, "kind"),
                   discarded=_field(r, "discarded"), design=_field(r, "design"),
                   cpu=_field(r, "cpu"), repeat=_field(r, "repeat"),
                   foreign_cpu_s=_field(r, "foreign_cpu_s"), steal_s=_field(r, "steal_s"),
                   covariate=_field(r, "covariate"),
                   minflt=_field(r, "minflt"), majflt=_field(r, "majflt"),
                   counters=_counters(_field(r, "counters_json")),
                   tree_peak_rss_kb=_field(r, "tree_peak_rss_kb"),
                   tree_memory=_field(r, "tree_memory"), emulated=bool(_field(r, "emulated")),
                   clock_mhz=_field(r, "clock_mhz"), temp_c=_field(r, "temp_c"),
                   throttled=_field(r, "throttled"))
            for r in rows
        ]

    @_guarded
    def load_run(self, run_id: str) -> RunDoc:
        """Everything about one run."""
        return RunDoc.from_dict(self.load_run_dict(run_id))

    @_guarded
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
                    "status": self._status(run), "tool_version": run["tool_version"],
                    "config": json.loads(run["config_json"])},
            "host": json.loads(run["host_json"]),
            "artifacts": artifacts,
            "target_status": statuses,
            "warnings": warnings,
            "outcomes": outcomes,
            "samples": [s.to_dict() for s in self.samples(run_id)],
        }


def _counters(text: str | None) -> CounterProfile | None:
    return None if text is None else CounterProfile.from_dict(json.loads(text))


def _owner_values(who: Owner | None) -> tuple[int | None, int | None, str | None, str | None]:
    if who is None:
        return (None, None, None, None)
    return (who.pid, who.start, who.boot, who.host)


def _rollback(db: sqlite3.Connection) -> None:
    """Undo an open transaction; SQLite may have rolled it back already (a full disk does)."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
