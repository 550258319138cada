"""Faults of the harness (tests/faults/harness.py), drawn for this session, each at a checkpoint
drawn too: a real run killed, its disk filled, its database deleted or replaced, its program or
build cache replaced, right after its k-th sample was stored. bench/faults.py tries every fault
at every checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.errors import UsageError
from abibench.store.faultpoint import FAULT_ENV, SIGNALS, parse

from .harness import FAULTS, Case, Unavailable, all_cases, drawn_faults, run_case, sandbox
from .harness import Outcome as Tried


def test_every_fault_at_every_checkpoint_is_generated() -> None:
    cases = all_cases(5)
    assert len(cases) == len(FAULTS) * 5 and len({c.id for c in cases}) == len(cases)
    assert {c.at for c in cases} == {1, 2, 3, 4, 5}


@pytest.mark.parametrize("fault", drawn_faults())
def test_fault_at_a_checkpoint(fault: str, checkpoint: int, warmed: tuple[Path, int],
                               tmp_path: Path, tried: list[Tried]) -> None:
    cache, samples = warmed
    try:
        case = Case(fault, checkpoint)
        out = run_case(case, sandbox(case, tmp_path, cache), samples)
    except Unavailable as exc:
        pytest.skip(str(exc))
    tried.append(out)
    assert not out.violations, f"{out.case.id}: " + "\n".join(out.violations)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=30),
                 st.builds(lambda k, sig, kind: f"{kind}:{k}:{sig}",
                           st.integers(-3, 10**6), st.sampled_from([*SIGNALS, "SIGKILL", "int",
                                                                   "USR1", ""]),
                           st.sampled_from(["sample", "commit", ""]))))
def test_fault_point_is_parsed_or_refused_in_one_line(text: str) -> None:
    try:
        at = parse(text)
    except UsageError as exc:
        assert "\n" not in str(exc) and FAULT_ENV in str(exc)
        return
    kind, k, sig = text.strip().split(":")
    assert (at.kind, at.count) == (kind, int(k)) and at.count >= 1
    assert at.signal == SIGNALS[sig.upper().removeprefix("SIG")]
