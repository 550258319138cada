"""Invariant "an output check that compares what varies says how to compare what was computed"
(docs/reliability.md): generated over the check values of each target's rounds. Where one
target's own outputs differ from round to round (the whole stdout with a rate in it, under
--check-stdout), the MISCOMPARE carries the fix (--check REGEX, or stdout_match); outputs that
differ only between ABIs are a real disagreement and get no such hint."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.results import UNSTABLE_OUTPUT_HINT, validate_outputs
from abibench.records import Sample
from tests.documents import SAMPLE_DEFAULTS

TARGETS = ("i386", "x86_64")
checks_st = st.fixed_dictionaries({t: st.lists(st.sampled_from(["a1", "b2", "c3"]), min_size=1,
                                               max_size=4) for t in TARGETS})


@settings(max_examples=60, deadline=None)
@given(checks_st)
def test_outputs_that_vary_within_one_abi_get_the_fix(checks: dict[str, list[str]]) -> None:
    samples = [Sample.from_dict({**SAMPLE_DEFAULTS, "workload": "w", "target": t, "round": r,
                                 "check": c})
               for t, values in checks.items() for r, c in enumerate(values, start=1)]
    state, detail = validate_outputs(samples, list(TARGETS), True)
    unstable = any(len(set(v)) > 1 for v in checks.values())
    between = len({v[0] for v in checks.values()}) > 1
    assert state == ("miscompare" if unstable or between else "ok"), (state, detail)
    assert (UNSTABLE_OUTPUT_HINT in detail) == unstable, detail
    if unstable:
        assert "--check" in detail and "stdout_match" in detail
