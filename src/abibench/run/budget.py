"""`--budget`: the whole run's time, spent where it buys the most precision.

Every workload first gets its warm-ups and OPENING_ROUNDS counted rounds (the fewest with a
spread), so that the budget's first minutes are not all spent on the suite's first workloads.
Then, while the budget lasts, rounds go to the workloads below --min-rounds, fewest rounds
first, so a suite whose opening alone would outlast the budget still ends on time, with the
rounds it could afford spread evenly and the shortfall said. From then on, one round
at a time goes to the workload whose confidence interval is furthest from --precision per second
a round of it costs (hw / precision - 1, over its round's duration), among those that can still
reach the precision together in the time left at the spreads measured so far (the quickest to
finish first: each alone might fit, but their sum must). When none can, the round goes where it
narrows an interval most per second (hw / 2n over a round's duration, the t interval's slope), so
that a workload with few, long rounds is not starved by one that chases precision cheaply. A
workload stops when it reaches the precision, its --max-time or --max-rounds, or the budget ends;
each stop says why, in numbers (stopping.noise_floor).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .schedule import Plan, Session
from .stopping import Precision, noise_floor, rounds_needed


@dataclass(frozen=True)
class Standing:
    """One open workload as the allocation sees it."""

    half_width: float  # inf: not enough rounds to know
    spread: float  # sd of a round's log ratio; nan: not known
    round_s: float  # seconds a round takes; nan: none counted yet
    counted: int

    def rounds_to_precision(self, asked: float) -> int:
        return max(0, rounds_needed(self.spread, asked) - self.counted)

    def seconds_to_precision(self, asked: float) -> float:
        if self.half_width <= asked:
            return 0.0
        if not (math.isfinite(self.round_s) and math.isfinite(self.spread)):
            return math.inf
        return self.rounds_to_precision(asked) * self.round_s


# Counted rounds every workload gets before the budget is shared out: two give a spread.
OPENING_ROUNDS = 2


def pick(standings: Sequence[Standing], asked: float, left_s: float,
         min_rounds: int = 0) -> int | None:
    """Which workload gets the next round (its index), or None when every one is precise."""
    below = [i for i, s in enumerate(standings) if s.counted < min_rounds]
    if below:
        return min(below, key=lambda i: (standings[i].counted, i))
    def worth(s: Standing) -> float:
        gap = s.half_width / asked - 1.0
        cost = s.round_s if math.isfinite(s.round_s) and s.round_s > 0 else 1.0
        return gap / cost

    open_ = [i for i, s in enumerate(standings) if s.half_width > asked]
    if not open_:
        return None
    # Without a spread there is no prediction: such a workload is measured until there is one.
    unknown = [i for i in open_ if not math.isfinite(standings[i].half_width * standings[i].spread)]
    if unknown:
        return unknown[0]
    reachable: list[int] = []
    needed = 0.0
    for i in sorted(open_, key=lambda i: standings[i].seconds_to_precision(asked)):
        needed += standings[i].seconds_to_precision(asked)
        if needed > left_s:
            break
        reachable.append(i)
    if reachable:
        return max(reachable, key=lambda i: worth(standings[i]))
    return max(open_, key=lambda i: narrowing(standings[i]))


def narrowing(s: Standing) -> float:
    """How fast one more round narrows the interval, per second: hw falls as 1/sqrt(n), so a
    round takes hw / 2n off it."""
    cost = s.round_s if math.isfinite(s.round_s) and s.round_s > 0 else 1.0
    return s.half_width / (2 * max(1, s.counted) * cost)


def standing(session: Session, pr: Precision) -> Standing:
    return Standing(pr.half_width, pr.spread, session.round_cost(), session.counted)


def time_left_text(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "not predictable yet"
    return f"~{seconds:.0f} s" if seconds < 120 else f"~{seconds / 60:.0f} min"


def open_rounds(session: Session) -> None:
    """Warm-ups and OPENING_ROUNDS counted rounds: what every workload gets before allocation."""
    opening = min(OPENING_ROUNDS, session.plan.min_rounds)
    while not session.stopped and (session.warming or session.counted < opening):
        session.run_round()


def allocate(sessions: Sequence[Session], plan: Plan, started: float,
             progress: Callable[[str], None], clock: Callable[[], float] = time.monotonic,
             ) -> None:
    """Rounds to the open sessions until each has stopped; `started`: when the budget began."""
    assert plan.budget_s is not None
    asked = plan.precision
    pct = f"(asked ±{asked * 100:g}%)"
    while True:
        live = [s for s in sessions if not s.stopped]
        if not live:
            return
        precisions = [s.precision() for s in live]
        for s, pr in zip(live, precisions, strict=True):
            if s.counted < plan.min_rounds and clock() - started < plan.budget_s:
                continue  # --min-rounds first, while the budget lasts
            if pr.half_width <= asked:
                s.stop(f"precision reached: CI within ±{pr.half_width * 100:.1f}% {pct}")
            elif s.elapsed() >= plan.time_limit():
                s.stop(f"--max-time {plan.time_limit():g}s ended at ±{pr.half_width * 100:.1f}% "
                       f"{pct}; {noise_floor(pr.spread, s.round_cost(), asked, pr.half_width)}")
            elif s.rounds_left() <= 0:
                s.stop(f"max {plan.round_limit()} rounds reached at ±{pr.half_width * 100:.1f}% "
                       f"{pct}")
        pairs = [(s, pr) for s, pr in zip(live, precisions, strict=True) if not s.stopped]
        if not pairs:
            return
        left = plan.budget_s - (clock() - started)
        if left <= 0:
            for s, pr in pairs:
                few = (f" after {s.counted} rounds, fewer than --min-rounds {plan.min_rounds}: "
                       "the budget could not afford more" if s.counted < plan.min_rounds else "")
                s.stop(f"run budget {plan.budget_s:g}s ended at ±{pr.half_width * 100:.1f}% "
                       f"{pct}{few}; "
                       f"{noise_floor(pr.spread, s.round_cost(), asked, pr.half_width)}")
            return
        standings = [standing(s, pr) for s, pr in pairs]
        i = pick(standings, asked, left, plan.min_rounds)
        if i is None:
            return
        s, pr = pairs[i]
        eta = standings[i].seconds_to_precision(asked)
        progress(f"{s.wl.id}: round {s.counted + 1}, ±{pr.half_width * 100:.1f}% now, "
                 f"±{asked * 100:g}% in {time_left_text(eta)}")
        s.run_round()
