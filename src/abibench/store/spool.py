"""Nothing lost when the network goes: a run on a shared database keeps a local spool.

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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StoreUnreachable
from ..paths import data_dir
from ..records import Artifact, HostContext, Outcome, Run, RunDoc, RunWarning, Sample, TargetStatus
from . import owner
from .postgres import PgStore
from .schema import SEQ_TABLES
from .sql import SqlStore
from .sqlite import Store
from .url import safe_url, spool_name

# The order a run's rows are uploaded in: the run first (the others refer to it).
UPLOAD_ORDER = ("runs", "artifacts", "target_status", "warnings", "outcomes", "samples")


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


@dataclass
class SpoolingSink:
    """The RunSink of a run on a shared database: the spool always, the server while it answers.

    notice: told once, the moment the server is lost (or found unreachable at the start).
    """

    url: str = field(repr=False)
    notice: Callable[[str], None]
    path: Path | None = None
    remote: PgStore | None = field(default=None, init=False)
    spool: Store = field(init=False)
    pushed: list[Pushed] = field(default_factory=list, init=False)
    lost: str | None = field(default=None, init=False)  # why the server was given up
    _mirrored: set[str] = field(default_factory=set, init=False)  # runs the server has whole

    def __post_init__(self) -> None:
        self.label = safe_url(self.url)
        self.local_dir = data_dir()
        self.spool = Store(self.path or spool_path(self.url))
        try:
            self.remote = PgStore(self.url)
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

    @property
    def spooling(self) -> bool:
        return self.remote is None

    def _lose(self, exc: StoreUnreachable) -> None:
        if self.remote is not None:
            self.remote.close()
            self.remote = None
        self._mirrored.clear()
        if self.lost is None:
            self.lost = exc.reason
            self.notice(f"{exc.reason}; the run goes on into the local spool "
                        f"{self.spool.label}: `abibench --db {self.label} push` uploads it once "
                        "the server is back")

    def _both(self, write: Callable[[SqlStore], object]) -> None:
        """The spool first (it never waits on the network), then the server if it answers."""
        write(self.spool)
        if self.remote is not None:
            try:
                write(self.remote)
            except StoreUnreachable as exc:
                # The record in flight may have reached the server or not: it is in the spool
                # under the same number, and the upload keeps exactly one.
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
        self.remote.claim_run(run_id)  # the server decides: its run may be another host's
        self.spool.put_rows("runs", self.remote.rows("runs", run_id))
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

    def discard_samples(self, run_id: str, workload: str, rounds: Iterable[int],
                        reason: str) -> int:
        wanted = sorted(set(rounds))
        marked = self.spool.discard_samples(run_id, workload, wanted, reason)
        if self.remote is not None:
            try:
                marked = self.remote.discard_samples(run_id, workload, wanted, reason)
            except StoreUnreachable as exc:
                self._lose(exc)
        return marked

    # Reading what was just written
    def run_ids(self) -> list[str]:
        return (self.remote or self.spool).run_ids()

    def resolve_run(self, ref: str | None) -> str:
        return (self.remote or self.spool).resolve_run(ref)

    def load_run(self, run_id: str) -> RunDoc:
        """The server's copy while it holds the run whole, else the spool's (which has every
        record written since the run began or was resumed here)."""
        if self.remote is not None and (run_id in self._mirrored or
                                        run_id not in self.spool.run_ids()):
            return self.remote.load_run(run_id)
        return self.spool.load_run(run_id)

    def close(self) -> None:
        """Runs the server holds whole leave the spool: it keeps only what the server lacks."""
        try:
            for run_id in sorted(self._mirrored):
                self.spool.delete_run(run_id)
        finally:
            self.spool.close()
            if self.remote is not None:
                self.remote.close()
