"""What goes wrong with a PostgreSQL results database, as one line and an exit code.

Two kinds matter most. *Unreachable* (no server, a refused or timed-out connection, a
connection lost mid-statement, a server shutting down or out of connection slots) is
`StoreUnreachable`, exit 10: a run goes on into its local spool (store/spool.py), a reading
command ends. Everything the server *answered* maps like SQLite's faults (store/faults.py):

====================================================  =====================================
SQLSTATE                                              exit code
====================================================  =====================================
53100 disk full                                       6 (EXIT_STORE_FULL)
25006 read-only transaction, 42501 no privilege       7 (EXIT_STORE_READONLY)
XX001/XX002 data or index corrupted                   8 (EXIT_STORE_CORRUPT)
55P03 lock timeout, 40P01 deadlock, 40001, 57014      9 (EXIT_STORE_LOCKED)
28xxx wrong password or user, 3D000 no such database  2 (EXIT_USAGE): fix the URL or
and anything else                                     the credentials
====================================================  =====================================

Measured with psycopg 3.3 and PostgreSQL 15: every failure to *connect* comes without a
SQLSTATE, the refused port and the wrong password alike; an error the server sent while
connecting has "FATAL:" in its text, a network failure has not. A statement in flight when the
server stops fails with no SQLSTATE ("server closed the connection unexpectedly"); an idle
connection's next statement gets 57P01; after either the connection is broken.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ..errors import (
    EXIT_STORE_CORRUPT,
    EXIT_STORE_FULL,
    EXIT_STORE_LOCKED,
    EXIT_STORE_READONLY,
    EXIT_USAGE,
    StoreError,
    StoreUnreachable,
)
from .faults import TIMEOUT_ENV
from .url import redact

_SERVER_ANSWERED = "FATAL:"
_NOT_NOW = ("the database system is starting up", "the database system is shutting down",
            "the database system is in recovery mode", "too many clients already",
            "remaining connection slots are reserved")
_UNREACHABLE_STATES = ("57P01", "57P02", "57P03", "53300")
_CREDENTIALS = ("password authentication failed", "no password supplied",
                "authentication failed", "role \"")


def one_line(exc: BaseException) -> str:
    return " ".join(redact(str(exc) or type(exc).__name__).split())


def is_unreachable(exc: BaseException, conn: psycopg.Connection[Any] | None = None) -> bool:
    """Whether the failure means no server (or no connection to it), not a refused request."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    if conn is not None and (conn.closed or conn.broken):
        return True
    state = exc.sqlstate
    if state is not None:
        return state.startswith("08") or state in _UNREACHABLE_STATES
    text = str(exc)
    if _SERVER_ANSWERED in text:  # the server is up and said no (password, database, ...)
        return any(t in text for t in _NOT_NOW)
    return True


def unreachable(label: str, detail: str) -> StoreUnreachable:
    reason = f"results database {label} cannot be reached ({detail})"
    return StoreUnreachable(f"{reason}: start the server or check the network, then run again (a "
                            "run keeps what it measures in its local spool; `abibench push` "
                            "uploads it)", reason)


def translate(exc: psycopg.Error, label: str, timeout: float,
              conn: psycopg.Connection[Any] | None = None) -> StoreError:
    """The one-line error of a failed PostgreSQL call on the database named label."""
    detail = one_line(exc)
    if is_unreachable(exc, conn):
        return unreachable(label, detail)
    state = exc.sqlstate or ""
    if state == "53100":
        return StoreError(f"results database {label}: the server's disk is full ({detail}); "
                          "every sample committed before is kept: free space on the server",
                          EXIT_STORE_FULL)
    if state in ("25006", "42501"):
        return StoreError(f"results database {label} cannot be written ({detail}): grant the "
                          "user the right to write it, or choose another with --db (runs, "
                          "report, compare and export only read it)", EXIT_STORE_READONLY)
    if state in ("XX001", "XX002"):
        return StoreError(f"results database {label} is damaged ({detail}): ask its "
                          "administrator to repair it from a backup", EXIT_STORE_CORRUPT)
    if state in ("55P03", "40P01", "40001", "57014"):
        return StoreError(f"results database {label} is locked by another writer (waited "
                          f"{timeout:g}s; {TIMEOUT_ENV} sets how long): let it finish or try "
                          "again", EXIT_STORE_LOCKED)
    if state.startswith("28") or any(c in detail for c in _CREDENTIALS):
        return StoreError(f"results database {label}: the server refused the login ({detail}): "
                          "check the user and the password (in the URL, PGPASSFILE or "
                          "PGPASSWORD)", EXIT_USAGE)
    if state == "3D000" or ("database \"" in detail and "does not exist" in detail):
        return StoreError(f"results database {label} does not exist on that server ({detail}): "
                          "create it (createdb) or fix the URL", EXIT_USAGE)
    return StoreError(f"results database {label}: {detail}: check the server and the URL, or "
                      "choose another with --db", EXIT_USAGE)
