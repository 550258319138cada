"""Nothing lost when the network goes, or the file: every run writes through a local spool.

A run whose --db is a PostgreSQL URL writes every record twice: first into a local SQLite file
(the spool, one per shared database, in the data directory), then to the server. Both get the
same row numbers (`seq`, given by the spool), so the server's copy and the spool's are the same
rows. When the server cannot be reached, at the start or in the middle, the run says so once
and goes on into the spool alone; nothing it measures waits on the network.

`push` uploads every run of the spool whose writer is done (finished, or dead) in one
transaction per run: rows the server has already (by run and `seq`) are left as they are, what
can change after it was written (a run's status, an outcome, a sample's discarded mark) is
brought up to date, and the run leaves the spool once the server has committed it. A push
repeated, or cut short and started again, stores every row exactly once. `abibench push` runs
it, and so does the next run on the same database.

A run that never lost the server is removed from the spool when it ends: the spool only keeps
what the server may lack.

A run on a SQLite file spools the same way (`JournalSink`): every record goes first into a
journal in the run's own temporary directory, then into the file. The file can be lost under
the run: deleted, moved away, replaced or overwritten (the store notices at the commit after,
store/sqlite.py). Then the run says so once, writes a recovery file next to where the database
was (everything the lost file still holds, read through the descriptor SQLite keeps open, and
every record of the run from the journal), goes on into it, and ends with exit 11 naming it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreError, StoreLost, StoreUnreachable
from ..paths import data_dir
from ..records import Artifact, HostContext, Outcome, Run, RunDoc, RunWarning, Sample, TargetStatus
from ..sysrecords import SystemBoot
from ..workspace import owned_dir
from . import faultpoint, owner
from .schema import COLUMNS, SEQ_TABLES
from .sql import SqlStore
from .sqlite import Store
from .url import safe_url, spool_name

# The order a run's rows are uploaded in: the run first (the others refer to it), then every
# other table of a run's records as the schema lists what an upload copies (schema.COLUMNS).
# Derived, not listed: a table added for a new kind of run (a system run's boots) is pushed,
# copied on a claim and saved on a loss without anyone remembering to (the invariant "a push
# carries every record of a run, each once"; tests/store/test_push_system.py).
UPLOAD_ORDER = ("runs", *(t for t in COLUMNS if t != "runs"))


def spool_path(url: str) -> Path:
    """The local spool of one shared database: DATA_DIR/spool/USER@HOST_PORT_DB.sqlite."""
    return data_dir() / "spool" / spool_name(url)


@dataclass
class Pushed:
    run_id: str
    rows: dict[str, int]  # per table: rows in the spool
    new: dict[str, int]  # per table: rows the server did not have (or had older)

    @property
    def samples(self) -> int:
        return self.rows.get("samples", 0)

    @property
    def new_samples(self) -> int:
        return self.new.get("samples", 0)

    @property
    def boots(self) -> int:
        """A system run's boots (abibench system run)."""
        return self.rows.get("system_boots", 0)

    @property
    def new_boots(self) -> int:
        return self.new.get("system_boots", 0)

    def counted(self) -> str:
        """What the push brought, in words: samples, or a system run's boots."""
        if self.boots and not self.samples:
            return (f"{self.new_boots} new system boots of {self.boots} "
                    f"({self.boots - self.new_boots} were there already)")
        return (f"{self.new_samples} new samples of {self.samples} "
                f"({self.samples - self.new_samples} were there already)")

    def to_dict(self) -> dict[str, object]:
        return {"run_id": self.run_id, "rows": self.rows, "new": self.new}


def push(spool: SqlStore, dest: SqlStore) -> list[Pushed]:
    """Upload every run of the spool whose writer is done; each leaves the spool once stored."""
    done = []
    for listing in spool.runs():
        if listing.status == owner.RUNNING:
            continue  # its writer is alive and still writing: it pushes at its own end
        rows = {t: spool.rows(t, listing.id) for t in UPLOAD_ORDER}
        with dest.transaction():
            new = {t: dest.put_rows(t, rows[t]) for t in UPLOAD_ORDER}
        spool.delete_run(listing.id)
        done.append(Pushed(listing.id, {t: len(r) for t, r in rows.items()}, new))
    return done


class SpooledSink:
    """A RunSink that writes every record into a local SQLite spool first (it never waits on
    the network, and outlives the file), then into the destination while that is there.

    notice: told once, the moment the destination is lost (or found unreachable at the start).
    """

    # Which tables of a resumed run the spool copies from the destination when it claims it: the
    # run, and a system run's boots (a few rows, and what a resumed system run is judged by).
    claim_copies: tuple[str, ...] = ("runs", "system_boots")

    def __init__(self, notice: Callable[[str], None], spool: Store, remote: SqlStore | None,
                 label: str, local_dir: Path) -> None:
        self.notice = notice
        self.spool = spool
        self.remote = remote
        self.label = label
        self.local_dir = local_dir
        self.lost: str | None = None  # why the destination was given up
        self._mirrored: set[str] = set()  # runs the destination has whole

    @property
    def spooling(self) -> bool:
        return self.remote is None

    def _lose(self, exc: StoreUnreachable | StoreLost) -> None:
        """The destination is gone; the run goes on into the spool."""
        raise NotImplementedError

    def _both(self, write: Callable[[SqlStore], object]) -> None:
        """The spool first, then the destination if it is there."""
        write(self.spool)
        if self.remote is not None:
            try:
                write(self.remote)
            except (StoreUnreachable, StoreLost) as exc:
                # The record in flight may have reached the destination or not: it is in the
                # spool under the same number, and every copy keeps exactly one.
                self._lose(exc)

    # RunSink
    def create_run(self, run: Run, host: HostContext) -> None:
        self._both(lambda s: s.create_run(run, host))
        if self.remote is not None:
            self._mirrored.add(run.id)

    def claim_run(self, run_id: str) -> None:
        if self.remote is None:
            if run_id not in self.spool.run_ids():
                raise StoreUnreachable(f"{self.lost}: run {run_id} can only be resumed where "
                                       "the server is reached")
            self.spool.claim_run(run_id)  # resumable from what the spool itself holds
            return
        self.remote.claim_run(run_id)  # the destination decides: its run may be another host's
        for table in self.claim_copies:
            self.spool.put_rows(table, self.remote.rows(table, run_id))
        # The spool numbers the rows from here on, after everything either side has.
        theirs = self.remote.next_seqs(run_id)
        ours = self.spool.next_seqs(run_id)
        self.spool.seed_seqs(run_id, {t: max(theirs[t], ours[t]) for t in SEQ_TABLES})
        self._mirrored.add(run_id)

    def finish_run(self, run_id: str, finished: str, status: str) -> None:
        self._both(lambda s: s.finish_run(run_id, finished, status))

    def add_artifact(self, run_id: str, artifact: Artifact) -> None:
        seq = self.spool.take_seq("artifacts", run_id)
        self._both(lambda s: s.add_artifact(run_id, artifact, seq=seq))

    def set_target_status(self, run_id: str, status: TargetStatus) -> None:
        seq = self.spool.take_seq("target_status", run_id)
        self._both(lambda s: s.set_target_status(run_id, status, seq=seq))

    def add_warning(self, run_id: str, warning: RunWarning) -> None:
        seq = self.spool.take_seq("warnings", run_id)
        self._both(lambda s: s.add_warning(run_id, warning, seq=seq))

    def set_outcome(self, run_id: str, workload: str, outcome: Outcome) -> None:
        self._both(lambda s: s.set_outcome(run_id, workload, outcome))

    def add_sample(self, s: Sample) -> None:
        seq = self.spool.take_seq("samples", s.run_id)
        self._both(lambda store: store.add_sample(s, seq=seq))
        faultpoint.reached("sample")  # a fault injected after the k-th sample is stored

    def add_system_boot(self, run_id: str, boot: SystemBoot) -> None:
        """A system run's boot: numbered by its place in the run's order (boot.index), the
        same number in the spool and in the destination, so every copy keeps it once."""
        self._both(lambda s: s.add_system_boot(run_id, boot))

    def discard_samples(self, run_id: str, workload: str, rounds: Iterable[int],
                        reason: str) -> int:
        wanted = sorted(set(rounds))
        marked = self.spool.discard_samples(run_id, workload, wanted, reason)
        if self.remote is not None:
            try:
                marked = self.remote.discard_samples(run_id, workload, wanted, reason)
            except (StoreUnreachable, StoreLost) as exc:
                self._lose(exc)
        return marked

    # Reading what was just written
    def run_ids(self) -> list[str]:
        return (self.remote or self.spool).run_ids()

    def resolve_run(self, ref: str | None) -> str:
        return (self.remote or self.spool).resolve_run(ref)

    def load_run(self, run_id: str) -> RunDoc:
        """The destination's copy while it holds the run whole, else the spool's (which has
        every record written since the run began or was resumed here)."""
        if self.remote is not None and (run_id in self._mirrored or
                                        run_id not in self.spool.run_ids()):
            return self.remote.load_run(run_id)
        return self.spool.load_run(run_id)


class SpoolingSink(SpooledSink):
    """The RunSink of a run on a shared database: the spool always, the server while it
    answers."""

    def __init__(self, url: str, notice: Callable[[str], None], path: Path | None = None) -> None:
        from .postgres import PgStore  # psycopg is loaded only by those who use a server

        spool = Store(path or spool_path(url))
        super().__init__(notice, spool, None, safe_url(url), data_dir())
        self.url = url
        self.pushed: list[Pushed] = []
        try:
            self.remote = PgStore(url)
        except StoreUnreachable as exc:
            self._lose(exc)
            return
        except BaseException:
            self.spool.close()
            raise
        try:
            # What an earlier run could not upload goes first (the "next run" of `push`).
            self.pushed = push(self.spool, self.remote)
        except StoreUnreachable as exc:
            self._lose(exc)

    def __repr__(self) -> str:  # never the URL: it may hold a password
        return f"SpoolingSink({self.label!r})"

    def _lose(self, exc: StoreUnreachable | StoreLost) -> None:
        if self.remote is not None:
            self.remote.close()
            self.remote = None
        self._mirrored.clear()
        if self.lost is None:
            self.lost = exc.reason
            self.notice(f"{exc.reason}; the run goes on into the local spool "
                        f"{self.spool.label}: `abibench --db {self.label} push` uploads it once "
                        "the server is back")

    def close(self) -> None:
        """Runs the server holds whole leave the spool: it keeps only what the server lacks."""
        try:
            for run_id in sorted(self._mirrored):
                self.spool.delete_run(run_id)
        finally:
            self.spool.close()
            if self.remote is not None:
                self.remote.close()


def recovery_path(db: Path, run_id: str) -> Path:
    """A new file beside where the lost database was, else in the data directory (its
    directory may be gone or read-only too): RESULTS.recovered-RUN[-N].sqlite, created empty
    and exclusively, so nothing is ever overwritten."""
    problems = []
    # A directory deleted with the database is not made again; the data directory is.
    for where in dict.fromkeys([*([db.parent] if db.parent.is_dir() else []), data_dir()]):
        for n in range(1, 100):
            path = where / f"{db.stem}.recovered-{run_id}{'' if n == 1 else f'-{n}'}.sqlite"
            try:
                where.mkdir(parents=True, exist_ok=True)
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except FileExistsError:
                continue
            except OSError as exc:
                problems.append(f"{where}: {exc.strerror}")
                break
            return path
    raise StoreLost(f"results database {db} was lost while run {run_id} wrote it, and no "
                    f"recovery file could be made ({'; '.join(problems) or 'all names taken'}): "
                    "free space or permissions there, or choose another --db")


class JournalSink(SpooledSink):
    """The RunSink of a run on a SQLite file: a journal of the run in its temporary directory
    first, then the file; the journal becomes a recovery file when the file is lost."""

    claim_copies = UPLOAD_ORDER  # a resumed run's journal holds all of it

    def __init__(self, store: Store, journal: Path, notice: Callable[[str], None]) -> None:
        spool = Store(journal)
        # The journal need only outlive this process (it is read when the database is lost
        # under it), not a power cut: no waiting for the disk at each commit.
        spool.execute("PRAGMA synchronous=OFF")
        super().__init__(notice, spool, store, store.label, store.local_dir)
        self.db = store
        self.recovered: Path | None = None
        self._recovered_runs: list[str] = []

    def _lose(self, exc: StoreUnreachable | StoreLost) -> None:
        if self.remote is None:
            return
        run_ids = self.spool.run_ids()
        target = recovery_path(self.db.path, run_ids[0] if run_ids else "run")
        try:
            # Deleted or replaced, the lost file is still readable through SQLite's descriptor:
            # every run it held is saved, not only this one.
            self.db.save_as(target)
            saved = Store(target)
        except (sqlite3.Error, StoreError):
            try:
                self.spool.save_as(target)  # overwritten: the journal has all of this run
            except sqlite3.Error as err:
                raise StoreLost(f"{exc.reason}, and the recovery file {target} could not be "
                                f"written ({err}): free space there or choose another --db",
                                exc.reason) from err
            saved = Store(target)
        with saved.transaction():
            for run_id in run_ids:
                for table in UPLOAD_ORDER:
                    saved.put_rows(table, self.spool.rows(table, run_id))
        self.remote.close()
        self.remote = None
        self._mirrored.clear()
        self.spool.close()
        self.spool = saved
        self.recovered = target
        self._recovered_runs = run_ids
        self.label, self.local_dir = saved.label, target.parent
        self.lost = exc.reason
        self.notice(f"{exc.reason}; the run goes on into {target}, which holds every record "
                    "of the run")

    def lost_error(self) -> StoreLost | None:
        """The run's last word when the database was lost under it: where its results are."""
        if self.recovered is None or self.lost is None:
            return None
        run = self._recovered_runs[0] if len(self._recovered_runs) == 1 else "RUN"
        saved = self.recovered
        return StoreLost(f"{self.lost}; every record of run {run} is in {saved} (`abibench --db "
                         f"{saved} report {run}` reads it; `abibench --db {saved} export {run} "
                         f"-o {run}.json` then `abibench --db {self.db.path} import {run}.json` "
                         "brings it back)",
                         self.lost)

    def close(self) -> None:
        self.spool.close()  # the database itself is closed by whoever opened it (`journaled`)


@contextlib.contextmanager
def journaled(db: Path, notice: Callable[[str], None]) -> Iterator[JournalSink]:
    """A run's sink for the SQLite file at db, its journal in a temporary directory of this
    process (removed on every exit; `clean_stale` removes one a SIGKILL left)."""
    store = Store(db)  # refused here (read-only, corrupt, locked) before anything is made
    try:
        with owned_dir("journal") as work:
            sink = JournalSink(store, work / "journal.sqlite", notice)
            try:
                yield sink
            finally:
                sink.close()
    finally:
        store.close()
