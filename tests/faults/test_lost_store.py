"""The store knows when it is lost, in this process: every way a SQLite file can be lost under
its writer (generated), at any write, is caught at the commit after it, and what the writer
stored is still readable from it for the recovery file."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.errors import EXIT_STORE_LOST, StoreLost
from abibench.records import HostContext, Run, RunConfig, Sample
from abibench.store.faults import SQLITE_MAGIC
from abibench.store.sqlite import Store

MakeSample = Callable[..., Sample]


def _other_database(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes(x)")
    con.commit()
    con.close()


def _lose(how: str, db: Path, junk: bytes) -> bytes | None:
    """Do it to the database; returns the bytes of a file put at its path, if any."""
    wal = db.with_name(db.name + "-wal")
    if how == "deleted":
        db.unlink()
    elif how == "moved":
        db.rename(db.with_name("elsewhere.sqlite"))
    elif how == "replaced":
        other = db.with_name("other.sqlite")
        _other_database(other)
        os.replace(other, db)
        return db.read_bytes()
    elif how == "overwritten":
        with db.open("r+b") as f:
            f.write(junk)
    elif how == "log-deleted":
        wal.unlink()
    elif how == "log-replaced":
        data = wal.read_bytes()
        wal.unlink()
        wal.write_bytes(data)
    return None


LOSSES = ("deleted", "moved", "replaced", "overwritten", "log-deleted", "log-replaced")


@settings(max_examples=40, deadline=None)
@given(how=st.sampled_from((*LOSSES, "kept")), before=st.integers(0, 6),
       junk=st.binary(min_size=1, max_size=120).filter(
           lambda b: b[:len(SQLITE_MAGIC)] != SQLITE_MAGIC[:len(b)]))
def test_a_lost_database_is_caught_at_the_next_commit(how: str, before: int, junk: bytes,
                                                      make_sample: MakeSample) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "results.sqlite"
        store = Store(db)
        store.create_run(Run("r1", "2026-01-01T00:00:00", None, "running", "0",
                             RunConfig({})), HostContext())
        for rnd in range(before):
            store.add_sample(make_sample("r1", round=rnd))
        put = None if how == "kept" else _lose(how, db, junk)
        try:
            store.add_sample(make_sample("r1", round=before))
        except StoreLost as exc:
            assert how != "kept", exc
            assert exc.exit_code == EXIT_STORE_LOST and str(db) in str(exc)
            assert "\n" not in str(exc)
        else:
            assert how == "kept", f"{how}: not caught"
        # Everything written, the write that found the loss included, is still readable
        # through the open connection, and is what a recovery file gets.
        saved = Path(tmp) / "saved.sqlite"
        store.save_as(saved)
        store.close()
        copy = Store(saved, readonly=True)
        assert [s.round for s in copy.samples("r1")] == list(range(before + 1))
        copy.close()
        if put is not None:
            # The file put at the path is untouched, and no log of the lost one is beside it.
            assert hashlib.sha256(db.read_bytes()).digest() == hashlib.sha256(put).digest()
        if how in ("deleted", "moved", "replaced"):
            assert not any(db.with_name(db.name + s).exists() for s in ("-wal", "-shm"))
        if how == "moved":
            # Its log went into it before the log was removed: the moved file is whole.
            moved = Store(db.with_name("elsewhere.sqlite"), readonly=True)
            assert len(moved.samples("r1")) == before + 1
            moved.close()
