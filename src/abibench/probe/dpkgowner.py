"""Which Debian package (and version) owns a file, asked of dpkg once per state of its database.

Every run records the package of each ABI's C library (probe/host.runtime_library). `dpkg -S`
reads every package's file list to answer (about 3,700 files here: 0.2-0.3 s of wall time a
call, two calls a run), and the answer changes only when dpkg's database does. It is kept in
the cache under a key of that database's state: the status file (every install, removal or
upgrade rewrites it, by a rename: its content names each package's version), the diversions
file (`dpkg -S` reports diversions) and the directory of file lists (a package's list is
renamed into it), each by its content (the files' digests, the directory's names) and by inode,
size and change times; with the path asked, where it resolves to, and the dpkg that answers.
Any change to any of them is another key, so a stale answer cannot be read back. Reading the
key costs about 10 ms (an 0.9 MB status file here).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from .. import kept

# Where dpkg keeps its database; dpkg itself honours DPKG_ADMINDIR the same way.
DEFAULT_ADMIN = "/var/lib/dpkg"
DB_PARTS = ("status", "diversions", "info")
ANSWER_MAX = 200  # a package name and version; anything longer is not one of ours


def admin_dir() -> Path:
    return Path(os.environ.get("DPKG_ADMINDIR") or DEFAULT_ADMIN)


def _stat_of(path: Path | str | None) -> list[int] | None:
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _content_of(path: Path) -> str | None:
    """A file's digest, or the sorted names of a directory's entries: a state's content,
    which a change within one tick of the file system's clock (same size, a reused inode)
    cannot hide the way it could hide from the times alone."""
    try:
        if path.is_dir():
            return hashlib.sha256("\n".join(sorted(os.listdir(path))).encode()).hexdigest()
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def db_key(path: str, admin: Path, dpkg: str | None) -> str:
    """What the owner of `path` is read from: a new key whenever any of it changes."""
    parts = {
        "path": path, "real": os.path.realpath(path), "dpkg": dpkg, "dpkg_stat": _stat_of(dpkg),
        "admin": str(admin),
        **{name: [_stat_of(admin / name), _content_of(admin / name)] for name in DB_PARTS},
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def ask_dpkg(loader: str) -> str | None:
    """`dpkg -S` for the loader (as packaged, then resolved), then the owner's version."""
    # dpkg knows the path as packaged, which may be the unresolved symlink; try both.
    for path in (loader, os.path.realpath(loader)):
        proc = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, check=False)
        if proc.returncode == 0 and ":" in proc.stdout:
            pkg = proc.stdout.split(": ", 1)[0].split(",")[0].strip()
            ver = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                                 text=True, check=False).stdout.strip()
            return f"{pkg} {ver}".strip()
    return None


def _is_answer(value: object) -> bool:
    """A package name and version, or None (nothing owns the file): the shape of an answer."""
    return value is None or (isinstance(value, str) and len(value) <= ANSWER_MAX)


def owner(loader: str, cache_root: Path | None,
          ask: Callable[[str], str | None] = ask_dpkg) -> str | None:
    """The owning package and version of `loader`, from the cache when dpkg's database is as
    it was when it was asked; None where dpkg is missing or nothing owns it."""
    dpkg = shutil.which("dpkg")
    if dpkg is None or not Path(loader).exists():
        return None
    if cache_root is None:
        return ask(loader)
    key = db_key(loader, admin_dir(), dpkg)
    # Kept only when the database did not change while dpkg read it (an install beside the run).
    return kept.answer(cache_root / "dpkg-owner" / f"{key}.json", {"dpkg-db": key}, _is_answer,
                       lambda: ask(loader), keep=lambda _: db_key(loader, admin_dir(), dpkg) == key)
