"""Nothing of a sample outlives it: processes that leave the program's group, and abibench killed.

Every test does the bad thing for real (setsid, double fork, SIGKILL of the parent) and then
looks in /proc for what remains, waiting on conditions with deadlines, never on sleeps.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from abibench.errors import EXIT_INTERRUPTED
from abibench.run.launcher import PARENT_ENV, run_sample
from abibench.workspace import clean_stale, temp_root
from tests.processes import alive, wait_until

Program = Callable[[str], Path]


def children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(x) for x in (task / "children").read_text().split()]
    return out


def pids_in(pidfile: Path) -> list[int]:
    return [int(x) for x in pidfile.read_text().split()]


@pytest.fixture
def reaper() -> Iterator[list[int]]:
    """PIDs this test started: whatever a failed test leaves alive is killed by PID at the end."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_double_forked_setsid_grandchild_is_killed_and_counted(
        c_program: Program, sample_launcher: Path, tmp_path: Path, reaper: list[int]) -> None:
    pidfile = tmp_path / "pids"
    r = run_sample([str(c_program("escape")), str(pidfile), "exit"], cwd=tmp_path,
                   env=dict(os.environ), timeout_s=30, launch=sample_launcher)
    program, grandchild = pids_in(pidfile)
    reaper.append(grandchild)
    assert r.ok and r.escaped == 1
    # Re-parented to the launcher (a subreaper), killed and reaped before run_sample returned.
    assert not alive(grandchild)
    assert not alive(program)


def test_a_stray_left_in_the_group_is_killed_and_counted(sample_launcher: Path,
                                                         tmp_path: Path, reaper: list[int]) -> None:
    pidfile = tmp_path / "pid"
    r = run_sample(["/bin/sh", "-c", f"sleep 600 & echo $! > {pidfile}"], cwd=tmp_path,
                   env=dict(os.environ), timeout_s=30, launch=sample_launcher)
    (stray,) = pids_in(pidfile)
    reaper.append(stray)
    assert r.ok and r.escaped == 1
    assert not alive(stray)


def test_the_rusage_is_the_programs_own_not_the_strays(
        c_program: Program, sample_launcher: Path, tmp_path: Path, reaper: list[int]) -> None:
    # The grandchild burns 200 ms of CPU before the program exits; the program itself only
    # waits for it. Reaping the stray must not add its time to the sample.
    pidfile = tmp_path / "pids"
    r = run_sample([str(c_program("escape")), str(pidfile), "spin"], cwd=tmp_path,
                   env=dict(os.environ), timeout_s=30, launch=sample_launcher)
    reaper.extend(pids_in(pidfile))
    assert r.ok and r.escaped == 1
    assert r.user_s + r.sys_s < 0.1, (r.user_s, r.sys_s)
    assert not any(alive(p) for p in pids_in(pidfile))


def test_a_timeout_counts_only_what_left_the_group(
        c_program: Program, sample_launcher: Path, tmp_path: Path, reaper: list[int]) -> None:
    pidfile = tmp_path / "pids"
    r = run_sample([str(c_program("escape")), str(pidfile), "hang"], cwd=tmp_path,
                   env=dict(os.environ), timeout_s=2, launch=sample_launcher)
    reaper.extend(pids_in(pidfile))
    assert r.status == "timeout"
    # The program's group was killed by the timeout; the setsid grandchild had to be found.
    assert r.escaped == 1
    assert not any(alive(p) for p in pids_in(pidfile))


def test_the_launcher_runs_nothing_when_its_parent_is_already_gone(sample_launcher: Path,
                                                                   tmp_path: Path) -> None:
    # As if abibench had died between spawning the launcher and the launcher's prctl: its
    # parent is then someone else than the PID it was told.
    canary = tmp_path / "ran"
    result = tmp_path / "result"
    proc = subprocess.run([str(sample_launcher), str(result), "5000", "/bin/sh", "-c",
                           f"touch {canary}"], env={**os.environ, PARENT_ENV: "1"},
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 125 and "is gone" in proc.stderr
    assert not canary.exists() and not result.exists()


def _start_parent(fixtures: Path, sample_launcher: Path, program: Path, pidfile: Path,
                  tmp: Path) -> tuple[subprocess.Popen[str], list[int]]:
    """sample_parent.py running `program hang`; returns it and [launcher, program, grandchild]
    once all three run."""
    env = {**os.environ, "TMPDIR": str(tmp)}
    parent = subprocess.Popen([sys.executable, str(fixtures / "sample_parent.py"),
                               str(sample_launcher), str(program), str(pidfile), "hang"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_until(lambda: pidfile.exists() or parent.poll() is not None, 60), \
        "the sample never started"
    assert parent.poll() is None, parent.communicate()
    (launch_pid,) = children(parent.pid)
    procs = [launch_pid, *pids_in(pidfile)]
    assert all(alive(p) for p in procs)
    return parent, procs


def test_sigkill_of_abibench_kills_the_sample_and_all_it_started(
        fixtures: Path, c_program: Program, sample_launcher: Path, tmp_path: Path,
        reaper: list[int]) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    parent, procs = _start_parent(fixtures, sample_launcher, c_program("escape"),
                                  tmp_path / "pids", tmp)
    reaper.extend([parent.pid, *procs])
    owned = sorted(p.name for p in temp_root(tmp).iterdir())
    assert [n.split("-")[0] for n in owned] == ["sample", "workload"]
    parent.send_signal(signal.SIGKILL)
    parent.communicate()
    # No cleanup code of the parent ran: the launcher learns of its death from the kernel.
    assert wait_until(lambda: not any(alive(p) for p in procs), 10), \
        [p for p in procs if alive(p)]
    # What the parent could not remove, the next start does: its owner is gone.
    assert sorted(p.name for p in clean_stale(temp_base=tmp)) == owned
    assert list(temp_root(tmp).iterdir()) == []


def test_sigterm_of_abibench_interrupts_the_sample_and_removes_its_temp_dirs(
        fixtures: Path, c_program: Program, sample_launcher: Path, tmp_path: Path,
        reaper: list[int]) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    parent, procs = _start_parent(fixtures, sample_launcher, c_program("escape"),
                                  tmp_path / "pids", tmp)
    reaper.extend([parent.pid, *procs])
    parent.send_signal(signal.SIGTERM)
    _, err = parent.communicate(timeout=60)
    assert parent.returncode == 130, err
    # run_sample returned only after the launcher had killed and reaped everything.
    assert not any(alive(p) for p in procs), [p for p in procs if alive(p)]
    assert list(temp_root(tmp).iterdir()) == []


def test_sigterm_of_abibench_run_ends_it_like_ctrl_c(fixtures: Path, cli_env: dict[str, str],
                                                     db_file: Path, tmp_path: Path,
                                                     reaper: list[int]) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pidfile = tmp_path / "pids"
    proc = subprocess.Popen(
        [sys.executable, "-m", "abibench", "run", str(fixtures / "escape.toml"), "--abi",
         "x86_64", "--rounds", "1", "--no-html", "--set", f"pidfile={pidfile}", "--set",
         "mode=hang"], env={**cli_env, "TMPDIR": str(tmp)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    reaper.append(proc.pid)
    try:
        assert wait_until(lambda: pidfile.exists() or proc.poll() is not None, 120)
        assert proc.poll() is None, proc.communicate()
        reaper.extend(pids_in(pidfile))
        proc.send_signal(signal.SIGTERM)  # to abibench alone, not to its group
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert not any(alive(p) for p in pids_in(pidfile))
    assert [p.name for p in tmp.rglob("*")] == [f"abibench-{os.getuid()}"]
    (status,) = sqlite3.connect(db_file).execute("SELECT status FROM runs").fetchone()
    assert status == "interrupted"
