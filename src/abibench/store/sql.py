"""The results store over any SQL backend: every query, written once.

A backend (store/sqlite.py, store/postgres.py) opens its connection and says how its engine
differs: how a statement runs (placeholders), how a write transaction begins, which tables and
columns exist, and what its failures mean (one `StoreError` each). Everything a run writes and
every reader reads is here, so both backends store and return exactly the same thing.

Every write is its own transaction, committed before the call returns (`transaction()` groups
several). Rows of a run are numbered by its writer (`seq`): the same numbers in a local spool
and in the shared store, which is what makes an upload idempotent (store/spool.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from ..codec import encode
from ..errors import StoreError, UsageError
from ..records import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    Artifact,
    HostContext,
    Outcome,
    Run,
    RunConfig,
    RunDoc,
    RunWarning,
    Sample,
    TargetStatus,
)
from ..sysrecords import SystemBoot
from . import owner
from .batch import Record
from .finite import checked
from .owner import Owner
from .schema import (
    ADDED_DEFAULTS,
    COLUMNS,
    KEYS,
    NEXT_STORED,
    SAMPLE_COLUMNS,
    SCHEMA_VERSION,
    SEQ_TABLES,
    TABLES,
    Dialect,
    migrations,
    sample_reader,
    sample_row,
    schema,
    upsert,
)
from .sqltypes import Cursor, RunListing

__all__ = ["Cursor", "RunListing", "SqlStore", "field_of"]

_ADD_COLUMN = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (\w+)")


def field_of(row: Any, name: str) -> Any:
    """A column of a row, or what it stands for in a schema that predates it."""
    # `name in row` would search a sqlite3.Row's values, not its column names.
    return row[name] if name in row.keys() else ADDED_DEFAULTS[name]  # noqa: SIM118


P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="SqlStore")


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Every failure of the engine leaves a public method as one StoreError."""
    def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            error = self.translate(exc)
            if error is None:
                raise
            raise error from exc

    return functools.wraps(method)(run)


def writer(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A method that writes: refused on a store opened read-only, guarded like every other,
    and followed by the backend's check that what it committed reached the database."""
    def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if self.readonly:
            raise self.refuse_write()
        done = method(self, *args, **kwargs)
        self.after_commit()
        return done

    return guarded(functools.wraps(method)(run))


class SqlStore:
    """The results database: what a run writes (the RunSink protocol) and what readers read."""

    dialect: Dialect
    label: str  # the database as messages name it: a path, or a URL without its password
    readonly: bool
    timeout: float  # how long a write waits for another writer's lock (seconds)
    local_dir: Path  # where files that go with the results are written (reports, profiles)
    # Whether the schema has the columns later versions added (an older one opened read-only
    # is read as it is).
    _owner_columns: bool = True
    _stored_column: bool = True  # whether runs record the order they were stored in

    # --------------------------------------------------------------- what a backend provides

    def execute(self, query: str, params: Sequence[Any] = ()) -> Cursor:
        """One statement with `?` placeholders."""
        raise NotImplementedError

    def translate(self, exc: Exception) -> StoreError | None:
        """The one-line error of a failure of the engine; None for anything else."""
        raise NotImplementedError

    def execute_many(self, query: str, rows: Iterable[Sequence[Any]]) -> None:
        """One statement for many rows (a backend may prepare it once)."""
        for row in rows:
            self.execute(query, row)

    def refuse_write(self) -> StoreError:
        raise NotImplementedError

    def begin(self, schema_change: bool = False) -> None:
        """Start a write transaction; `schema_change`: one that creates or migrates tables,
        which concurrent writers must take in turn."""
        raise NotImplementedError

    def rollback(self) -> None:
        raise NotImplementedError

    def tables(self) -> set[str]:
        raise NotImplementedError

    def has_column(self, table: str, column: str) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def after_commit(self) -> None:
        """Raise StoreLost when what was just committed did not reach the database its users
        open (a file deleted or replaced under this process); a server has nothing to check."""

    lock_rows = ""  # appended to a SELECT whose rows the transaction then updates

    # --------------------------------------------------------------- schema

    def check_readable(self) -> None:
        """An older schema is read as it is; a newer one or a foreign database is refused."""
        if not set(TABLES) <= self.tables():
            raise UsageError(f"{self.label} holds no abibench results: run `abibench run` first "
                             "or choose another with --db")
        self.check_version()

    def check_version(self) -> int:
        row = self.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = 1 if row is None else int(row["value"])
        if version > SCHEMA_VERSION:
            raise UsageError(f"{self.label} was written by a newer abibench (schema "
                             f"{version}; this one knows {SCHEMA_VERSION}): upgrade abibench "
                             "or use another --db")
        return version

    def migrate(self) -> None:
        """Create the tables, or bring an older schema up to date, in one transaction."""
        self.begin(schema_change=True)
        try:
            for statement in schema(self.dialect):
                self.execute(statement)
            version = self.check_version()
            # A step runs when the version says it is due, or when a column it adds is
            # missing; a column already there is not added twice. A database written by a
            # development build may hold another step's columns under its version number,
            # and it must still converge on this schema.
            for number, step in enumerate(migrations(self.dialect), start=2):
                missing = {m.groups() for m in map(_ADD_COLUMN.match, step) if m is not None
                           and not self.has_column(m[1], m[2])}
                if number <= version and not missing:
                    continue
                for statement in step:
                    added = _ADD_COLUMN.match(statement)
                    if added is None or added.groups() in missing:
                        self.execute(statement)
            # A field added to Sample since: its column, derived from the field.
            for column in SAMPLE_COLUMNS:
                if not self.has_column("samples", column.name):
                    self.execute(f"ALTER TABLE samples ADD COLUMN {column.definition(self.dialect)}")
            self.execute(upsert("meta", ("key", "value")), ("schema_version", str(SCHEMA_VERSION)))
            self.execute("COMMIT")
        except BaseException:
            self.rollback()
            raise

    def after_open(self) -> None:
        self._owner_columns = self.has_column("runs", "owner_pid")
        self._stored_column = self.has_column("runs", "stored")
        self._seqs: dict[tuple[str, str], int] = {}

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside is committed together, or not at all."""
        if self.readonly:
            raise self.refuse_write()
        self._guard(self.begin)
        try:
            yield
            self._guard(lambda: self.execute("COMMIT"))
        except BaseException:
            self.rollback()
            raise
        self.after_commit()

    def _guard(self, call: Callable[[], object]) -> None:
        try:
            call()
        except Exception as exc:
            error = self.translate(exc)
            if error is None:
                raise
            raise error from exc

    def _stored_next(self, table: str, run_id: str) -> int:
        row = self.execute(f"SELECT MAX(seq) AS n FROM {table} WHERE run_id=?",
                           (run_id,)).fetchone()
        return 0 if row is None or row["n"] is None else int(row["n"]) + 1

    def _seq(self, table: str, run_id: str, given: int | None) -> int:
        """The number of a run's next row in a table: `given` (a writer that numbers rows for
        two stores at once), else this store's own count."""
        key = (table, run_id)
        if given is not None:
            self._seqs[key] = max(self._seqs.get(key, 0), given + 1)
            return given
        if key not in self._seqs:
            self._seqs[key] = self._stored_next(table, run_id)
        seq = self._seqs[key]
        self._seqs[key] = seq + 1
        return seq

    @guarded
    def take_seq(self, table: str, run_id: str) -> int:
        """The number the run's next row in this table gets; counted as used."""
        return self._seq(table, run_id, None)

    def seed_seqs(self, run_id: str, nexts: dict[str, int]) -> None:
        """Number the run's next rows from these on (a writer that resumes another's run)."""
        for table, n in nexts.items():
            self._seqs[(table, run_id)] = n

    @guarded
    def next_seqs(self, run_id: str) -> dict[str, int]:
        """The next row number of a run in each numbered table, as stored."""
        return {table: self._stored_next(table, run_id) for table in SEQ_TABLES}

    # --------------------------------------------------------------- writing

    @writer
    def create_run(self, run: Run, host: HostContext, owned: bool = True) -> None:
        """owned: this process writes the run (False for an imported run: nobody writes it)."""
        who = owner.current() if owned else None
        self.execute(
            "INSERT INTO runs(id, started, finished, status, tool_version, host_json, config_json, "
            f"owner_pid, owner_start, owner_boot, owner_host, stored) VALUES "
            f"(?,?,?,?,?,?,?,?,?,?,?,{NEXT_STORED})",
            (run.id, run.started, run.finished, run.status, run.tool_version,
             json.dumps(host.to_dict()), json.dumps(run.config.to_dict()),
             *(_owner_values(who))))

    @writer
    def finish_run(self, run_id: str, finished: str | None, status: str) -> None:
        self.execute("UPDATE runs SET finished=?, status=? WHERE id=?", (finished, status, run_id))

    @writer
    def claim_run(self, run_id: str) -> None:
        """Make this process the writer of a stored run again (`run --resume`): status running.

        Refused when the run is complete, or running with a writer that is alive or cannot be
        judged (another host). A running run with no recorded writer (stored before writers
        were recorded) can be claimed: no abibench that could still write it records none.
        """
        with self.transaction():
            row = self.execute(f"SELECT * FROM runs WHERE id=?{self.lock_rows}",
                               (run_id,)).fetchone()
            if row is None:
                raise UsageError(f"run '{run_id}' not found in {self.label}: see `abibench runs`")
            status = self._status(row)
            if status == "complete":
                raise UsageError(f"run {run_id} is complete: nothing to resume; start a new one "
                                 "with `abibench run`")
            who = self._owner_of(row)
            if status == owner.RUNNING and who is not None:
                raise UsageError(f"run {run_id} is still running (pid {who.pid} on {who.host}): "
                                 "let it finish or stop it, then resume it")
            self.execute("UPDATE runs SET status=?, finished=NULL, owner_pid=?, owner_start=?, "
                         "owner_boot=?, owner_host=? WHERE id=?",
                         (owner.RUNNING, *_owner_values(owner.current()), run_id))
        self._seqs = {k: v for k, v in self._seqs.items() if k[1] != run_id}

    @writer
    def add_artifact(self, run_id: str, artifact: Artifact, seq: int | None = None) -> None:
        info = {**artifact.info_dict(), **artifact.extra}
        self.execute("INSERT INTO artifacts(run_id, seq, workload, target, cached, info_json) "
                     "VALUES (?,?,?,?,?,?)",
                     (run_id, self._seq("artifacts", run_id, seq), artifact.workload,
                      artifact.target, int(artifact.cached), json.dumps(info)))

    @writer
    def set_target_status(self, run_id: str, status: TargetStatus, seq: int | None = None) -> None:
        self.execute("INSERT INTO target_status(run_id, seq, workload, target, state, reason) "
                     "VALUES (?,?,?,?,?,?)",
                     (run_id, self._seq("target_status", run_id, seq), status.workload,
                      status.target, status.state, status.reason))

    @writer
    def add_warning(self, run_id: str, warning: RunWarning, seq: int | None = None) -> None:
        self.execute("INSERT INTO warnings(run_id, seq, workload, target, message) "
                     "VALUES (?,?,?,?,?)",
                     (run_id, self._seq("warnings", run_id, seq), warning.workload,
                      warning.target, warning.message))

    @writer
    def set_run_config(self, run_id: str, config: RunConfig) -> None:
        """Replace what a run records it was asked to do (an import notes its digest once the
        streamed document has been read to its end)."""
        self.execute("UPDATE runs SET config_json=? WHERE id=?",
                     (json.dumps(config.to_dict()), run_id))

    @writer
    def set_outcome(self, run_id: str, workload: str, outcome: Outcome) -> None:
        self.execute(upsert("outcomes", COLUMNS["outcomes"]),
                     (run_id, workload, outcome.rounds, outcome.stop_reason))

    @writer
    def add_system_boot(self, run_id: str, boot: SystemBoot) -> None:
        """A system run's boot, the moment it ends; a boot stored again (a resumed run) keeps
        the first."""
        self.execute(upsert("system_boots", COLUMNS["system_boots"], ()),
                     (run_id, boot.index, json.dumps(encode(boot))))

    @writer
    def add_sample(self, s: Sample, seq: int | None = None) -> None:
        columns = COLUMNS["samples"]
        self.execute(
            f"INSERT INTO samples({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
            sample_row(s, self._seq("samples", s.run_id, seq)))

    @writer
    def add_samples(self, run_id: str, samples: Iterable[Sample]) -> int:
        """Store many samples of one run under `run_id` (whatever run id they carry) in one
        statement prepared once; returns how many."""
        return self.add_sample_rows(run_id, map(Record, samples))

    @writer
    def add_sample_rows(self, run_id: str, batches: Iterable[Any]) -> int:
        """Store samples given as row makers (store/batch.py: `n`, `nulls()`, `rows(first
        seq, run_id, columns kept)`) under `run_id`, numbered on from the run's last; returns
        how many (an import of 10^6 samples is this). A column null in every row of a batch
        is left out where the table's default for it is null (`null_columns`): the same row,
        and SQLite binds about half the values (10^6 rows: 13.2 -> 6.6 s of CPU, load 14)."""
        columns = COLUMNS["samples"][2:]  # after run_id and seq
        nullable = self.null_columns("samples")
        may_omit = frozenset(i for i, c in enumerate(columns) if c in nullable)
        first = self._seq("samples", run_id, None)
        count = 0

        def rows(group: Iterable[Any], keep: list[int]) -> Iterator[Iterable[Any]]:
            nonlocal count
            for batch in group:  # a batch's rows at once: no Python code run per row
                yield batch.rows(first + count, run_id, keep)
                count += batch.n
        for omit, group in itertools.groupby(batches, lambda b: b.nulls() & may_omit):
            keep = [i for i in range(len(columns)) if i not in omit]
            names = ("run_id", "seq", *(columns[i] for i in keep))
            query = f"INSERT INTO samples({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
            self.execute_many(query, itertools.chain.from_iterable(rows(group, keep)))
        self._seqs[("samples", run_id)] = first + count
        return count

    def null_columns(self, table: str) -> frozenset[str]:
        """The table's columns that may be null and default to null (here none: all given)."""
        return frozenset()

    @writer
    def discard_samples(self, run_id: str, workload: str, rounds: Iterable[int],
                        reason: str) -> int:
        """Mark the samples of these rounds of a workload as no longer counted (kept as they
        were measured); a sample already discarded keeps its first reason. Returns how many."""
        marked = 0
        with self.transaction():
            for rnd in sorted(set(rounds)):
                marked += self.execute(
                    "UPDATE samples SET discarded=? WHERE run_id=? AND workload=? AND round=? "
                    "AND discarded IS NULL", (reason, run_id, workload, rnd)).rowcount
        return marked

    # --------------------------------------------------------------- copying between stores

    @guarded
    def rows(self, table: str, run_id: str) -> list[tuple[Any, ...]]:
        """A run's rows of a table, every column an upload copies, in the order written."""
        columns = COLUMNS[table]
        key = "id" if table == "runs" else "run_id"
        order = "id" if table in SEQ_TABLES else ", ".join(KEYS[table])
        return [tuple(r[c] for c in columns) for r in self.execute(
            f"SELECT {', '.join(columns)} FROM {table} WHERE {key}=? ORDER BY {order}", (run_id,))]

    @writer
    def put_rows(self, table: str, rows: Sequence[tuple[Any, ...]]) -> int:
        """Store rows copied from another store of the same schema; a row already here by its
        key is left as it is, except what can change after it was written (a run's status and
        owner, an outcome, a sample's discarded mark), which the copy brings up to date.
        Returns how many rows were new or changed."""
        columns = COLUMNS[table]
        if table == "samples":
            query = upsert(table, columns, ("discarded",),
                           "samples.discarded IS NULL AND excluded.discarded IS NOT NULL")
        elif table in ("runs", "outcomes"):
            rest = tuple(c for c in columns if c not in KEYS[table])
            query = upsert(table, columns, rest,
                           " OR ".join(f"{table}.{c} IS DISTINCT FROM excluded.{c}" for c in rest))
        else:
            query = upsert(table, columns, ())
        changed = sum(max(self.execute(query, row).rowcount, 0) for row in rows)
        if table == "runs":
            self.execute(f"UPDATE runs SET stored = {NEXT_STORED} WHERE stored IS NULL")
        return changed

    @writer
    def delete_run(self, run_id: str) -> None:
        """Remove a run and everything of it (a spool, once the shared store holds it)."""
        with self.transaction():
            for table in ("samples", "artifacts", "target_status", "warnings", "outcomes",
                          *(["system_boots"] if "system_boots" in self.tables() else [])):
                self.execute(f"DELETE FROM {table} WHERE run_id=?", (run_id,))
            self.execute("DELETE FROM runs WHERE id=?", (run_id,))
        self._seqs = {k: v for k, v in self._seqs.items() if k[1] != run_id}

    # --------------------------------------------------------------- reading

    def _owner_of(self, row: Any) -> Owner | None:
        pid = field_of(row, "owner_pid")
        if pid is None:
            return None
        return Owner(int(pid), field_of(row, "owner_start"), field_of(row, "owner_boot"),
                     str(field_of(row, "owner_host") or ""))

    def _status(self, row: Any, here: Owner | None = None) -> str:
        """The stored status, or `abandoned` for a running run whose writer has died."""
        return owner.effective_status(row["status"], self._owner_of(row),
                                      here or owner.current())

    @guarded
    def run_ids(self) -> list[str]:
        return [r["id"] for r in self.execute("SELECT id FROM runs ORDER BY started, id")]

    @guarded
    def resolve_run(self, ref: str | None) -> str:
        ids = self.run_ids()
        if not ids:
            raise UsageError(f"no runs in {self.label}: run `abibench run` first")
        if ref in (None, "latest", "last"):
            return self._latest()
        matches = [i for i in ids if i == ref] or [i for i in ids if ref and i.startswith(ref)]
        if len(matches) != 1:
            raise UsageError(f"run '{ref}' {'is ambiguous' if matches else 'not found'} in "
                             f"{self.label}: see `abibench runs`")
        return matches[0]

    def _latest(self) -> str:
        """The run stored last here (a database that predates the order: the latest date)."""
        stored = "COALESCE(stored, 0) DESC, " if self._stored_column else ""
        row = self.execute(f"SELECT id FROM runs ORDER BY {stored}started DESC, id DESC "
                           "LIMIT 1").fetchone()
        return str(row["id"])

    @guarded
    def runs(self) -> list[RunListing]:
        owners = (", r.owner_pid, r.owner_start, r.owner_boot, r.owner_host"
                  if self._owner_columns else "")
        rows = self.execute(
            f"SELECT r.id, r.started, r.finished, r.status{owners}, "
            "(SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id) AS samples, "
            + ("(SELECT COUNT(*) FROM system_boots b WHERE b.run_id = r.id)"
               if "system_boots" in self.tables() else "0") + " AS boots FROM runs r "
            "ORDER BY r.started, r.id")
        here = owner.current()
        return [RunListing(r["id"], r["started"], r["finished"], self._status(r, here),
                           int(r["samples"]), int(r["boots"])) for r in rows]

    @guarded
    def runs_with(self, text: str) -> list[str]:
        """Ids of the runs whose recorded configuration holds this text (a fleet's id)."""
        return [r["id"] for r in self.execute(
            "SELECT id FROM runs WHERE config_json LIKE ? ORDER BY started, id",
            (f"%{text}%",))]

    @guarded
    def run_config(self, run_id: str) -> dict[str, Any]:
        """What a run recorded it was asked to do, without loading its samples."""
        row = self.execute("SELECT config_json FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise UsageError(f"run '{run_id}' not found in {self.label}")
        config: dict[str, Any] = json.loads(row["config_json"])
        return config

    @guarded
    def samples(self, run_id: str) -> list[Sample]:
        return list(self.iter_samples(run_id))

    def iter_samples(self, run_id: str) -> Iterator[Sample]:
        """A run's samples in the order written, read one row at a time: the columns this
        database has of the Sample's, in the order of its fields."""
        have = {d[0] for d in self.execute("SELECT * FROM samples WHERE 0=1").description}
        names = [c.name for c in SAMPLE_COLUMNS if c.name in have]
        read = sample_reader(names)
        yield from checked(map(read, self.tuples(f"SELECT {', '.join(names)} FROM "
                                          f"{self.samples_of(run_id)} WHERE run_id=? "
                                          "ORDER BY id", (run_id,))))

    def samples_of(self, run_id: str) -> str:
        """The samples table as a query on one run's samples names it (SQLite may choose how
        it is read; the rows and their order are the same)."""
        return "samples"

    def tuples(self, query: str, params: Sequence[Any] = ()) -> Iterator[Sequence[Any]]:
        """A query's rows as plain sequences of their values, for a reader that takes each
        row by position (SQLite's backend gives them without making a Row object first)."""
        for row in self.execute(query, params):
            # SQLite's rows are sequences, PostgreSQL's (psycopg's dict_row) are mappings
            yield tuple(row.values()) if isinstance(row, dict) else tuple(row)

    @guarded
    def load_run(self, run_id: str) -> RunDoc:
        """Everything about one run. The samples go from their rows to records directly (not
        through the export document's JSON form and back: 3x the work for a large run)."""
        head = RunDoc.from_dict(self.load_run_dict(run_id, with_samples=False))
        return dataclasses.replace(head, samples=tuple(self.iter_samples(run_id)))

    @guarded
    def load_run_dict(self, run_id: str, with_samples: bool = True) -> dict[str, Any]:
        """Everything about one run, as the versioned export document (without its samples
        when not `with_samples`)."""
        run = self.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if run is None:
            raise UsageError(f"run '{run_id}' not found in {self.label}")
        artifacts = [
            {"workload": r["workload"], "target": r["target"], "cached": bool(r["cached"]),
             **json.loads(r["info_json"])}
            for r in self.execute("SELECT * FROM artifacts WHERE run_id=? ORDER BY id", (run_id,))
        ]
        statuses = [dict(r) for r in self.execute(
            "SELECT workload, target, state, reason FROM target_status WHERE run_id=? ORDER BY id",
            (run_id,))]
        warnings = [dict(r) for r in self.execute(
            "SELECT workload, target, message FROM warnings WHERE run_id=? ORDER BY id",
            (run_id,))]
        outcomes = {r["workload"]: {"rounds": r["rounds"], "stop_reason": r["stop_reason"]}
                    for r in self.execute("SELECT * FROM outcomes WHERE run_id=?", (run_id,))}
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
            "system_boots": self._system_boots(run_id),
            "samples": [s.to_dict() for s in self.iter_samples(run_id)] if with_samples else [],
        }


    def _system_boots(self, run_id: str) -> list[Any]:
        if "system_boots" not in self.tables():  # a database older than system runs
            return []
        return [json.loads(r["boot_json"]) for r in self.execute(
            "SELECT boot_json FROM system_boots WHERE run_id=? ORDER BY seq", (run_id,))]


def _owner_values(who: Owner | None) -> tuple[int | None, int | None, str | None, str | None]:
    if who is None:
        return (None, None, None, None)
    return (who.pid, who.start, who.boot, who.host)
