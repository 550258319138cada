from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from abibench.errors import HostError
from abibench.run import launcher as launcher_mod
from abibench.run.launcher import PARENT_ENV, launcher, parse_result_line, run_sample

FIXTURES = Path(__file__).parents[1] / "fixtures"



@pytest.fixture(scope="module")
def bins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bins")
    out = {}
    for name in ("hog", "hang"):
        exe = d / name
        subprocess.run(["gcc", "-O2", "-o", str(exe), str(FIXTURES / f"{name}.c")], check=True)
        out[name] = exe
    return out


@pytest.fixture(scope="module")
def launch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return launcher(tmp_path_factory.mktemp("cache"))


def test_peak_rss_is_the_program_alone(bins: dict[str, Path], launch: Path) -> None:
    # The parent (this Python process) first grows past 300 MB, as the trap needs.
    ballast = bytearray(320 * 1024 * 1024)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    big = run_sample([str(bins["hog"]), "300"], cwd=Path("/tmp"), env=dict(os.environ),
                     timeout_s=30, launch=launch)
    small = run_sample([str(bins["hog"]), "2"], cwd=Path("/tmp"), env=dict(os.environ),
                       timeout_s=30, launch=launch)
    del ballast
    assert big.ok and small.ok
    assert 300 * 1024 <= big.max_rss_kb < 310 * 1024
    # ~2 MB of data plus libc: well under 5 MB, nowhere near the 300+ MB seen before it.
    assert 2 * 1024 <= small.max_rss_kb < 5 * 1024


def test_timeout_kills_the_whole_process_group(bins: dict[str, Path], launch: Path,
                                               tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    r = run_sample([str(bins["hang"]), str(pidfile)], cwd=tmp_path, env=dict(os.environ),
                   timeout_s=0.5, launch=launch)
    assert r.status == "timeout"
    assert r.wall_s >= 0.5
    parent, child = (int(x) for x in pidfile.read_text().split())
    assert child > 0
    # The grandchild was in the program's group, so it is gone too (reaped by init).
    for pid in (parent, child):
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), f"pid {pid} survived the timeout"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def test_exec_failure_is_reported_not_run_through_a_shell(tmp_path: Path, launch: Path) -> None:
    src = tmp_path / "t.c"
    src.write_text("int main(void){return 0;}\n")
    exe = tmp_path / "x32"
    subprocess.run(["gcc", "-mx32", "-o", str(exe), str(src)], check=True)
    r = run_sample([str(exe)], cwd=tmp_path, env=dict(os.environ), timeout_s=5, launch=launch)
    assert r.status == "execfail"
    assert "Exec format error" in r.describe_failure()


def test_stdout_digest_and_exit_code(tmp_path: Path, launch: Path) -> None:
    r = run_sample(["/bin/sh", "-c", "echo hello; exit 3"], cwd=tmp_path, env=dict(os.environ),
                   timeout_s=5, launch=launch)
    assert r.status == "exited" and r.exit_code == 3 and not r.ok
    assert r.stdout == "hello\n"
    import hashlib

    assert r.stdout_digest == hashlib.sha256(b"hello\n").hexdigest()


def test_result_line_parsing() -> None:
    line = ("status=exited code=0 signal=0 wall_ns=1475694 user_us=0 sys_us=1066 maxrss_kb=980 "
            "minflt=71 majflt=1 nvcsw=3 nivcsw=1 errno=0\n")
    r = parse_result_line(line)
    assert r["status"] == "exited" and r["wall_ns"] == "1475694" and r["maxrss_kb"] == "980"


def test_nothing_left_behind_counts_nothing(sample_launcher: Path, tmp_path: Path) -> None:
    r = run_sample(["/bin/sh", "-c", "exit 0"], cwd=tmp_path, env=dict(os.environ),
                   timeout_s=30, launch=sample_launcher)
    assert r.ok and r.escaped == 0


def test_the_program_sees_exactly_the_environment_it_was_given(sample_launcher: Path,
                                                                tmp_path: Path) -> None:
    # The launcher's parent check must not change the measured environment (its size moves
    # the stack, which is what environment padding controls).
    env = {"PATH": "/usr/bin:/bin", "PAD": "x" * 17}
    r = run_sample(["/usr/bin/env"], cwd=tmp_path, env=env, timeout_s=30,
                   launch=sample_launcher)
    assert r.ok
    assert sorted(r.stdout.splitlines()) == sorted(f"{k}={v}" for k, v in env.items())
    assert PARENT_ENV not in r.stdout


def test_the_result_line_has_the_escaped_count(sample_launcher: Path, tmp_path: Path) -> None:
    result = tmp_path / "result"
    subprocess.run([str(sample_launcher), str(result), "5000", "/bin/true"], check=True)
    assert parse_result_line(result.read_text())["escaped"] == "0"


@pytest.mark.needs_setup("qemu-user")
def test_under_qemu_user_the_refused_subreaper_is_said_and_the_sample_still_runs(
        sample_launcher: Path, tmp_path: Path) -> None:
    # abibench itself emulated (an arm64 root or container on x86): qemu-user refuses
    # PR_SET_CHILD_SUBREAPER with EINVAL. Here the x86_64 launcher runs under qemu-x86_64.
    qemu = shutil.which("qemu-x86_64")
    assert qemu is not None, "qemu-user is installed, and has no qemu-x86_64 on PATH"
    result = tmp_path / "result"
    subprocess.run([qemu, str(sample_launcher), str(result), "5000", "/bin/true"], check=True)
    fields = parse_result_line(result.read_text())
    assert fields["status"] == "exited" and fields["code"] == "0"
    assert fields["subreaper"] == "0"
    result.unlink()
    subprocess.run([str(sample_launcher), str(result), "5000", "/bin/true"], check=True)
    assert parse_result_line(result.read_text())["subreaper"] == "1"


def test_a_kill_while_the_guard_starts_leaves_nothing_waiting(
        launch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM comes as KeyboardInterrupt (run/signals.py), and a polite kill tends to land
    right after a sample was stored, while the next one starts: if it lands inside the guard
    thread's start, that thread must still be cancelled, or abibench waits out the sample's
    whole timeout at exit."""
    started: list[threading.Timer] = []
    real_start = threading.Timer.start

    def start_then_interrupted(timer: threading.Timer) -> None:
        real_start(timer)
        started.append(timer)
        raise KeyboardInterrupt

    monkeypatch.setattr(threading.Timer, "start", start_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_sample(["/bin/true"], cwd=tmp_path, env=dict(os.environ), timeout_s=600,
                   launch=launch)
    (guard,) = started
    try:
        guard.join(timeout=10)  # cancelled: it ends at once (else it would wait 660 s)
        assert not guard.is_alive() and guard.daemon
    finally:
        guard.cancel()  # a failure here must not keep pytest waiting for it at exit


def test_the_guard_ends_a_launcher_gone_wrong(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard is started before the launcher (so no thread start of ours runs beside the
    sample): it must still find the launcher it guards, and end it when the launcher itself
    overruns the sample's timeout."""
    hung = tmp_path / "hung-launcher"
    hung.write_text("#!/bin/sh\nexec sleep 60\n")
    hung.chmod(0o755)
    monkeypatch.setattr(launcher_mod, "GUARD_MARGIN_S", 0.2)
    t0 = time.monotonic()
    with pytest.raises(HostError, match="launcher failed"):
        run_sample(["/bin/true"], cwd=tmp_path, env=dict(os.environ), timeout_s=0.1,
                   launch=hung)
    assert time.monotonic() - t0 < 30


def test_stderr_merged_into_stdout_in_order(tmp_path: Path, launch: Path) -> None:
    # ioquake3 prints its console, the timedemo result included, on stderr: [run] stderr =
    # "stdout" makes it part of the output metrics read.
    script = "echo out1; echo err1 >&2; echo out2"
    apart = run_sample(["/bin/sh", "-c", script], cwd=tmp_path, env={}, timeout_s=10,
                       launch=launch)
    assert apart.stdout == "out1\nout2\n" and "err1" in apart.stderr_tail
    merged = run_sample(["/bin/sh", "-c", script], cwd=tmp_path, env={}, timeout_s=10,
                        launch=launch, merge_stderr=True)
    assert merged.stdout == "out1\nerr1\nout2\n" and merged.stderr_tail == ""
