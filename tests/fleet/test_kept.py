"""The fleet hosts' kept work directories (tests/owned.py): keyed by what makes their virtual
environments, never swept while a test run holds one, and reclaimed by age and count.

Family: a cache keyed by something other than what determines its content (rebuilt when nothing
changed, never reclaimed when its owner is gone). The generated cases make kept directories with
generated keys, ages, stamps and holders, and check that the sweep removes exactly the ones the
rule names and never a held one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from .. import owned

DAY = 86400.0


def _age(where: Path, seconds_ago: float, now: float, stamped: bool) -> None:
    """Date a kept directory: its stamp (or, for one made before stamps, its host directory)
    and itself, `seconds_ago` before `now`."""
    t = now - seconds_ago
    if stamped:
        os.utime(where / owned.USED, (t, t))
    else:
        (where / owned.USED).unlink(missing_ok=True)
    os.utime(where / "hostA", (t, t))
    os.utime(where, (t, t))


KEPT = st.lists(st.tuples(st.integers(0, 24 * 10),  # hours since last use: 0 to 10 days
                          st.booleans(),              # held by a live test run
                          st.booleans()),             # has a `.used` stamp
                max_size=8, unique_by=lambda t: t[0])


@settings(max_examples=25, deadline=None)
@given(kept=KEPT, current_at=st.integers(-1, 7))
def test_the_sweep_removes_exactly_the_old_and_surplus_and_never_a_held_one(
        kept: list[tuple[int, bool, bool]], current_at: int) -> None:
    parent = Path(tempfile.mkdtemp(prefix="abibench-kept-")) / "test-fleet"
    now = time.time()
    keys = [f"{i:016x}" for i in range(len(kept))]
    current = keys[current_at] if 0 <= current_at < len(keys) else None
    try:
        with contextlib.ExitStack() as holders:
            for key, (hours, held, stamped) in zip(keys, kept, strict=True):
                if held:  # the real holder: what a test session's fleet_workdir enters
                    where = holders.enter_context(owned.kept_dir(key, parent))
                else:
                    where = parent / key
                    where.mkdir(parents=True)
                    (where / owned.USED).touch()
                (where / "hostA" / "venv").mkdir(parents=True)
                _age(where, hours * 3600.0, now, stamped)
            gone = owned.sweep_kept(parent, now=now, current=current)
            # The rule, said independently: keep the KEEP_COUNT most recently used, and none
            # unused for over KEEP_DAYS; but never this run's own key nor a held one.
            hours_of = {k: h for k, (h, _, _) in zip(keys, kept, strict=True)}
            expected = {k for k, (h, held, _) in zip(keys, kept, strict=True)
                        if k != current and not held and (
                            sum(other < h for other in hours_of.values()) >= owned.KEEP_COUNT
                            or h * 3600.0 > owned.KEEP_DAYS * DAY)}
            assert {p.name for p in gone} == expected
            left = {p.name for p in parent.iterdir()} if parent.exists() else set()
            assert left == set(keys) - expected
            assert all((parent / k).is_dir() for k, (_, held, _) in zip(keys, kept, strict=True)
                       if held)
    finally:
        shutil.rmtree(parent.parent, ignore_errors=True)


FILES = ("pyproject.toml", "setup.sh", "README.md", "src/abibench/__init__.py")


@settings(max_examples=10, deadline=None)
@given(changed=st.sets(st.sampled_from(FILES)), python_touched=st.booleans())
def test_the_key_changes_with_what_makes_the_environment_and_nothing_else(
        changed: set[str], python_touched: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="abibench-key-") as tmp:
        repo, python = Path(tmp) / "repo", Path(tmp) / "python3.11"
        for name in FILES:
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(f"{name} v1\n")
        python.write_bytes(b"an interpreter")
        os.utime(python, (1e9, 1e9))
        before = owned.fleet_key(repo, python)
        for name in changed:
            (repo / name).write_text(f"{name} v2\n")
        if python_touched:  # a Debian upgrade: another build of the same path
            os.utime(python, (2e9, 2e9))
        after = owned.fleet_key(repo, python)
        makes = bool(changed & {"pyproject.toml", "setup.sh"}) or python_touched
        assert (before != after) == makes
        # The checkout's place is no part of it: a second clone finds the first one's.
        clone = Path(tmp) / "clone"
        shutil.copytree(repo, clone)
        assert owned.fleet_key(clone, python) == after
