"""The results database a --db value names: a SQLite file (the default) or a PostgreSQL URL."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..outputs import protect_database
from ..paths import default_db
from .url import is_url, sqlite_file

if TYPE_CHECKING:
    # Only named here: the store's classes are imported by open_store, so that a command that
    # names the database without opening it (every parse of --db) does not import them.
    from .sql import SqlStore

DB_ENV = "ABIBENCH_DB"


def db_ref(given: str | None) -> str:
    """--db, else ABIBENCH_DB, else the default SQLite file. A file named here is protected
    from this command's outputs (outputs.py) even when the command reads only exported files."""
    ref = given or os.environ.get(DB_ENV) or str(default_db())
    if not is_url(ref):
        protect_database(ref)
    return ref


def open_store(ref: str, readonly: bool = False) -> SqlStore:
    if is_url(ref):
        from .postgres import PgStore  # psycopg is loaded only by those who use a server

        return PgStore(ref, readonly=readonly)
    from .sqlite import Store

    return Store(sqlite_file(ref), readonly=readonly)
