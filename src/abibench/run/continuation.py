"""Where a resumed workload continues: what its stored samples already hold."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..records import RunDoc, Sample
from .schedule import Continuation


@dataclass(frozen=True)
class Resumed:
    """A workload's continuation, and the samples of its cut-short rounds to discard."""

    continuation: Continuation | None  # None: the workload had finished
    cut_short: frozenset[int]  # round numbers measured again


def continuation(doc: RunDoc, wid: str, labels: Sequence[str]) -> Resumed:
    """Where workload `wid`, measured on `labels`, continues."""
    outcome = doc.outcomes.get(wid)
    if outcome is not None and outcome.stop_reason and \
            not outcome.stop_reason.startswith("interrupted"):
        return Resumed(None, frozenset())
    timed = [s for s in doc.samples if s.workload == wid and s.kind == "timed"
             and s.discarded is None]
    failed = {s.target: s.error or s.status for s in timed
              if s.status not in ("ok", "interrupted")}
    for st in doc.statuses:
        if st.workload == wid and st.state in ("failed", "timeout") and st.target in labels:
            failed.setdefault(st.target, st.reason or st.state)
    active = [t for t in labels if t not in failed]
    by_round: dict[int, list[Sample]] = {}
    for s in timed:
        by_round.setdefault(s.round, []).append(s)
    complete, cut = [], set()
    for rnd, group in sorted(by_round.items()):
        if all(s.warmup for s in group):
            continue
        ok = {s.target for s in group if s.status == "ok"}
        if set(active) <= ok:
            complete.append(rnd)
        else:
            cut.add(rnd)
    prior = tuple(s for s in timed if s.round in complete and s.counted and s.target in active)
    counted = {s.target for s in doc.samples if s.workload == wid and s.kind == "counters"}
    rounds = [s.round for s in doc.samples if s.workload == wid]
    return Resumed(Continuation(
        next_round=max(rounds) + 1 if rounds else 0,
        counted_rounds=len(complete), prior=prior,
        spent_s=sum(s.wall_s for s in timed), failed=failed,
        counted_targets=frozenset(counted)), frozenset(cut))
