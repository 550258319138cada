"""What a run is doing and how long it has left, from the measuring stage's progress callbacks.

Pure bookkeeping (no printing): the CLI shows it as a progress bar. The time left is an
estimate: a workload that has started is projected from its own samples (the rounds it still
needs at least, and the rest of its time budget when the schedule is adaptive); a workload that
has not started counts its whole time budget (or, with --rounds, the average duration of the
workloads measured so far).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..records import Sample
from .schedule import Plan


@dataclass
class _Workload:
    started: float | None = None
    finished: float | None = None
    samples: int = 0
    sample_seconds: float = 0.0


@dataclass
class RunTracker:
    workloads: list[str]
    plan: Plan
    targets: int  # targets that run per round (ABIs this host can run)
    clock: Callable[[], float] = time.monotonic
    activity: str = "starting"
    _state: dict[str, _Workload] = field(default_factory=dict)
    _current: str | None = None

    def __post_init__(self) -> None:
        self._state = {w: _Workload() for w in self.workloads}

    def _enter(self, wid: str) -> None:
        if wid not in self._state or wid == self._current:
            return
        now = self.clock()
        if self._current is not None and self._state[self._current].finished is None:
            self._state[self._current].finished = now
        self._current = wid
        if self._state[wid].started is None:
            self._state[wid].started = now

    def message(self, msg: str) -> None:
        """A progress line of measure.execute: '<workload>: building for i386', ..."""
        self.activity = msg
        wid, _, rest = msg.partition(": ")
        self._enter(wid)
        if rest.startswith("running "):
            # '<workload>: running i386, x86_64': the targets that take part in every round
            self.targets = max(1, len(rest[len("running "):].split(", ")))

    def sample(self, s: Sample) -> None:
        self._enter(s.workload)
        st = self._state.get(s.workload)
        if st is not None:
            st.samples += 1
            st.sample_seconds += s.wall_s
        kind = "warm-up" if s.warmup else f"round {s.round}"
        self.activity = f"{s.workload}: {s.target} {kind} {s.status} ({s.wall_s:.1f}s)"

    def done(self) -> int:
        return sum(1 for st in self._state.values() if st.finished is not None)

    def _expected(self, st: _Workload) -> float:
        """Expected total seconds of one workload, the part already measured included."""
        p = self.plan
        if st.samples:
            per: float | None = st.sample_seconds / st.samples
        else:
            n = sum(x.samples for x in self._state.values())
            per = sum(x.sample_seconds for x in self._state.values()) / n if n else None
        limit = p.time_limit()
        if per is None:
            return limit if math.isfinite(limit) else 0.0
        if p.fixed_rounds is not None:
            return (p.warmup + p.fixed_rounds) * self.targets * per
        at_least = (p.warmup + p.min_rounds) * self.targets * per
        at_most = (p.warmup + p.round_limit()) * self.targets * per
        # a shared or noisy machine seldom reaches the precision early: expect the budget used
        return max(at_least, min(limit, at_most))

    def seconds_left(self) -> float:
        now = self.clock()
        if self.plan.budget_s is not None and self.plan.fixed_rounds is None:
            # Under a suite budget the rounds go where they buy the most: the budget is the
            # estimate, less what the measuring has used.
            started = [st.started for st in self._state.values() if st.started is not None]
            return max(0.0, self.plan.budget_s - (now - min(started))) if started \
                else self.plan.budget_s
        left = 0.0
        for st in self._state.values():
            if st.finished is not None:
                continue
            if st.started is None:
                left += self._expected(st)
            else:
                left += max(0.0, self._expected(st) - (now - st.started))
        return left

    def fraction(self) -> float:
        now = self.clock()
        spent = sum(((st.finished or now) - st.started) for st in self._state.values()
                    if st.started is not None)
        total = spent + self.seconds_left()
        return spent / total if total > 0 else 0.0

    def line(self) -> str:
        return (f"{self.done()}/{len(self.workloads)} workloads, "
                f"{format_left(self.seconds_left())}")


def format_left(seconds: float) -> str:
    if seconds < 60:
        return "< 1 min left"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"~{minutes} min left"
    return f"~{minutes // 60} h {minutes % 60:02d} min left"
