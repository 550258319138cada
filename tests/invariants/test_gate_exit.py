"""The gate fails when any of its parts fails (scripts/beside.sh): ruff and mypy run beside the
tests, so their exit codes must reach the gate's, and a part still running when the gate stops
(an error, SIGTERM) is stopped by its PID, not left behind.

The members of the family are generated: any number of background parts, each with any exit
code, and any exit code of the tests."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
BESIDE = REPO / "scripts" / "beside.sh"


def _gate(parts: list[int], tests: int, tmp: Path) -> subprocess.CompletedProcess[str]:
    """A gate of this shape: each part exits with its code (after writing a line), the tests
    with theirs; the same calls as scripts/test.sh."""
    lines = ["set -euo pipefail", f". {shlex.quote(str(BESIDE))}", "trap beside_stop EXIT"]
    for i, code in enumerate(parts):
        lines.append(f"beside part{i} sh -c 'echo said-by-part{i}; exit {code}'")
    lines += ["rc=0", f"sh -c 'exit {tests}' || rc=$?", 'gate_finish "$rc"']
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run(["bash", "-c", "\n".join(lines)], capture_output=True, text=True,
                          env=env, timeout=60, check=False)


@settings(max_examples=30, deadline=None)
@given(parts=st.lists(st.integers(0, 3), max_size=3), tests=st.sampled_from((0, 1, 2, 5)))
@example(parts=[0, 2, 1], tests=0)  # the case a gate that waits on the tests alone gets wrong
def test_the_gate_fails_when_any_part_fails(parts: list[int], tests: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        done = _gate(parts, tests, Path(tmp))
        failed = [c for c in parts if c]
        # pytest's own code first (its codes tell a failure from no tests), else the first part's
        want = tests or (failed[0] if failed else 0)
        assert done.returncode == want, (parts, tests, done.stdout, done.stderr)
        for i, code in enumerate(parts):
            assert f"said-by-part{i}" in done.stdout  # every part's output is shown
            assert (f"gate: part{i} failed (exit {code})" in done.stderr) == bool(code)
        assert os.listdir(tmp) == []  # the parts' logs are removed


def test_a_gate_stopped_while_its_parts_run_stops_them_by_pid(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = "\n".join([
        "set -euo pipefail", f". {shlex.quote(str(BESIDE))}", "trap beside_stop EXIT",
        "trap 'exit 143' TERM",
        # a part that would outlive the gate: it writes its PID, then waits on a FIFO nobody opens
        f"mkfifo {tmp_path}/never",
        f"beside slow sh -c 'echo $$ > {pids}; exec cat {tmp_path}/never'",
        f"while [ ! -s {pids} ]; do sleep 0.05; done",
        "kill -TERM $$",  # the gate is stopped (as by CI) while the part runs
        "sleep 60",
    ])
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TMPDIR": str(tmp_path)}, check=False)
    assert done.returncode == 143, done.stderr
    pid = int(pids.read_text())
    assert not Path(f"/proc/{pid}").exists(), "the part outlived the gate"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("abibench-gate")] == []
