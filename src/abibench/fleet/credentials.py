"""The shared database's password, for the hosts of a fleet, without ever showing it.

The password is found where libpq would find it on this machine: in the URL, in PGPASSWORD, or
in the password file (PGPASSFILE, else ~/.pgpass; a `host:port:db:user:password` line, `*`
matching anything). It travels to each host as a password file of mode 0600, copied by the
playbook with `no_log` (never on a command line, never in Ansible's output), and the URL the
hosts get has no password in it.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from ..store.url import password_of

DEFAULT_PORT = 5432


def _fields(line: str) -> list[str]:
    """A pgpass line's five fields (`\\:` and `\\\\` escaped)."""
    out, cur, escaped = [], "", False
    for ch in line:
        if escaped:
            cur += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ":":
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(":", "\\:")


def from_passfile(path: Path, host: str, port: int, db: str, user: str) -> str | None:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    want = (host, str(port), db, user)
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = _fields(line)
        if len(parts) == 5 and all(p in ("*", w) for p, w in zip(parts[:4], want, strict=True)):
            return parts[4]
    return None


def password_for(url: str) -> str | None:
    """The password libpq would use for this URL here, if any."""
    given = password_of(url)
    if given:
        return given
    if os.environ.get("PGPASSWORD"):
        return os.environ["PGPASSWORD"]
    parts = urlsplit(url)
    passfile = Path(os.environ.get("PGPASSFILE") or Path.home() / ".pgpass")
    return from_passfile(passfile, parts.hostname or "", parts.port or DEFAULT_PORT,
                         parts.path.lstrip("/"), parts.username or os.environ.get("PGUSER", ""))


def write_passfile(url: str, path: Path) -> Path | None:
    """A 0600 password file for the hosts (None: there is no password to pass on)."""
    password = password_for(url)
    if password is None:
        return None
    parts = urlsplit(url)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"{_escape(parts.hostname or '*')}:{parts.port or DEFAULT_PORT}:"
                f"{_escape(parts.path.lstrip('/') or '*')}:{_escape(parts.username or '*')}:"
                f"{_escape(password)}\n")
    return path
