"""The results database a --db value names: a SQLite file (the default) or a PostgreSQL URL."""

from __future__ import annotations

import os

from ..outputs import protect_database
from ..paths import default_db
from .sql import SqlStore
from .url import is_url, sqlite_file

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
