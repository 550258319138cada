"""Nothing a build starts outlives abibench: SIGINT, SIGTERM or SIGKILL at generated moments of
a build whose command leaves a child in its group and a grandchild in a session of its own.

The build runs in a process of its own (tests/obtain/build_child.py, the real obtain/build.py);
its processes are found in /proc by a token in their command lines, never by name. SIGINT and
SIGTERM: when abibench has exited, no build process is left and no staging directory either.
SIGKILL: no code of abibench runs; sandboxed, bwrap's --die-with-parent and its PID namespace
kill every build process at once; unconfined (no bwrap), the group leader dies with abibench
and the next start's `clean_stale` kills what is left (processes marked with the staging
directory) and removes the directory. That is the design, and what is asserted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from abibench.obtain import buildbox
from abibench.workspace import clean_stale
from tests.processes import wait_until

ROOT = Path(__file__).resolve().parents[2]
# bench/build_invariants.py runs these longer: more examples per call.
SCALE = int(os.environ.get("ABIBENCH_TEST_SCALE", "1"))
# A child left in the build's group, a grandchild that left it (setsid), and the command's own
# sleep; each sleep's argument carries the example's token.
PROFILE = '''id = "killme"
title = "a build that starts a child and a grandchild and waits"
[params]
tok = "0"
[source]
build = ["sh", "-c", "sleep 300.{tok}1 & (setsid sleep 300.{tok}2 &); sleep 300.{tok}3"]
artifacts = ["prog"]
[run]
command = ["{bin}/prog"]
'''


def build_processes(token: str) -> list[int]:
    """Live processes whose command line carries the token (bwrap's own included)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if f"300.{token}".encode() in cmdline:
            found.append(int(entry.name))
    return found


def sleeps_started(token: str) -> int:
    n = 0
    for pid in build_processes(token):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        n += argv[0] == b"sleep"
    return n


def staging_dirs(cache: Path) -> list[Path]:
    return list((cache / "builds" / "killme").glob(".x86_64-*"))


def _kill_leftovers(token: str) -> None:
    for pid in build_processes(token):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("how", ["sandboxed", "unconfined"])
@settings(max_examples=3 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(sig=st.sampled_from([signal.SIGINT, signal.SIGTERM, signal.SIGKILL]),
       moment=st.integers(1, 3))
# Every run tries SIGKILL once all are running (the grandchild already out of the group).
@example(sig=signal.SIGKILL, moment=3)
def test_no_build_process_or_staging_dir_outlives_abibench(how: str, sig: signal.Signals,
                                                           moment: int) -> None:
    if how == "sandboxed" and buildbox.sandbox_problem():
        pytest.skip(f"no sandbox here: {buildbox.sandbox_problem()}")
    token = str(uuid.uuid4().int)[:12]
    env = {**os.environ, buildbox.SANDBOX_SWITCH: "on" if how == "sandboxed" else "off",
           "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        prof, cache = Path(tmp) / "k.toml", Path(tmp) / "cache"
        prof.write_text(PROFILE)
        proc = subprocess.Popen([sys.executable, "-m", "tests.obtain.build_child", str(prof),
                                 str(cache), token], env=env, cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # The moment: after 1, 2 or all 3 of the build's sleeps have started.
            assert wait_until(lambda: sleeps_started(token) >= moment
                              or proc.poll() is not None, 60), "the build never started"
            assert proc.poll() is None, proc.communicate()
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
            if sig == signal.SIGKILL:
                if how == "sandboxed":
                    # Nothing of abibench ran: the kernel and bwrap ended the build.
                    assert wait_until(lambda: not build_processes(token), 15), \
                        build_processes(token)
                assert staging_dirs(cache), "SIGKILL leaves its staging dir to clean_stale"
                clean_stale(cache, temp_base=Path(tmp))
            else:
                assert proc.returncode == 130, err
            # Reaped processes vanish from /proc; a short grace for the kernel's bookkeeping.
            assert wait_until(lambda: not build_processes(token), 15), build_processes(token)
            assert staging_dirs(cache) == []
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            _kill_leftovers(token)
