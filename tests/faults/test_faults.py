"""Every fault of the harness (tests/faults/harness.py) at a checkpoint drawn for this session:
a real run killed, its disk filled, its database deleted or replaced, its program or build
cache replaced, right after its k-th sample was stored. bench/faults.py tries every checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import FAULTS, Case, Unavailable, all_cases, run_case, sandbox
from .harness import Outcome as Tried


def test_every_fault_at_every_checkpoint_is_generated() -> None:
    cases = all_cases(5)
    assert len(cases) == len(FAULTS) * 5 and len({c.id for c in cases}) == len(cases)
    assert {c.at for c in cases} == {1, 2, 3, 4, 5}


@pytest.mark.parametrize("fault", FAULTS)
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
