"""Fault injection on a real `abibench run`: one fault at one checkpoint, then every check.

A case is a fault and a checkpoint k: the run (tests/fixtures/spin.toml, a few rounds, a data
directory, cache and TMPDIR of its own, a canary file beside them) is started with
`ABIBENCH_FAULT_AT=sample:k:SIGNAL` (store/faultpoint.py), so it signals itself right after its
k-th sample is stored: SIGKILL or SIGINT for the kill faults, SIGSTOP for the others, which this
harness then does to the stopped run (fill the disk, delete or replace the database, replace
the program, delete the build cache) before it sends SIGCONT. Then it checks:

- every fault: the canary is untouched, stderr has no traceback and only one-line `abibench:`
  messages (one error at most), no process of the run's session is left;
- a kill: exactly k samples are stored, `report` reads the partial run, `run --resume` completes
  it to the plan's rounds, and no temporary directory is left;
- a full disk: exit 0, or exit 6 with "disk is full"; every sample stored before is still there,
  and once space is freed `report` and `run --resume` complete the run;
- a database deleted (alone, with its log, with its whole directory), replaced or overwritten,
  or its log deleted: exit 11, a recovery file holds the whole run
  (every sample of the plan), `report` reads it, its export imports into a new database, and a
  file put at the path is left exactly as it was put there (no stale log of ours beside it);
- the program replaced (by one whose output says so): the run does not exit 0 with samples
  of the other program;
- the build cache deleted: one-line messages, the samples stored before are kept.

`all_cases` generates every (fault, k) for k = 1..N, N the samples of a complete run; the
tests try a seeded sample of them (`drawn_faults`, each at a drawn k), bench/faults.py all of
them for as long as it is given.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

FIXTURES = Path(__file__).parents[1] / "fixtures"
ROUNDS = 3
WARMUP = 1
ABIS = "i386,x86_64"
RUN_ARGS = (str(FIXTURES / "spin.toml"), "--abi", ABIS, "--set", "millions=1", "--rounds",
            str(ROUNDS), "--warmup", str(WARMUP), "--design", "sequential", "--no-html")
EXIT_STORE_FULL = 6
EXIT_STORE_LOST = 11
EXIT_INTERRUPTED = 130

# Every fault, by the signal the run sends itself at the checkpoint.
KILLS = {"SIGKILL": "KILL", "SIGINT": "INT"}
LOST = ("db-deleted", "db-and-log-deleted", "data-dir-deleted", "db-replaced", "db-overwritten",
        "log-deleted")
STOPPED = ("disk-full", *LOST, "program-replaced", "cache-deleted")
FAULTS = (*KILLS, *STOPPED)
DEADLINE_S = 180.0


SEED_ENV = "ABIBENCH_FAULT_SEED"
# How many of the faults one test session tries (each at one checkpoint): the CI's time budget.
# Which ones is drawn from the seed too; bench/faults.py tries every fault at every checkpoint.
FAULTS_PER_SESSION = 6


def fault_seed() -> int:
    """ABIBENCH_FAULT_SEED, else today's date: another sample of faults and checkpoints every
    day, the same all day (a failure is repeated with the seed pytest's summary prints)."""
    given = os.environ.get(SEED_ENV, "").strip()
    return int(given) if given.isdigit() else int(datetime.now(UTC).strftime("%Y%m%d"))


ALWAYS = "db-deleted"  # issue 26's own case: every session tries it


def drawn_faults() -> list[str]:
    """The faults a test session tries: issue 26's, and others drawn from the seed."""
    rest = [f for f in FAULTS if f != ALWAYS]
    drawn = {ALWAYS, *random.Random(fault_seed()).sample(rest, FAULTS_PER_SESSION - 1)}
    return [f for f in FAULTS if f in drawn]


class Unavailable(Exception):
    """This host cannot stage the fault (mounting a file system needs root)."""


@dataclass(frozen=True)
class Case:
    fault: str
    at: int  # after the at-th sample stored

    @property
    def id(self) -> str:
        return f"{self.fault}@{self.at}"


def all_cases(samples: int) -> list[Case]:
    """Every fault at every checkpoint of a run that stores this many samples."""
    return [Case(f, k) for f in FAULTS for k in range(1, samples + 1)]


@dataclass
class Sandbox:
    """A run's own directories and a canary outside them. cache: the build cache the runs use
    (shared and warm), or None for a cache of their own, built cold (for the faults that
    replace or delete what is in it; a copied cache would not do: its entries name the
    directory they were built in)."""

    root: Path
    shared_cache: Path | None
    canary_body: bytes = field(default=b"", init=False)
    canary_mtime: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        for d in ("data", "tmp", "outside", "cache"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        self.canary_body = os.urandom(64).hex().encode()
        self.canary.write_bytes(self.canary_body)
        self.canary_mtime = self.canary.stat().st_mtime_ns

    @property
    def cache(self) -> Path:
        return self.shared_cache or self.root / "cache"

    @property
    def canary(self) -> Path:
        return self.root / "outside" / "canary.txt"

    @property
    def db(self) -> Path:
        return self.root / "data" / "results.sqlite"

    def env(self, db: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ABIBENCH_")}
        env.update(ABIBENCH_DATA=str(self.root / "data"), ABIBENCH_CACHE=str(self.cache),
                   ABIBENCH_DB=str(db or self.db), TMPDIR=str(self.root / "tmp"), CI="true")
        return env

    def abibench(self, *args: str, db: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "abibench", *args], env=self.env(db),
                              capture_output=True, text=True, timeout=DEADLINE_S, check=False)

    def read(self, *args: str, db: Path) -> tuple[int, str, str]:
        """A command that only reads the database (report, export, import into a new one), in
        this process: (exit code, stdout, stderr). Seconds of imports saved per call."""
        from abibench.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--db", str(db), *args])
        return code, out.getvalue(), err.getvalue()

    def canary_problem(self) -> str | None:
        c = self.canary
        if not c.is_file() or c.is_symlink():
            return "the canary was removed or replaced"
        if c.read_bytes() != self.canary_body:
            return "the canary was written to"
        if c.stat().st_mtime_ns != self.canary_mtime:
            return "the canary was touched"
        return None


def query(db: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    """Rows of a database file, read-only; [] when it or the table is not there."""
    if not db.is_file():
        return []
    con = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    try:
        return list(con.execute(sql, params).fetchall())
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    finally:
        con.close()


COUNTED = ("SELECT target, COUNT(*) FROM samples WHERE warmup=0 AND status='ok' AND "
           "kind='timed' AND discarded IS NULL GROUP BY 1")


def counted(db: Path) -> dict[str, int]:
    return {str(t): int(str(n)) for t, n in query(db, COUNTED)}


def sample_count(db: Path) -> int:
    rows = query(db, "SELECT COUNT(*) FROM samples")
    return int(str(rows[0][0])) if rows else 0


def stderr_problems(err: str) -> list[str]:
    """Every message one line: no traceback, only `abibench:` lines, one error at most."""
    out = []
    if "Traceback" in err:
        out.append(f"a traceback on stderr: {err[-1500:]}")
    lines = err.splitlines()
    stray = [line for line in lines if not line.startswith("abibench: ")]
    if stray and "Traceback" not in err:
        out.append(f"stderr lines that are no abibench message: {stray[:3]}")
    if sum(line.startswith("abibench: error: ") for line in lines) > 1:
        out.append(f"more than one error line: {err[-1500:]}")
    return out


def session_left(sid: int) -> list[int]:
    """Live processes (not zombies) of the run's session: what it started and left behind."""
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            left.append(int(entry.name))
    return left


def _state(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split() or ["X"])[0]
    except OSError:
        return "X"


def _wait(cond: Callable[[], bool], deadline_s: float) -> bool:
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            return bool(cond())
        time.sleep(0.02)
    return True


def temp_left(tmp: Path) -> list[Path]:
    """What the runs left in their TMPDIR: anything but empty directories."""
    return [p for p in tmp.rglob("*") if not p.is_dir() or any(p.iterdir())]


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of this size mounted on where (root only), unmounted at the end."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        raise Unavailable("mounting a file system needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                           str(where)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise Unavailable(f"cannot mount here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def fill(where: Path) -> Path:
    """A file that takes every free byte of where's file system."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for chunk in (1 << 16, 1 << 12, 1):
            try:
                while os.write(fd, b"\0" * chunk):
                    pass
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)
    return filler


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _new_database(path: Path) -> None:
    """Another SQLite database (not abibench's), as a user might put at the path."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes(x)")
    con.execute("INSERT INTO notes VALUES ('mine')")
    con.commit()
    con.close()


REPLACED = "replaced-program"


def _programs(cache: Path, abi: str) -> list[Path]:
    return sorted(cache.glob(f"builds/spin/{abi}-*/bin/spin"))


@dataclass
class Outcome:
    """What one case did and what it broke."""

    case: Case
    code: int | None = None
    violations: list[str] = field(default_factory=list)


def stage(case: Case, box: Sandbox, db: Path) -> str | None:
    """Do the case's fault to the stopped run; returns the sha256 of a file it put at the db's
    path (which must be left as it is), else None."""
    put: str | None = None
    if case.fault == "db-deleted":
        db.unlink()
    elif case.fault == "db-and-log-deleted":
        for p in db.parent.glob(db.name + "*"):
            p.unlink()
    elif case.fault == "data-dir-deleted":
        shutil.rmtree(db.parent)
    elif case.fault == "db-replaced":
        other = db.with_name("other.sqlite")
        _new_database(other)
        put = _sha256(other)
        os.replace(other, db)
    elif case.fault == "db-overwritten":
        with db.open("r+b") as f:
            f.write(b"these are notes, not a database\n" * 4)
    elif case.fault == "log-deleted":
        db.with_name(db.name + "-wal").unlink()
    elif case.fault == "program-replaced":
        # The i386 program becomes another one, which says so in the checksum it prints.
        (i386,) = _programs(box.cache, "i386")
        i386.write_text(f"#!/bin/sh\necho 'checksum: {REPLACED}'\n")
        i386.chmod(0o755)
    elif case.fault == "cache-deleted":
        shutil.rmtree(box.cache / "builds")
    return put


def run_case(case: Case, box: Sandbox, samples: int) -> Outcome:
    """Start the run, fault it at its checkpoint, and check everything; never raises for a
    violation (they are returned), only for a harness that cannot do its job."""
    if case.fault == "disk-full":
        with tmpfs(box.root / "disk", "2m") as disk:
            return _run_case(case, box, samples, disk / "results.sqlite")
    return _run_case(case, box, samples, box.db)


def _run_case(case: Case, box: Sandbox, samples: int, db: Path) -> Outcome:
    out = Outcome(case)
    bad = out.violations
    signame = KILLS.get(case.fault, "STOP")
    env = {**box.env(db), "ABIBENCH_FAULT_AT": f"sample:{case.at}:{signame}"}
    proc = subprocess.Popen([sys.executable, "-m", "abibench", "run", *RUN_ARGS], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    put: str | None = None
    filler: Path | None = None
    try:
        if signame == "STOP":
            if not _wait(lambda: _state(proc.pid) == "T" or proc.poll() is not None,
                         DEADLINE_S):
                raise AssertionError(f"{case.id}: the run never reached its checkpoint")
            if proc.poll() is not None:
                raise AssertionError(f"{case.id}: the run ended before its checkpoint: "
                                     f"{proc.communicate()[1][-1500:]}")
            stored = sample_count(db)
            if stored != case.at:
                bad.append(f"stopped at checkpoint {case.at} with {stored} samples stored")
            if case.fault == "disk-full":
                filler = fill(db.parent)
            else:
                put = stage(case, box, db)
            os.kill(proc.pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    out.code = proc.returncode
    bad += stderr_problems(err)
    if not _wait(lambda: not session_left(proc.pid), 15):
        bad.append(f"processes of the run left alive: {session_left(proc.pid)}")
    if case.fault in KILLS:
        _after_kill(case, box, db, out, err)
    elif case.fault == "disk-full":
        _after_full(case, box, db, out, err, filler)
    elif case.fault in LOST:
        _after_loss(case, box, db, out, err, samples, put)
    elif case.fault == "program-replaced":
        # Exit 0 only for a report on the built program: no sample may have run the other.
        ran = query(db, "SELECT COUNT(*) FROM samples WHERE check_value=?", REPLACED)
        if out.code == 0 and ran and ran[0][0]:
            bad.append(f"exit 0 with a report built on a replaced program ({ran[0][0]} "
                       "samples ran it)")
    elif case.fault == "cache-deleted":
        if sample_count(db) < case.at:
            bad.append(f"{case.at} samples were stored before the fault, {sample_count(db)} "
                       "are left")
        if out.code != 0 and not err.strip():
            bad.append(f"exit {out.code} and nothing said")
    problem = box.canary_problem()
    if problem:
        bad.append(problem)
    return out


def _resume_completes(box: Sandbox, db: Path, bad: list[str]) -> None:
    """`report` reads the partial run, `run --resume` completes it, nothing is left in TMPDIR."""
    code, _, err = box.read("report", "latest", db=db)
    if code != 0:
        bad.append(f"report of the partial run: exit {code}: {err[-800:]}")
    bad += stderr_problems(err)
    done = box.abibench("run", "--resume", "latest", "--no-html", db=db)
    if done.returncode != 0:
        bad.append(f"run --resume: exit {done.returncode}: {done.stderr[-800:]}")
        return
    want = {abi: ROUNDS for abi in ABIS.split(",")}
    if counted(db) != want:
        bad.append(f"after the resume, counted samples {counted(db)}, expected {want}")
    if query(db, "SELECT status FROM runs") != [("complete",)]:
        bad.append(f"after the resume, runs {query(db, 'SELECT id, status FROM runs')}")
    if query(db, "PRAGMA integrity_check") != [("ok",)]:
        bad.append("integrity_check fails after the resume")
    left = temp_left(box.root / "tmp")
    if left:
        bad.append(f"temporary files left: {left[:5]}")


def _after_kill(case: Case, box: Sandbox, db: Path, out: Outcome, err: str) -> None:
    bad = out.violations
    expected = -signal.SIGKILL if case.fault == "SIGKILL" else EXIT_INTERRUPTED
    if out.code != expected:
        bad.append(f"exit {out.code}, expected {expected}: {err[-800:]}")
    # Exactly the samples committed before the signal: none lost, none half-written.
    if sample_count(db) != case.at:
        bad.append(f"killed after sample {case.at}: {sample_count(db)} samples stored")
    _resume_completes(box, db, bad)


def _after_full(case: Case, box: Sandbox, db: Path, out: Outcome, err: str,
                filler: Path | None) -> None:
    bad = out.violations
    if out.code == EXIT_STORE_FULL:
        if "disk is full" not in err:
            bad.append(f"exit 6 without saying the disk is full: {err[-800:]}")
    elif out.code != 0:
        bad.append(f"a full disk: exit {out.code}, expected 6 (or 0): {err[-800:]}")
    if sample_count(db) < case.at:
        bad.append(f"{case.at} samples were stored before the disk filled, "
                   f"{sample_count(db)} are left")
    if filler is not None:
        filler.unlink()
    if query(db, "SELECT status FROM runs") == [("complete",)]:
        return  # the log had room for the rest
    _resume_completes(box, db, bad)


def _after_loss(case: Case, box: Sandbox, db: Path, out: Outcome, err: str, samples: int,
                put: str | None) -> None:
    bad = out.violations
    if out.code != EXIT_STORE_LOST:
        bad.append(f"the database {case.fault}: exit {out.code}, expected 11: {err[-800:]}")
        return
    recovered = sorted(db.parent.glob(f"{db.stem}.recovered-*.sqlite"))
    if len(recovered) != 1 or str(recovered[0]) not in err:
        bad.append(f"recovery files {recovered}, not the one named: {err[-800:]}")
        return
    saved = recovered[0]
    # The whole run: every sample of the plan, numbered without a gap, and marked complete.
    seqs = [int(str(s)) for (s,) in query(saved, "SELECT seq FROM samples ORDER BY seq")]
    if seqs != list(range(samples)):
        bad.append(f"the recovery file holds samples {seqs}, expected 0..{samples - 1}")
    if query(saved, "SELECT status FROM runs") != [("complete",)]:
        bad.append(f"the recovered run: {query(saved, 'SELECT id, status FROM runs')}")
    code, _, err = box.read("report", "latest", db=saved)
    if code != 0:
        bad.append(f"report of the recovery file: exit {code}: {err[-800:]}")
    exported = box.root / "run.json"
    merged = box.root / "merged.sqlite"
    back = box.read("export", "latest", "-o", str(exported), db=saved)
    again = box.read("import", str(exported), db=merged)
    if back[0] or again[0] or sample_count(merged) != samples:
        bad.append(f"export and import of the recovery file: {back[2][-400:]} {again[2][-400:]}")
    if put is not None:
        # The file a user put there is theirs: unchanged, and no log of ours beside it.
        if not db.is_file() or _sha256(db) != put:
            bad.append("the file put at the database's path was changed")
        if db.with_name(db.name + "-wal").exists():
            bad.append("the lost database's log was left beside the file put at its path")
    if case.fault in ("db-deleted", "db-and-log-deleted", "data-dir-deleted"):
        left = [p.name for p in db.parent.glob(db.name + "*")]
        if left:
            bad.append(f"the deleted database's side files were left: {left}")


def reference_run(box: Sandbox) -> int:
    """A complete run without a fault: how many samples a run stores (N)."""
    done = box.abibench("run", *RUN_ARGS)
    if done.returncode != 0:
        raise AssertionError(f"the run without a fault failed: {done.stderr[-1500:]}")
    return sample_count(box.db)


# The faults that change the build cache get one of their own.
OWN_CACHE = ("program-replaced", "cache-deleted")


def sandbox(case: Case, root: Path, warm_cache: Path) -> Sandbox:
    return Sandbox(root, None if case.fault in OWN_CACHE else warm_cache)


def warm(root: Path) -> tuple[Path, int]:
    """A build cache holding the run's programs, and N: one reference run."""
    box = Sandbox(root, None)
    n = reference_run(box)
    return box.cache, n


def summary(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    """Per fault: cases tried, and cases that broke an invariant."""
    out: dict[str, dict[str, int]] = {}
    for o in outcomes:
        row = out.setdefault(o.case.fault, {"cases": 0, "violations": 0})
        row["cases"] += 1
        row["violations"] += bool(o.violations)
    return out


def as_json(outcomes: list[Outcome]) -> str:
    return json.dumps([{"case": o.case.id, "code": o.code, "violations": o.violations}
                       for o in outcomes], indent=1)
