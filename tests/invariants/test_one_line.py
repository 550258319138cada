"""Every error is one line (src/abibench/toplevel.py), tried on generated faults.

The real command line in a subprocess, with a generated command and a generated fault: its
standard output a pipe whose reader is gone, /dev/full, a closed descriptor, or a limit of
5 to 12 open files. Whatever happens, no traceback: the command succeeds, or stderr is exactly
one `abibench: error:` line with a code of errors.py, or (a reader that went away) nothing at
all with EXIT_PIPE.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.errors import EXIT_PIPE, EXIT_SYSTEM

COMMANDS = [["runs"], ["runs", "--json"], ["report"], ["report", "--json"], ["list"],
            ["list", "--json"], ["export", "latest"], ["--help"], ["report", "--markdown", "OUT"],
            ["report", "--html", "OUT"], ["report", "--samples-csv", "OUT"], ["import", "A"]]
FAULTS = st.one_of(st.sampled_from(["pipe", "full", "closed"]),
                   st.integers(min_value=5, max_value=12).map(lambda n: f"nofile={n}"))

# bench/invariants.py runs these tests with more examples (a multiple of each test's own).
SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))


@pytest.fixture
def world(tmp_path: Path, cli_env: dict[str, str],
          make_doc: Callable[..., dict[str, object]]) -> dict[str, str]:
    env = {**cli_env, "ABIBENCH_DATA": str(tmp_path / "data")}
    env.pop("ABIBENCH_DB", None)  # the SQLite file: these faults are the local process's
    env.pop("ABIBENCH_DEBUG", None)
    (tmp_path / "a.json").write_text(json.dumps(make_doc()))
    done = subprocess.run([sys.executable, "-m", "abibench", "import", str(tmp_path / "a.json")],
                          env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return env


def _run(argv: list[str], fault: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    stdout: int | None = None
    preexec: Callable[[], None] | None = None
    read_end = write_end = -1
    if fault == "pipe":
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader is gone before the first byte
        stdout = write_end
    elif fault == "full":
        stdout = os.open("/dev/full", os.O_WRONLY)
    elif fault == "closed":
        stdout = subprocess.DEVNULL

        def preexec() -> None:
            os.close(1)
    else:
        n = int(fault.split("=")[1])
        stdout = subprocess.DEVNULL

        def preexec() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    try:
        return subprocess.run([sys.executable, "-m", "abibench", *argv], stdout=stdout,
                              stderr=subprocess.PIPE, text=True, env=env, preexec_fn=preexec,
                              timeout=120, check=False)
    finally:
        if isinstance(stdout, int) and stdout >= 0:
            os.close(stdout)


@settings(max_examples=6 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(COMMANDS), fault=FAULTS)
def test_any_fault_ends_in_one_line_or_none(world: dict[str, str], tmp_path: Path,
                                           command: list[str], fault: str) -> None:
    out = tmp_path / "out" / "report"
    argv = [str(out) if a == "OUT" else str(tmp_path / "a.json") if a == "A" else a
            for a in command]
    r = _run(argv, fault, world)
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
    if fault == "pipe" and r.returncode == EXIT_PIPE:
        assert r.stderr == "", "a closed pipe is not an error to report"
        return
    if r.returncode == 0:
        return
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("abibench: error: "), (argv, fault, r.stderr)
    if fault == "full":
        assert r.returncode == EXIT_SYSTEM and "standard output" in lines[0]
    assert r.returncode not in (1, 120), "Python's own codes: an exception escaped"


def test_debug_shows_the_traceback(world: dict[str, str]) -> None:
    """The developers' way back to the traceback the user never sees."""
    r = _run(["runs"], "full", {**world, "ABIBENCH_DEBUG": "1"})
    assert r.returncode != 0 and "Traceback" in r.stderr
