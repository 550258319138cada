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
import sqlite3
from collections.abc import Sequence
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
            db.execute("PRAGMA journal_mode=WAL")
            self.db = db
            self.migrate()
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

    def close(self) -> None:
        # Everything was committed call by call; a final checkpoint that fails (a full disk)
        # leaves the log beside the file, and the next open reads it.
        db: sqlite3.Connection | None = getattr(self, "db", None)  # None: opening failed
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()


def _rollback(db: sqlite3.Connection) -> None:
    """Undo an open transaction; SQLite may have rolled it back already (a full disk does)."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
