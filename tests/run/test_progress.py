"""The run progress tracker: which workload is current, how much is done, the time left."""

from __future__ import annotations

from abibench.records import Sample
from abibench.run.progress import RunTracker, format_left
from abibench.run.schedule import Plan


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _sample(wl: str, target: str, wall: float, rnd: int = 1) -> Sample:
    return Sample(run_id="r", workload=wl, target=target, round=rnd, position=0, warmup=rnd == 0,
                  status="ok", exit_code=0, wall_s=wall, user_s=wall, sys_s=0.0, max_rss_kb=1,
                  stdout_digest="", check=None)


def test_unstarted_workloads_count_their_time_budget() -> None:
    clock = Clock()
    t = RunTracker(["a", "b", "c"], Plan(max_time_s=100.0), targets=2, clock=clock)
    assert t.seconds_left() == 300.0
    assert t.fraction() == 0.0 and t.done() == 0


def test_a_started_workload_is_projected_from_its_samples() -> None:
    clock = Clock()
    plan = Plan(min_rounds=5, max_rounds=30, warmup=1, max_time_s=1000.0)
    t = RunTracker(["a", "b"], plan, targets=3, clock=clock)
    t.message("a: building for i386")
    t.message("a: running i386, x86_64")  # two targets take part after all
    assert t.targets == 2
    for i in range(4):
        clock.now += 2.0
        t.sample(_sample("a", "i386", 2.0, rnd=i))
    # 2 s a sample, at most (1 + 30) x 2 samples = 124 s, under the 1000 s budget
    assert t.seconds_left() == (124.0 - 8.0) + 124.0  # 'b' borrows 'a's sample time
    assert "a: i386 round 3 ok" in t.activity
    clock.now += 10.0
    t.message("b: building for i386")
    assert t.done() == 1
    assert 0.0 < t.fraction() < 1.0


def test_fixed_rounds_estimate() -> None:
    clock = Clock()
    t = RunTracker(["a"], Plan(fixed_rounds=3, warmup=0), targets=2, clock=clock)
    t.message("a: running i386, x86_64")
    clock.now += 1.0
    t.sample(_sample("a", "i386", 1.0))
    assert t.seconds_left() == 6.0 - 1.0


def test_format_left() -> None:
    assert format_left(30) == "< 1 min left"
    assert format_left(600) == "~10 min left"
    assert format_left(3 * 3600 + 5 * 60) == "~3 h 05 min left"
