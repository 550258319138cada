"""Family: a fast path that reads another way (issue 30). SQLite reads a run that is most of
its table by one pass over the table (no sort), a smaller one through the index on run_id;
either way a run's samples are the ones written to it, in the order written. Hypothesis draws
how the samples of three runs are interleaved as they are written (so each way is taken, the
run being most, half or little of the table), and every run is read both ways and as chosen.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.records import HostContext, Run, RunConfig, Sample
from abibench.store.sqlite import Store

RUNS = ("r1", "r2", "r3")


def _sample(run_id: str, i: int) -> Sample:
    return Sample(run_id=run_id, workload="w", target="i386", round=i, position=0, warmup=False,
                  status="ok", exit_code=0, wall_s=1.0 + i, user_s=1.0, sys_s=0.1,
                  max_rss_kb=2048, stdout_digest="d", check="c", metrics={"rate": float(i)},
                  started_at="2026-01-01T00:00:01")


@settings(max_examples=15, deadline=None)
@given(order=st.lists(st.sampled_from(RUNS), max_size=40))
def test_a_runs_samples_read_either_way_are_the_ones_written_in_order(order: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="abibench-order-") as tmp:
        store = Store(Path(tmp) / "results.sqlite")
        try:
            for r in RUNS:
                store.create_run(Run(r, "2026-01-01T00:00:00", None, "running", "0",
                                     RunConfig({})), HostContext(cpu_model="x"))
            written: dict[str, list[Sample]] = {r: [] for r in RUNS}
            for i, r in enumerate(order):
                s = _sample(r, i)
                store.add_sample(s)
                written[r].append(s)
            chosen = Store.samples_of
            for r in RUNS:
                assert store.samples(r) == written[r]
                for way in ("samples", "samples NOT INDEXED"):
                    with pytest.MonkeyPatch.context() as mp:
                        mp.setattr(Store, "samples_of", lambda self, run_id, w=way: w)
                        assert store.samples(r) == written[r]
                assert Store.samples_of is chosen
        finally:
            store.close()
