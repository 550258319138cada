"""Generated tests tried for longer than CI does: one loop for every bench/ script that does it.

Each family (an invariant of docs/reliability.md) has one or more generated tests; they are
called in turn, each call with fresh random draws (outside pytest the default Hypothesis
profile draws afresh; the gate's derandomized one is loaded by tests/conftest.py only), until
the time is up. A violation is counted and its first failure kept whole; the study goes on.
"""

from __future__ import annotations

import argparse
import functools
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def examples(call: Callable[..., Any]) -> int:
    """How many cases one call generates (a partial's function's max_examples)."""
    fn = call.func if isinstance(call, functools.partial) else call
    return int(fn._hypothesis_internal_use_settings.max_examples)  # type: ignore[attr-defined]


def draw_for(minutes: float, families: Mapping[str, Sequence[Callable[[], Any]]]
             ) -> dict[str, tuple[int, int, str]]:
    """Per family: cases generated, violating calls, the first violation's traceback."""
    end = time.monotonic() + minutes * 60
    jobs = [(name, call) for name, calls in families.items() for call in calls]
    counts = {name: [0, 0] for name in families}
    first: dict[str, str] = {}
    i = 0
    while time.monotonic() < end:
        name, call = jobs[i % len(jobs)]
        i += 1
        try:
            call()
        except Exception:  # a violation: counted, the first one kept whole
            counts[name][1] += 1
            first.setdefault(name, traceback.format_exc(limit=5))
        counts[name][0] += examples(call)
    return {name: (c, bad, first.get(name, "")) for name, (c, bad) in counts.items()}


def report(results: Mapping[str, tuple[int, int, str]]) -> int:
    """Prints each family's counts and first violation; 1 when any call violated."""
    for name, (cases, bad, _) in results.items():
        print(f"{name}: {cases} generated cases, {bad} violating calls")
    for name, (_, _, tb) in results.items():
        if tb:
            print(f"\nfirst violation of '{name}':\n{tb}")
    return 1 if any(bad for _, bad, _ in results.values()) else 0


def cli(doc: str | None, families: Mapping[str, Sequence[Callable[[], Any]]]) -> int:
    """A script's whole command line: `--minutes M` (default 5), then the loop and its report."""
    ap = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    return report(draw_for(ap.parse_args().minutes, families))
