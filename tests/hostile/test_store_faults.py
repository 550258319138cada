"""The results database under real faults: a full disk, a read-only mount, a damaged file,
another process's lock, a writer killed mid-run. Each ends in one line and its own exit code,
and what was committed before is still there."""

from __future__ import annotations

import hashlib
import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from abibench.abi import parse_abi_list
from abibench.errors import (
    EXIT_STORE_CORRUPT,
    EXIT_STORE_FULL,
    EXIT_STORE_LOCKED,
    EXIT_STORE_READONLY,
    EXIT_USAGE,
    StoreError,
    UsageError,
)
from abibench.records import Artifact, HostContext, Outcome, Run, RunWarning, Sample, TargetStatus
from abibench.run.schedule import Plan
from abibench.run.suite import Request, measure_suite
from abibench.store.sqlite import Store
from abibench.workloads.profile import load_workloads

ErrorLine = Callable[[int, str, int], str]
Main = Callable[..., tuple[int, str, str]]
Cli = Callable[..., subprocess.CompletedProcess[str]]
FIXTURES = Path(__file__).parents[1] / "fixtures"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _integrity(db: Path) -> str:
    """PRAGMA integrity_check, read-only (immutable where SQLite cannot add its side files)."""
    uri = db.absolute().as_uri()
    for mode in ("mode=ro", "immutable=1"):
        try:
            con = sqlite3.connect(f"{uri}?{mode}", uri=True)
            try:
                return str(con.execute("PRAGMA integrity_check").fetchone()[0])
            finally:
                con.close()
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_CANTOPEN:
                raise
    raise AssertionError(f"cannot open {db} at all")


def _listing(main: Main, db: Path) -> dict[str, dict[str, Any]]:
    code, out, err = main("--db", str(db), "runs", "--json")
    assert code == 0 and err == "", err
    return {r["id"]: r for r in json.loads(out)}


def _store_error(exc: pytest.ExceptionInfo[StoreError], db: Path, code: int) -> str:
    message = str(exc.value)
    assert exc.value.exit_code == code and str(db) in message and "\n" not in message, message
    return message


@pytest.fixture
def two_runs(tmp_path: Path, make_doc: Callable[..., dict[str, Any]]) -> list[Path]:
    """Two exported run documents, outside any mount a test makes."""
    files = []
    for i in range(2):
        f = tmp_path / f"run{i}.json"
        f.write_text(json.dumps(make_doc(run_id=f"run{i}", seed=i, rounds=20)))
        files.append(f)
    return files


@pytest.fixture
def filled(two_runs: list[Path], main: Main) -> Callable[[Path], Path]:
    """Put the two runs into the database at path (closed again: no log left beside it)."""
    def fill(db: Path) -> Path:
        code, _, err = main("--db", str(db), "import", *map(str, two_runs))
        assert code == 0, err
        return db

    return fill


@pytest.fixture
def main(main_in_process: Main) -> Main:
    return main_in_process


# --------------------------------------------------------------------------- disk full


def test_disk_full_keeps_every_committed_sample_and_reads_go_on(
        mounts: Any, main: Main, error_line: ErrorLine, two_runs: list[Path],
        make_run: Callable[..., Run], make_sample: Callable[..., Sample]) -> None:
    db = mounts.tmpfs("256k") / "results.sqlite"
    store = Store(db)
    store.create_run(make_run("r1"), HostContext(hostname="here"))
    stored = 0
    with pytest.raises(StoreError) as caught:
        for rnd in range(100_000):
            store.add_sample(make_sample("r1", round=rnd, metrics={"rate": float(rnd)}))
            stored += 1
    assert "disk is full" in _store_error(caught, db, EXIT_STORE_FULL)
    assert stored > 5

    # The disk is still full: reading works, and shows every sample committed before.
    assert _listing(main, db)["r1"]["samples"] == stored
    code, out, err = main("--db", str(db), "export", "r1")
    assert code == 0, err
    assert [s["round"] for s in json.loads(out)["samples"]] == list(range(stored))
    # Writing is one line and exit 6, and changes nothing.
    code, _, err = main("--db", str(db), "import", str(two_runs[0]))
    assert "the disk is full" in error_line(code, err, EXIT_STORE_FULL)
    # Marking the run failed may still fit into the log's last page, or fail the same way.
    try:
        store.finish_run("r1", "2026-01-01T00:01:00", "failed")
    except StoreError as exc:
        assert exc.exit_code == EXIT_STORE_FULL
    store.close()

    assert set(_listing(main, db)) == {"r1"}
    assert _listing(main, db)["r1"]["samples"] == stored
    assert _integrity(db) == "ok"


def test_disk_full_during_a_run_ends_it_with_exit_6(mounts: Any, cli: Cli, cli_env: dict[str, str],
                                                    main: Main, error_line: ErrorLine) -> None:
    db = mounts.tmpfs("320k") / "results.sqlite"
    r = cli("--db", str(db), "run", str(FIXTURES / "spin.toml"), "--abi", "x86_64", "--set",
            "millions=1", "--rounds", "5000", "--no-html")
    line = error_line(r.returncode, r.stderr, EXIT_STORE_FULL)
    assert str(db) in line and "every sample committed before is kept" in line
    (run,) = _listing(main, db).values()
    assert run["samples"] > 3
    # Marked failed if the disk took that last write; otherwise its writer is gone: abandoned.
    assert run["status"] in ("failed", "abandoned")
    code, out, err = main("--db", str(db), "export", run["id"])
    assert code == 0, err
    samples = json.loads(out)["samples"]
    assert len(samples) == run["samples"] and all(s["status"] == "ok" for s in samples)
    assert _integrity(db) == "ok"


class _FillingStore:
    """The run's sink: a real store whose disk fills up at the n-th sample; with `stays_full`,
    every write after that fails too (marking the run failed included)."""

    def __init__(self, store: Store, full_at: int, stays_full: bool) -> None:
        self.store = store
        self.full_at = full_at
        self.stays_full = stays_full
        self.samples = 0
        self.error: StoreError | None = None
        self.finished_as: list[str] = []

    def _write(self) -> None:
        if self.error is not None and self.stays_full:
            raise StoreError(f"results database {self.store.path}: the disk is full",
                             EXIT_STORE_FULL)

    def create_run(self, run: Run, host: HostContext) -> None:
        self.store.create_run(run, host)

    def finish_run(self, run_id: str, finished: str, status: str) -> None:
        self.finished_as.append(status)
        self._write()
        self.store.finish_run(run_id, finished, status)

    def add_artifact(self, run_id: str, artifact: Artifact) -> None:
        self._write()
        self.store.add_artifact(run_id, artifact)

    def set_target_status(self, run_id: str, status: TargetStatus) -> None:
        self._write()
        self.store.set_target_status(run_id, status)

    def add_warning(self, run_id: str, warning: RunWarning) -> None:
        self._write()
        self.store.add_warning(run_id, warning)

    def set_outcome(self, run_id: str, workload: str, outcome: Outcome) -> None:
        self._write()
        self.store.set_outcome(run_id, workload, outcome)

    def add_sample(self, s: Sample) -> None:
        self._write()
        if self.samples + 1 == self.full_at:
            self.error = StoreError(f"results database {self.store.path}: the disk is full "
                                    "(first)", EXIT_STORE_FULL)
            raise self.error
        self.store.add_sample(s)
        self.samples += 1

    def claim_run(self, run_id: str) -> None:
        self._write()
        self.store.claim_run(run_id)

    def discard_samples(self, run_id: str, workload: str, rounds: Iterable[int],
                        reason: str) -> int:
        self._write()
        return self.store.discard_samples(run_id, workload, rounds, reason)


@pytest.mark.parametrize("stays_full", [False, True], ids=["frees-up", "stays-full"])
def test_store_fault_mid_run_marks_it_failed_and_is_the_error_reported(
        stays_full: bool, tmp_path: Path, shared_cache: Path) -> None:
    store = Store(tmp_path / "results.sqlite")
    sink = _FillingStore(store, full_at=4, stays_full=stays_full)
    req = Request(workloads=load_workloads([str(FIXTURES / "spin.toml")], None,
                                           {"millions": "1"}),
                  abis=parse_abi_list("x86_64"),
                  plan=Plan(min_rounds=1, fixed_rounds=50, warmup=0))
    with pytest.raises(StoreError) as caught:
        measure_suite(req, sink, shared_cache, lambda _: None)
    assert caught.value is sink.error  # not masked by the writes that failed after it
    assert sink.finished_as == ["failed"]
    (run,) = store.runs()
    assert run.samples == 3
    # While this process (the owner) lives, a run it could not mark stays `running`.
    assert run.status == ("running" if stays_full else "failed")
    store.close()


# --------------------------------------------------------------------------- read-only


@pytest.mark.parametrize("what", ["mount", "directory", "file"])
def test_read_only_database_is_read_and_never_written(
        what: str, mounts: Any, tmp_path: Path, main: Main, error_line: ErrorLine,
        filled: Callable[[Path], Path], two_runs: list[Path]) -> None:
    where = mounts.tmpfs("2m") if what == "mount" else tmp_path / "data"
    where.mkdir(exist_ok=True)
    db = filled(where / "results.sqlite")
    mounts.read_only({"mount": where, "directory": where, "file": db}[what])
    before = _sha256(db)

    assert set(_listing(main, db)) == {"run0", "run1"}
    code, out, err = main("--db", str(db), "export", "run1")
    assert code == 0 and json.loads(out)["run"]["id"] == "run1", err
    code, out, err = main("--db", str(db), "report", "run0")
    assert code == 0 and "alpha" in out, err
    code, out, err = main("--db", str(db), "compare", "run0", "run1", "--json")
    assert code == 0, err

    code, _, err = main("--db", str(db), "import", str(two_runs[0]))
    assert str(db) in error_line(code, err, EXIT_STORE_READONLY)
    # `run` is refused when it opens the database, before it probes or builds anything.
    code, _, err = main("--db", str(db), "run", str(FIXTURES / "spin.toml"), "--abi", "x86_64")
    assert "cannot be written" in error_line(code, err, EXIT_STORE_READONLY)
    with pytest.raises(StoreError) as caught:
        Store(db)
    _store_error(caught, db, EXIT_STORE_READONLY)
    assert _sha256(db) == before
    assert _integrity(db) == "ok"


def test_missing_database_for_a_reading_command(tmp_path: Path, main: Main,
                                                error_line: ErrorLine) -> None:
    db = tmp_path / "none" / "results.sqlite"
    for args in (["runs"], ["export"], ["report"], ["compare", "a", "b"]):
        code, _, err = main("--db", str(db), *args)
        line = error_line(code, err, EXIT_USAGE)
        assert line == f"abibench: error: no results database at {db}: run `abibench run` first"
    assert not db.parent.exists()


def test_unwritable_directory_for_a_new_database(mounts: Any, main: Main, error_line: ErrorLine,
                                                 two_runs: list[Path]) -> None:
    where = mounts.tmpfs("1m")
    mounts.read_only(where)
    code, _, err = main("--db", str(where / "sub" / "results.sqlite"), "import", str(two_runs[0]))
    error_line(code, err, EXIT_STORE_READONLY)
    code, _, err = main("--db", str(where / "results.sqlite"), "import", str(two_runs[0]))
    assert "-wal and -shm" in error_line(code, err, EXIT_STORE_READONLY)


# --------------------------------------------------------------------------- corrupt


def _damage(db: Path, how: str) -> None:
    size = db.stat().st_size
    with db.open("r+b") as f:
        if how == "overwritten":
            f.seek(2 * 4096)
            f.write(b"\xab" * 3 * 4096)
        elif how == "truncated":
            f.truncate(size // 2)
        else:
            f.write(b"these are notes, not a database\n" * 200)
            f.truncate()


@pytest.mark.parametrize("how", ["overwritten", "truncated", "not a database"])
def test_corrupt_database_is_never_written(how: str, tmp_path: Path, main: Main,
                                           error_line: ErrorLine, filled: Callable[[Path], Path],
                                           two_runs: list[Path]) -> None:
    db = filled(tmp_path / "results.sqlite")
    assert not db.with_name("results.sqlite-wal").exists()  # everything is in the file itself
    _damage(db, how)
    before = _sha256(db)

    code, _, err = main("--db", str(db), "import", str(two_runs[0]))
    line = error_line(code, err, EXIT_STORE_CORRUPT)
    assert str(db) in line and "left as it is" in line
    code, _, err = main("--db", str(db), "runs")
    error_line(code, err, EXIT_STORE_CORRUPT)
    with pytest.raises(StoreError) as caught:
        Store(db)
    _store_error(caught, db, EXIT_STORE_CORRUPT)
    assert _sha256(db) == before


# --------------------------------------------------------------------------- locked


_HOLDER = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "exclusive":
    con.execute("PRAGMA locking_mode=EXCLUSIVE")
con.execute("BEGIN EXCLUSIVE")
con.execute("UPDATE runs SET status='held'")
print("locked", flush=True)
sys.stdin.read()
"""


@contextmanager
def _held(db: Path, mode: str) -> Iterator[None]:
    """Another process holds the database's write lock (`exclusive`: readers are shut out too)
    until the block ends; it then exits without committing."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(db), mode], text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "locked\n"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


@pytest.mark.parametrize("mode", ["write", "exclusive"])
def test_database_locked_by_another_process(mode: str, tmp_path: Path, main: Main,
                                            error_line: ErrorLine, filled: Callable[[Path], Path],
                                            two_runs: list[Path],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    db = filled(tmp_path / "results.sqlite")
    monkeypatch.setenv("ABIBENCH_DB_TIMEOUT", "0.3")
    with _held(db, mode):
        code, _, err = main("--db", str(db), "import", str(two_runs[0]))
        line = error_line(code, err, EXIT_STORE_LOCKED)
        assert "locked by another process (waited 0.3s" in line and str(db) in line
        code, out, err = main("--db", str(db), "runs", "--json")
        if mode == "write":  # a writer does not stop readers of a WAL database
            assert code == 0 and len(json.loads(out)) == 2, err
        else:
            error_line(code, err, EXIT_STORE_LOCKED)
    assert {r["status"] for r in _listing(main, db).values()} == {"complete"}
    assert _integrity(db) == "ok"


# --------------------------------------------------------------------------- abandoned runs


_OWNER = """
import sys
from pathlib import Path
from abibench.records import HostContext, Run, RunConfig
from abibench.store.sqlite import Store
from abibench.workloads.profile import load_workloads
store = Store(Path(sys.argv[1]))
store.create_run(Run(sys.argv[2], sys.argv[3], None, "running", "0", RunConfig({})),
                 HostContext())
print("created", flush=True)
sys.stdin.read()
"""


def _owner(db: Path, run_id: str, started: str) -> subprocess.Popen[str]:
    """Another process that creates a run and then waits, as `abibench run` between samples."""
    proc = subprocess.Popen([sys.executable, "-c", _OWNER, str(db), run_id, started], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == "created\n"
    return proc


def _wait_for(condition: Callable[[], bool], what: str, deadline_s: float = 30.0) -> None:
    end = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.01)


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2]


def test_run_whose_owner_was_killed_reads_abandoned(tmp_path: Path, main: Main,
                                                    error_line: ErrorLine) -> None:
    db = tmp_path / "results.sqlite"
    Store(db).close()
    killed = _owner(db, "killed", "2026-01-01T00:00:01")
    alive = _owner(db, "alive", "2026-01-01T00:00:02")
    try:
        killed.send_signal(signal.SIGKILL)
        # Not reaped yet, the killed owner is a zombie: dead all the same.
        _wait_for(lambda: _state(killed.pid) == "Z", "the killed owner to become a zombie")
        assert {k: r["status"] for k, r in _listing(main, db).items()} == \
            {"killed": "abandoned", "alive": "running"}
        killed.wait(timeout=60)
        store = Store(db, readonly=True)
        assert store.load_run("killed").run.status == "abandoned"
        assert store.load_run("alive").run.status == "running"
        store.close()
        code, out, err = main("--db", str(db), "export", "killed")
        assert code == 0 and json.loads(out)["run"]["status"] == "abandoned", err

        store = Store(db)
        with pytest.raises(UsageError) as refused:
            store.claim_run("alive")
        assert refused.value.exit_code == EXIT_USAGE
        assert f"run alive is still running (pid {alive.pid} on " in str(refused.value)
        store.claim_run("killed")  # now this process writes it
        assert store.load_run("killed").run.status == "running"
        store.finish_run("killed", "2026-01-01T00:05:00", "complete")
        with pytest.raises(UsageError, match="run killed is complete: nothing to resume"):
            store.claim_run("killed")
        store.close()
    finally:
        for proc in (killed, alive):
            if proc.poll() is None:
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(timeout=60)
    # The live owner ended without finishing its run: that one is abandoned too now.
    assert _listing(main, db)["alive"]["status"] == "abandoned"
    assert _integrity(db) == "ok"
