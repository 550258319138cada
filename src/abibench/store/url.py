"""Which --db names a shared server, and how to show one without its password.

A password may come with the URL (`postgresql://user:secret@host:port/db`), from PGPASSFILE or
from PGPASSWORD. abibench never prints one: every message that names the database uses
`safe_url`, and every text a driver returns passes `redact` first.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

_SCHEME = re.compile(r"^postgres(ql)?://", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/@\s]*:)[^@\s]*@", re.IGNORECASE)
_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)", re.IGNORECASE)


def is_url(ref: str) -> bool:
    """Whether a --db value names a PostgreSQL server rather than a SQLite file."""
    return bool(_SCHEME.match(ref))


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
