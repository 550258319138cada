"""A test skips only where setup.sh really did not run (tests/conftest.py, needs_setup).

Once the fleet's tests skipped on every machine whose Node.js came from a vendor package that
*provides* npm: setup.sh counted the provided name as present, the tests' own copy of its list
did not. Now there is one answer, `bash setup.sh missing`; the names given to it here are
generated from what this machine has installed, under every form a package is present in
(its name, name:arch, a name another package provides), mixed with names nothing provides: only
those may ever be named missing, and a skip follows from nothing else."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# The `setup_answer` fixture: (setup_missing, setup_skip_reason) of tests/conftest.py.
Answer = tuple[Callable[..., tuple[str, ...]], Callable[..., "str | None"]]
ABSENT = st.from_regex(r"abibench-absent-[a-z0-9]{1,6}", fullmatch=True)


def _present() -> dict[str, list[str]]:
    """This machine's installed packages under each form of name (empty without dpkg)."""
    if shutil.which("dpkg-query") is None:
        return {}
    listing = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}\t${Package}\t"
                              "${Architecture}\t${Provides}\n"], capture_output=True,
                             text=True, check=False).stdout
    forms: dict[str, set[str]] = {"name": set(), "name:arch": set(), "provided": set()}
    for line in listing.splitlines():
        status, name, arch, provides = [*line.split("\t"), "", "", ""][:4]
        if status != "installed":
            continue
        forms["name"].add(name)
        forms["name:arch"].add(f"{name}:{arch}")
        forms["provided"].update(p.split("(")[0].strip() for p in provides.split(","))
    forms["provided"] -= forms["name"] | {""}  # names present only because another provides them
    return {k: sorted(v) for k, v in forms.items() if v}


PRESENT = _present()
PRESENT_NAME = st.sampled_from(sorted(PRESENT)).flatmap(
    lambda form: st.sampled_from(PRESENT[form])) if PRESENT else st.nothing()


@pytest.mark.skipif(not PRESENT, reason="no dpkg-query here: nothing is present to setup.sh")
@settings(max_examples=4, deadline=None)
@given(present=st.lists(PRESENT_NAME, max_size=6), absent=st.lists(ABSENT, max_size=3))
def test_only_what_nothing_provides_is_missing_and_only_that_skips(
        setup_answer: Answer, present: list[str], absent: list[str]) -> None:
    setup_missing, setup_skip_reason = setup_answer
    names = tuple(dict.fromkeys([*present, *absent]).keys())
    missing = setup_missing(names)
    assert sorted(missing) == sorted(set(absent)), (names, missing)
    reason = setup_skip_reason(names)
    if absent:
        assert reason is not None and all(a in reason for a in absent), reason
        assert not any(p in reason.split() for p in present), reason
    else:
        assert reason is None


def _fleet_tests() -> Iterator[tuple[str, object]]:
    from tests.fleet import test_fleet

    for name, fn in vars(test_fleet).items():
        if name.startswith("test_") and callable(fn) and {"fleet_env", "ssh_fleet"} & set(
                inspect.signature(fn).parameters):
            yield name, fn


def test_the_fleet_tests_run_wherever_setup_sh_has_run(setup_answer: Answer) -> None:
    """The tests of the real fleet are collected, each carries the one rule (so a skip where
    setup.sh has run fails it: tests/conftest.py), and where `bash setup.sh missing` prints
    nothing and the tests run as root, that rule lets them run."""
    setup_missing, setup_skip_reason = setup_answer
    found = dict(_fleet_tests())
    assert len(found) >= 3, sorted(found)
    for name, fn in found.items():
        marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "needs_setup"]
        assert marks and marks[0].kwargs.get("root") is True and not marks[0].args, name
    if not setup_missing() and os.geteuid() == 0:
        assert setup_skip_reason(root=True) is None
