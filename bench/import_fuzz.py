"""The import properties of tests/store/test_import_generated.py, for minutes instead of seconds.

    .venv/bin/python bench/import_fuzz.py --minutes 5

Generates valid run documents (export -> import -> export must be the identity) and broken ones
of every family (each must be refused by `abibench import` in one line naming its `$.path`,
exit 2, nothing stored) until the time is up, then prints per family how many were generated
and how many broke the invariant (the first failure of each is shown).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.store.test_import_generated import (
    VALID,
    Doc,
    broken,
    check_refused,
    check_round_trip,
)

from abibench.cli import main


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def main_(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=1.0)
    args = ap.parse_args(argv)
    half = args.minutes * 30.0  # seconds for each property
    generated: Counter[str] = Counter()
    violations: Counter[str] = Counter()
    first: dict[str, str] = {}

    def record(family: str, check: Any) -> None:
        generated[family] += 1
        try:
            with tempfile.TemporaryDirectory() as where:
                check(Path(where))
        except AssertionError as exc:
            violations[family] += 1
            first.setdefault(family, str(exc)[:300])

    def timed(test: Any, seconds: float) -> None:
        """Runs of 50 examples each (a new random start every time) until the time is up."""
        end = time.monotonic() + seconds
        batch = settings(max_examples=50, deadline=None, database=None,
                         suppress_health_check=list(HealthCheck))(test)
        while time.monotonic() < end:
            batch()

    @given(doc=VALID)
    def valid(doc: Doc) -> None:
        record("valid: round trip", lambda where: check_round_trip(run_cli, doc, where))

    @given(case=broken())
    def invalid(case: tuple[str, Doc, str]) -> None:
        family, doc, at = case
        record(family, lambda where: check_refused(run_cli, family, doc, at, where))

    timed(valid, half)
    timed(invalid, half)
    print(f"{'invariant / family':32s} {'generated':>10s} {'violations':>10s}")
    for family in sorted(generated):
        print(f"{family:32s} {generated[family]:10d} {violations[family]:10d}")
    for family, message in first.items():
        print(f"first violation, {family}: {message}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main_())
