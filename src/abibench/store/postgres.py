"""The shared results database: PostgreSQL through psycopg 3, many hosts writing at once.

`--db postgresql://USER@HOST:PORT/DBNAME` (or `ABIBENCH_DB`). The tables and every query are
those of the SQLite store (store/schema.py, store/sql.py); this module connects and says how
PostgreSQL differs: `%s` placeholders, a transaction that creates or migrates tables takes an
advisory lock (so writers starting together take turns), rows a transaction updates are locked
with `FOR UPDATE` (two hosts cannot both resume one run), and its faults (store/pgfaults.py).

Each writer works in its own autocommit session, so a sample is committed the moment it is
stored and visible to every reader at once; run ids are unique (a time stamp and random
digits), and no run ever reads another's rows as its own. A store opened read-only runs every
transaction read-only on the server (`default_transaction_read_only`) and is never migrated.
The password comes from the URL, PGPASSFILE or PGPASSWORD (libpq's own rules); it is never
shown: the store is named by `safe_url` in every message.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row

from ..errors import EXIT_STORE_READONLY, StoreError
from ..paths import data_dir
from ..text import MARKER
from . import faults, pgfaults
from .schema import POSTGRESQL
from .sql import Cursor, SqlStore
from .url import safe_url

# One advisory lock key for creating and migrating the tables (any constant both sides share).
_SCHEMA_LOCK = zlib.crc32(b"abibench-schema")
DEFAULT_CONNECT_TIMEOUT_S = 10


def connect_options(url: str, readonly: bool, lock_timeout_s: float) -> dict[str, Any]:
    """psycopg.connect's keyword arguments; what the URL or libpq's environment sets wins."""
    settings = [f"-c lock_timeout={int(lock_timeout_s * 1000)}", "-c client_min_messages=warning"]
    if readonly:
        settings.append("-c default_transaction_read_only=on")
    options: dict[str, Any] = {"autocommit": True, "row_factory": dict_row,
                               "application_name": "abibench", "options": " ".join(settings)}
    if "connect_timeout" not in url and "PGCONNECT_TIMEOUT" not in os.environ:
        options["connect_timeout"] = DEFAULT_CONNECT_TIMEOUT_S
    if "keepalives" not in url:
        # A server that vanishes without closing the connection (a cable, a crashed host) is
        # noticed within about half a minute instead of the kernel's two hours.
        options.update(keepalives=1, keepalives_idle=10, keepalives_interval=5,
                       keepalives_count=3, tcp_user_timeout=30_000)
    return options


def _text(value: Any) -> Any:
    """PostgreSQL's text cannot hold NUL, which SQLite's can: a program's output captured as a
    check value, or an imported document, may have one. It is stored as U+FFFD (text.MARKER,
    the character that stands for what cannot be shown), so no run or import fails on it."""
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", MARKER)
    return value


class PgStore(SqlStore):
    """The results database on a PostgreSQL server; `readonly` for the commands that read."""

    dialect = POSTGRESQL
    lock_rows = " FOR UPDATE"

    def __init__(self, url: str, readonly: bool = False, timeout: float | None = None) -> None:
        self._url = url  # holds the password when the URL does: never printed
        self.label = safe_url(url)
        self.local_dir = data_dir()
        self.readonly = readonly
        self.timeout = faults.busy_timeout() if timeout is None else timeout
        self.db: psycopg.Connection[Any] | None = None
        try:
            self.db = psycopg.connect(url, **connect_options(url, readonly, self.timeout))
            if readonly:
                self.check_readable()
            else:
                self.migrate()
            self.after_open()
        except psycopg.Error as exc:
            error = pgfaults.translate(exc, self.label, self.timeout, self.db)
            self.close()
            raise error from None  # psycopg's own text went into the message, redacted
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        """The URL as given, password included: for connecting, never for showing."""
        return self._url

    def _conn(self) -> psycopg.Connection[Any]:
        if self.db is None:
            raise pgfaults.unreachable(self.label, "the connection is closed")
        return self.db

    # --------------------------------------------------------------- how PostgreSQL differs

    def execute(self, query: str, params: Sequence[Any] = ()) -> Cursor:
        # The common SQL is written with `?` and never holds a literal `%` (psycopg would
        # need it doubled); values travel as parameters, never in the text.
        return self._conn().execute(query.replace("?", "%s"), [_text(p) for p in params])

    def translate(self, exc: Exception) -> StoreError | None:
        if isinstance(exc, psycopg.Error):
            return pgfaults.translate(exc, self.label, self.timeout, self.db)
        return None

    def refuse_write(self) -> StoreError:
        return StoreError(f"results database {self.label} cannot be written (opened read-only, "
                          "for reading)", EXIT_STORE_READONLY)

    def begin(self, schema_change: bool = False) -> None:
        self.execute("BEGIN")
        if schema_change:
            self.execute("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))

    def rollback(self) -> None:
        conn = self.db
        if conn is None or conn.closed:
            return
        if conn.info.transaction_status != TransactionStatus.IDLE:
            with contextlib.suppress(psycopg.Error):
                conn.execute("ROLLBACK")

    def tables(self) -> set[str]:
        return {r["table_name"] for r in self.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema()")}

    def has_column(self, table: str, column: str) -> bool:
        return self.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = ? AND column_name = ?", (table, column)).fetchone() is not None

    def close(self) -> None:
        if self.db is not None:
            with contextlib.suppress(psycopg.Error):
                self.db.close()
