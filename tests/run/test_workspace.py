"""Owned temporary directories: a name records its owner (the hostile cases, stale and
attacked directories, are in tests/hostile/test_workspace.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from abibench.workspace import Owner, current, owner_of, prefix, start_time


def test_a_name_records_its_owner_and_this_process_is_alive() -> None:
    me = current()
    assert me.pid == os.getpid() and me.start == start_time(os.getpid())
    assert owner_of(f"{prefix('sample')}abcd1234") == me
    assert owner_of(f"{prefix('.x86_64')}ab_cd123") == me  # mkdtemp's suffix
    assert owner_of("abibench-sample-x1y2") is None
    assert not me.gone()


def test_a_name_made_by_a_process_that_ended_is_stale() -> None:
    # The names the run stage makes parse back to the process that made them, in a child too.
    proc = subprocess.run(
        [sys.executable, "-c", "from abibench.workspace import prefix; print(prefix('sample'))"],
        capture_output=True, text=True, check=True)
    owner = owner_of(proc.stdout.strip() + "abcd")
    assert isinstance(owner, Owner) and owner.pid != os.getpid() and owner.gone()
