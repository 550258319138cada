"""Issue 26's invariants about samples, tried for longer than CI does.

The same test logic as tests/run/test_program_identity.py and test_bounded_work.py (their
undecorated bodies, fed by the same Hypothesis strategies), round-robin until the time is up:

  .venv/bin/python bench/untrusted_bounds.py --minutes 5

prints, per invariant, how many generated cases ran and how many violated it (with the first
line of each violation). Exit status 1 when any did.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import NonInteractiveExampleWarning

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.run import test_bounded_work as bw
from tests.run import test_program_identity as pi

from abibench.run.launcher import launcher

Case = tuple[str, Callable[..., None], dict[str, st.SearchStrategy[Any]], tuple[str, ...]]

CASES: list[Case] = [
    ("profile patterns run in linear time (RE2)",
     bw.test_every_profile_pattern_runs_in_linear_time_on_adversarial_output,
     {"pattern": bw.PATTERNS, "output": bw.ADVERSARIAL}, ("pattern_dir",)),
    ("patterns RE2 refuses are one-line profile errors",
     bw.test_a_pattern_re2_cannot_run_in_linear_time_is_a_one_line_profile_error,
     {"pattern": bw.REFUSED, "key": st.sampled_from(["metric", "stdout_match"])},
     ("pattern_dir",)),
    ("[validate] files: regular and bounded, or refused",
     bw.test_a_validate_file_is_hashed_only_when_regular_and_within_the_limit,
     {"kind": st.sampled_from(bw.KINDS).filter(bw._usable),
      "limit": st.sampled_from([0, 1, 700, 4096])}, ("pattern_dir",)),
    ("[run] stdin: a regular file, or refused",
     bw.test_stdin_is_only_ever_a_regular_file,
     {"kind": st.sampled_from(bw.KINDS).filter(bw._usable)}, ("pattern_dir", "sample_launcher")),
    ("a stopped sample is stored, never counted",
     bw.test_a_sample_stopped_while_it_ran_is_stored_but_not_counted,
     {"sig": st.sampled_from([signal.SIGSTOP, signal.SIGTSTP])}, ("tmp_path", "shared_cache")),
    ("the program measured is the program built, every sample",
     pi.test_a_program_swapped_between_samples_k_and_k1_and_back_is_never_counted,
     {"k": st.integers(1, 5), "back_after": st.integers(1, 4),
      "how": st.sampled_from(pi.SWAPS), "in_cache": st.booleans()},
     ("tmp_path", "shared_cache")),
]


def _body(fn: Callable[..., None]) -> Callable[..., None]:
    """The test's own body, without Hypothesis' driver (it is fed here)."""
    inner = getattr(getattr(fn, "hypothesis", None), "inner_test", None)
    return inner if inner is not None else fn


def _fixtures(names: tuple[str, ...], scratch: Path, cache: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        if name == "pattern_dir":
            shutil.copy(bw.FIXTURES / "metric.c", scratch / "metric.c")
            out[name] = scratch
        elif name == "tmp_path":
            out[name] = scratch
        elif name == "shared_cache":
            out[name] = cache
        elif name == "sample_launcher":
            out[name] = launcher(cache)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--minutes", type=float, default=2.0)
    args = ap.parse_args()
    warnings.simplefilter("ignore", NonInteractiveExampleWarning)
    end = time.monotonic() + args.minutes * 60
    counts = {name: [0, 0] for name, *_ in CASES}
    with tempfile.TemporaryDirectory(prefix="abibench-bench26-") as base:
        cache = Path(base) / "cache"
        cache.mkdir()
        n = 0
        while time.monotonic() < end:
            name, fn, strategies, needs = CASES[n % len(CASES)]
            n += 1
            drawn = st.fixed_dictionaries(strategies).example()
            scratch = Path(base) / f"case{n}"
            scratch.mkdir()
            counts[name][0] += 1
            try:
                _body(fn)(**_fixtures(needs, scratch, cache), **drawn)
            except Exception as exc:  # a violation: counted and shown, the bench goes on
                counts[name][1] += 1
                where = traceback.extract_tb(exc.__traceback__)[-1]
                print(f"VIOLATION {name}: {drawn!r}: {type(exc).__name__}: "
                      f"{str(exc).splitlines()[0] if str(exc) else ''} "
                      f"({Path(where.filename).name}:{where.lineno})", flush=True)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    width = max(len(name) for name in counts)
    print(f"{'invariant':<{width}}  cases  violations")
    for name, (cases, bad) in counts.items():
        print(f"{name:<{width}}  {cases:>5}  {bad:>10}")
    return 1 if any(bad for _, bad in counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
