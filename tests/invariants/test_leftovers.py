"""A test run leaves nothing behind, even when a previous one was killed (tests/owned.py).

A process that holds a server fixture (a PostgreSQL cluster, sshd hosts) is killed outright at a
generated point of its life (making its directory, initdb, the server starting, serving): its
servers stop (PR_SET_PDEATHSIG), and the next session's sweep removes everything it made, while
a live owner's directory is kept.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .. import owned
from ..processes import wait_until

REPO = Path(__file__).resolve().parents[2]

# The holder: prints its stamp before it makes anything, "up" once its server answers, then
# holds it until it is killed.
HOLDER = """
import sys, time
from tests import owned
from tests.servers import pg_cluster, sshd_hosts
print(owned.stamp(), flush=True)
held = pg_cluster() if sys.argv[1] == "postgresql" else sshd_hosts({"h": "127.0.0.5"})
with held:
    print("up", flush=True)
    sys.stdin.read()  # held until killed (or its stdin closes)
"""


def _using(base: Path) -> list[int]:
    """Live processes whose command line names base or whose working directory is under it."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            line = (d / "cmdline").read_bytes()
            cwd = os.readlink(d / "cwd")
            state = (d / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X") and (str(base).encode() in line or
                                         cwd.startswith(str(base))):
            found.append(int(d.name))
    return found


@pytest.mark.needs_setup("postgresql", "openssh-server", root=True)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(holder=st.sampled_from(["postgresql", "sshd"]),
       when=st.one_of(st.just("up"), st.floats(0.0, 2.0)))
def test_a_holder_killed_anywhere_leaves_nothing_after_the_next_sweep(holder: str,
                                                                      when: str | float) -> None:
    # The holder uses the same parent as every test process (a nested one would make
    # PostgreSQL's socket path longer than a Unix socket's 107 bytes).
    mine = owned.owned_root()  # a live owner's, made before the sweep: kept
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, holder], cwd=REPO, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        said = proc.stdout.readline().strip()
        assert said, proc.communicate()
        made = owned.root() / said
        if when == "up":
            assert proc.stdout.readline().strip() == "up", proc.communicate()
        else:  # a point while it makes its directory, runs initdb or starts the server
            assert isinstance(when, float)
            wait_until(lambda: proc.poll() is not None, when)
        assert proc.poll() is None, proc.communicate()  # killed while holding, not after
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    # What it started stops once its parent is gone (polite signals: let them finish).
    assert wait_until(lambda: _using(made) == [], 60), _using(made)
    swept = owned.sweep()
    assert not made.exists(), f"left behind: {sorted(made.rglob('*'))[:5]}"
    assert mine.is_dir() and mine not in swept


def test_a_name_that_is_no_stamp_or_a_live_owner_is_left_alone(tmp_path: Path) -> None:
    top = owned.root(tmp_path)
    alive_other = top / owned.stamp(os.getppid())
    foreign = top / "not-a-stamp"
    reused = top / f"{os.getpid()}-1"  # this PID, another start time: an earlier owner, gone
    for d in (alive_other, foreign, reused):
        (d / "x").mkdir(parents=True)
    assert owned.sweep(tmp_path) == [reused]
    assert sorted(top.iterdir()) == sorted([alive_other, foreign])
