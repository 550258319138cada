"""Family: work that grows faster than the data (issue 30).

A run of 10^5 samples once took 24 GB to report: an estimator built an n x m matrix, and the
store went from rows to records through the export document and back. The invariant: every
command's work grows at most like n log n in the samples of a run. Hypothesis draws the run's
shape (workloads, targets' rates, the number of samples n); each command (import, report in
every format, explain, advise, compare, export) then runs in this process on runs of n, 2n and
4n samples, and its Python calls (cProfile's count, deterministic) and its peak allocation
(tracemalloc) are measured. A fixed cost (imports, set-up) cancels in the
differences: linear work adds as much from 2n to 4n as twice from n to 2n; quadratic work adds
four times as much. No wall clock is read (bench/scale.py measures time, to 10^6 samples).
ABIBENCH_INVARIANTS_SCALE=k draws k times as many shapes.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import json
import os
import pstats
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench import cli
from tests.conftest import synthetic_doc
from tests.readingcommands import READING_COMMANDS

SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))

COMMANDS = READING_COMMANDS
# Linear work doubles its increment when the data doubles (n log n: a little more); quadratic
# quadruples it. The slack covers what varies with the values themselves (a chart's ticks).
GROWTH = 2.6
SLACK_CALLS = 20_000
SLACK_BYTES = 2 << 20


def _measured(argv: list[str]) -> tuple[int, int]:
    """(Python calls, peak bytes allocated) of one command in this process."""
    prof = cProfile.Profile()
    sink = io.StringIO()
    tracemalloc.start()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            prof.enable()
            code = cli.main(argv)
            prof.disable()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 0, (argv, sink.getvalue()[-500:])
    return pstats.Stats(prof).total_calls, peak  # type: ignore[attr-defined]


def _run_of(tmp: Path, workloads: dict[str, dict[str, float]], samples: int) -> tuple[str, Path]:
    per_round = sum(len(r) for r in workloads.values())
    doc = synthetic_doc(run_id=f"20260101-000000-n{samples}", workloads=workloads,
                        rounds=max(1, samples // per_round) - 1)
    path = tmp / f"run{samples}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(doc["run"]["id"]), path


def _costs(tmp: Path, workloads: dict[str, dict[str, float]], n: int) -> dict[str, tuple[int, int]]:
    """Each command's cost on a run of n samples, in a database and directory of its own."""
    tmp.mkdir()
    out_dir = tmp / "out"
    out_dir.mkdir()
    os.environ["ABIBENCH_DATA"] = str(tmp / "data")
    run_id, path = _run_of(tmp, workloads, n)
    costs = {"import": _measured(["import", str(path)])}
    for name, argv in COMMANDS.items():
        costs[name] = _measured([a.format(run=run_id, out=out_dir, file=path) for a in argv])
    return costs


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@settings(max_examples=SCALE, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(1, 3), gap=st.floats(0.5, 1.5), n=st.sampled_from([200, 250, 300]))
def test_every_command_grows_at_most_linearly(tmp_path_factory: pytest.TempPathFactory,
                                              monkeypatch: pytest.MonkeyPatch, count: int,
                                              gap: float, n: int) -> None:
    tmp = tmp_path_factory.mktemp("linear")
    monkeypatch.setenv("ABIBENCH_DATA", str(tmp / "data"))  # restored after the test
    monkeypatch.setenv("CI", "true")
    workloads = {f"w{i}": {"i386": 100.0 * gap + i, "x86_64": 100.0} for i in range(count)}
    _costs(tmp / "warm", workloads, 40)  # what a first call costs once (imports, font cache)
    sizes = [n, 2 * n, 4 * n]
    by_size = [_costs(tmp / str(size), workloads, size) for size in sizes]
    for name in ["import", *COMMANDS]:
        (c1, m1), (c2, m2), (c4, m4) = (costs[name] for costs in by_size)
        assert c4 - c2 <= GROWTH * max(c2 - c1, 0) + SLACK_CALLS, \
            f"{name}: calls {c1} {c2} {c4} at {sizes} samples grow faster than the data"
        # Peak allocation is noisier than a call count (a cache warmed at n, a chart drawn only
        # where the data has a tail): doubling the data may at most multiply it by GROWTH, so a
        # quadratic term that dominates (x4 per doubling) is caught, the noise at n is not read.
        assert m4 <= GROWTH * m2 + SLACK_BYTES, \
            f"{name}: peak bytes {m1} {m2} {m4} at {sizes} samples grow faster than the data"
