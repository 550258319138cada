"""Durable results: one SQLite file, every sample committed the moment it exists.

Opened for writing (`run`, `import`), the database is checked first (`PRAGMA quick_check`:
a damaged file is never written to), migrated, and every call is its own transaction. Opened
read-only (`runs`, `report`, `compare`, `export`), it is never migrated or written, so results
on a read-only file, directory or mount can still be read; an older schema is read as it is,
with the defaults its missing columns stand for. Every SQLite failure leaves a public method
as one `StoreError` (store/faults.py), never as a traceback.

The queries themselves are the common ones of store/sql.py; this module opens the file and says
how SQLite differs.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import StoreError, UsageError
from ..outputs import protect_database
from . import faults
from .schema import SCHEMA_TEMPLATE, SCHEMA_VERSION, SQLITE, migrations
from .sql import Cursor, RunListing, SqlStore
from .url import sqlite_file

__all__ = ["SCHEMA_VERSION", "_MIGRATIONS", "_SCHEMA", "RunListing", "Store"]

# Version 1 of the schema and the steps after it as SQLite has them (tests build old databases
# from them).
_SCHEMA = SQLITE.render(SCHEMA_TEMPLATE)
_MIGRATIONS = migrations(SQLITE)


class Store(SqlStore):
    """The results database at path; `readonly` for the commands that only read it.

    timeout: how long a write waits for another process's lock (seconds; default from
    ABIBENCH_DB_TIMEOUT, else 30) before it fails with EXIT_STORE_LOCKED.
    """

    dialect = SQLITE
    _fd: int | None = None  # the database file, opened for `after_commit`'s check
    _wal: faults.Identity | None = None  # its -wal log as it was opened
    _shm: faults.Identity | None = None  # and the log's -shm index

    def __init__(self, path: Path, readonly: bool = False, timeout: float | None = None) -> None:
        # Checked before anything is created: this store makes the file's directory.
        self.path = sqlite_file(path)
        # No report or export of this command may be written over it (outputs.py).
        protect_database(self.path)
        self.label = str(path)
        self.local_dir = path.parent
        self.readonly = readonly
        self.timeout = faults.busy_timeout() if timeout is None else timeout
        try:
            self.db = self._open_readonly() if readonly else self._open_writable()
            # An older schema opened read-only has no owners: its runs keep their status.
            self.after_open()
        except sqlite3.Error as exc:
            self.close()
            raise faults.translate(exc, path, self.timeout) from exc

    def _connect(self, target: str, uri: bool = False) -> sqlite3.Connection:
        db = sqlite3.connect(target, uri=uri, isolation_level=None, timeout=self.timeout)
        db.row_factory = sqlite3.Row
        return db

    def _open_writable(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise faults.from_os(exc, self.path) from exc
        db = self._connect(str(self.path))
        try:
            # Checked before anything writes: a damaged file is left exactly as it was.
            self._check_intact(db)
            wal = db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
            self.db = db
            self.migrate()
            self._remember_file(wal)
        except BaseException:
            db.close()
            raise
        return db

    def _remember_file(self, wal: bool) -> None:
        """Which file (and log) this connection writes, to tell at every commit whether it is
        still the one at the path. SQLite keeps its own descriptor private; this one is opened
        right after SQLite opened and wrote the file, and stays open with it."""
        try:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise faults.from_os(exc, self.path) from exc
        # The log and its index exist from the migration's commit on, and SQLite keeps them
        # while it is open.
        self._wal, self._shm = (_identity(self.path, "-wal"), _identity(self.path, "-shm")) \
            if wal else (None, None)
        problem = faults.identity_problem(self.path, self._fd, self._wal)
        if problem is not None:  # replaced between SQLite's open and ours
            os.close(self._fd)
            self._fd = None
            raise faults.lost(self.path, problem)

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
        self.db = db
        try:
            self.check_readable()
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

    # --------------------------------------------------------------- how SQLite differs

    def execute(self, query: str, params: Sequence[Any] = ()) -> Cursor:
        return self.db.execute(query, params)

    def tuples(self, query: str, params: Sequence[Any] = ()) -> Iterator[Sequence[Any]]:
        # A cursor of its own without the connection's Row factory: each row comes as the
        # tuple sqlite3 makes anyway (10^6 samples: a Row and a tuple() copy less each).
        cursor = self.db.cursor()
        cursor.row_factory = None
        return cursor.execute(query, params)

    def samples_of(self, run_id: str) -> str:
        # A run's rows in id order: through the index on run_id, SQLite sorts them (all their
        # columns) in a temporary tree; a run that is most of the table is read faster by one
        # pass over the table, which is in id order already (10^6 samples: 6.2 -> 4.9 s CPU).
        mine = self.db.execute("SELECT COUNT(*) FROM samples WHERE run_id=?",
                               (run_id,)).fetchone()[0]
        every = self.db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
        return "samples NOT INDEXED" if 2 * mine >= every else "samples"

    def execute_many(self, query: str, rows: Iterable[Sequence[Any]]) -> None:
        self.db.executemany(query, rows)

    def translate(self, exc: Exception) -> StoreError | None:
        if isinstance(exc, sqlite3.Error):
            return faults.translate(exc, self.path, self.timeout)
        return None

    def refuse_write(self) -> StoreError:
        return faults.readonly(self.path, "opened read-only, for reading")

    def begin(self, schema_change: bool = False) -> None:
        # IMMEDIATE takes the write lock now: a database that cannot be written, or that another
        # process holds, fails here at once (before a run probes and builds anything).
        self.db.execute("BEGIN IMMEDIATE")

    def rollback(self) -> None:
        _rollback(self.db)

    def tables(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT name FROM sqlite_schema WHERE type='table'")}

    def has_column(self, table: str, column: str) -> bool:
        return any(r["name"] == column for r in self.db.execute(f"PRAGMA table_info({table})"))

    def null_columns(self, table: str) -> frozenset[str]:
        # read from the database itself (a column's default is what its creation said)
        return frozenset(r["name"] for r in self.db.execute(f"PRAGMA table_info({table})")
                         if not r["notnull"] and r["dflt_value"] is None and not r["pk"])

    def after_commit(self) -> None:
        if self._fd is None:  # read-only, or still opening (the migration)
            return
        try:
            problem = faults.identity_problem(self.path, self._fd, self._wal)
        except OSError as exc:
            raise faults.from_os(exc, self.path) from exc
        if problem is not None:
            raise faults.lost(self.path, problem)

    def save_as(self, target: Path) -> None:
        """Copy everything this connection can still read into a new database at target (a
        deleted or replaced file stays readable through the descriptor SQLite holds)."""
        copy = self._connect(str(target))
        try:
            self.db.backup(copy)
        finally:
            copy.close()

    def _orphaned_side_files(self) -> list[Path]:
        """This connection's log and index when the database file they go with is no longer
        at the path: left there, they would be read into whatever file is put there next."""
        if self._fd is None:
            return []
        try:
            here = faults.identity_of(os.stat(self.path))
        except FileNotFoundError:
            here = None
        if here == faults.identity_of(os.fstat(self._fd)):
            return []
        return [self.path.with_name(self.path.name + suffix)
                for suffix, mine in (("-wal", self._wal), ("-shm", self._shm))
                if mine is not None and _identity(self.path, suffix) == mine]

    def close(self) -> None:
        orphans = self._orphaned_side_files()
        # Everything was committed call by call; a final checkpoint that fails (a full disk)
        # leaves the log beside the file, and the next open reads it.
        db: sqlite3.Connection | None = getattr(self, "db", None)  # None: opening failed
        if db is not None:
            if orphans:
                # Into the file itself, wherever it was moved (SQLite does not checkpoint a
                # moved file on close): the log it leaves behind then holds nothing.
                with contextlib.suppress(sqlite3.Error):
                    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            with contextlib.suppress(sqlite3.Error):
                db.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        for side in orphans:
            with contextlib.suppress(FileNotFoundError):
                side.unlink()


def _identity(path: Path, suffix: str) -> faults.Identity | None:
    """Which file the database's side file (-wal, -shm) is; None when there is none."""
    try:
        return faults.identity_of(os.stat(path.with_name(path.name + suffix)))
    except FileNotFoundError:
        return None


def _rollback(db: sqlite3.Connection) -> None:
    """Undo an open transaction; SQLite may have rolled it back already (a full disk does)."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
