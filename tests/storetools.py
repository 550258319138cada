"""What the store's tests use beside abibench: rows read straight from a results database, and
real file systems (tiny tmpfs, read-only views) to fail it on. tests/conftest.py gives them to
tests as fixtures."""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def query_rows(db: str | Path, query: str, *params: object) -> list[tuple[Any, ...]]:
    """Rows straight from a results database, a SQLite file or a PostgreSQL URL, around
    abibench's store (`?` placeholders); [] while it has no such table (nothing stored yet)."""
    if str(db).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(str(db)) as pg:
            try:
                return list(pg.execute(query.replace("?", "%s"), params).fetchall())
            except psycopg.errors.UndefinedTable:
                return []
    if not Path(db).exists():
        return []  # never created: connecting would create it
    con = sqlite3.connect(db)
    try:
        return list(con.execute(query, params).fetchall())
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    finally:
        con.close()


DbRows = Callable[..., list[tuple[Any, ...]]]


class Mounts:
    """Real file systems under a test's temporary directory: tiny tmpfs, read-only views."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.mounted: list[Path] = []

    def _mount(self, *args: str) -> None:
        done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"cannot mount here: {done.stderr.strip()}")

    def tmpfs(self, size: str) -> Path:
        """A new tmpfs of this size (like '256k'), mounted on an empty directory."""
        where = self.root / f"tmpfs{len(self.mounted)}"
        where.mkdir()
        self._mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where))
        self.mounted.append(where)
        return where

    def read_only(self, path: Path) -> None:
        """Make a mounted tmpfs read-only, or put a read-only view over a file or directory."""
        if path in self.mounted:
            self._mount("-o", "remount,ro", str(path))
            return
        self._mount("--bind", str(path), str(path))
        self.mounted.append(path)
        self._mount("-o", "remount,bind,ro", str(path))

    def undo(self) -> None:
        for where in reversed(self.mounted):
            done = subprocess.run(["umount", str(where)], capture_output=True, check=False)
            if done.returncode != 0:  # still busy: detach it now, the kernel frees it later
                subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)
        self.mounted.clear()
