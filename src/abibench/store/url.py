"""Which --db names a shared server, and how to show one without its password.

A password may come with the URL (`postgresql://user:secret@host:port/db`), from PGPASSFILE or
from PGPASSWORD. abibench never prints one: every message that names the database uses
`safe_url`, and every text a driver returns passes `redact` first.
"""

from __future__ import annotations

import re
from os import PathLike
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from ..errors import UsageError

# Any URL, also once pathlib has folded its "//" into "/" (Path("postgresql://h/db") is
# "postgresql:/h/db"): a scheme, a colon and a slash.
_ANY_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):/")
_SCHEME = re.compile(r"^postgres(ql)?://", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/@\s]*:)[^@\s]*@", re.IGNORECASE)
_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)", re.IGNORECASE)


def is_url(ref: str) -> bool:
    """Whether a --db value names a PostgreSQL server rather than a SQLite file."""
    return bool(_SCHEME.match(ref))


def looks_like_url(ref: str | PathLike[str]) -> bool:
    """Whether a --db value (or a path made from one) is a URL of any kind."""
    return bool(_ANY_URL.match(str(ref)))


def sqlite_file(ref: str | PathLike[str]) -> Path:
    """The SQLite file a --db value names. A URL is never one: made into a path, it would
    become directories named after its scheme, user, password and host in the current
    directory, and a database file named after the database."""
    match = _ANY_URL.match(str(ref))
    if match:
        # Only the scheme is shown: the rest may carry a password, and a folded URL is not
        # one `redact` recognises.
        raise UsageError(f"--db {match.group(1)}:... is a URL, and abibench knows only "
                         "postgresql://USER@HOST:PORT/DBNAME (a shared PostgreSQL database); a "
                         "SQLite database is given as a file path")
    return Path(ref)


def safe_url(url: str) -> str:
    """The URL without a password: `postgresql://user@host:port/db` (other parameters kept)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        user = f"{parts.username}@" if parts.username else ""
    except ValueError:  # a malformed port: show nothing that could be a secret
        return f"{url.split('://', 1)[0]}://(malformed URL)"
    if ":" in host:  # an IPv6 address goes back into brackets
        host = f"[{host}]"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                       if k.lower() != "password"])
    return urlunsplit((parts.scheme, f"{user}{host}{port}", parts.path, query, ""))


def redact(text: str) -> str:
    """Any text with passwords hidden: in URLs (`user:***@`) and as `password=***`."""
    return _KEYWORD_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", text))


def password_of(url: str) -> str | None:
    """The password the URL itself carries, if any."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.password is not None:
        return unquote(parts.password)
    for key, value in parse_qsl(parts.query):
        if key.lower() == "password":
            return value
    return None


def without_password(url: str) -> str:
    """The URL a password-less copy of which can travel (to a fleet's hosts, into a log)."""
    return safe_url(url)


def spool_name(url: str) -> str:
    """A file name for the local spool of one shared database: user, host, port, database."""
    parts = urlsplit(url)
    raw = f"{parts.username or ''}@{parts.hostname or ''}_{parts.port or 5432}_" \
          f"{parts.path.lstrip('/') or 'default'}"
    return re.sub(r"[^A-Za-z0-9._@-]+", "_", raw) + ".sqlite"
