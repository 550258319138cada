"""A test that runs abibench as another user goes through tests/processes.py's one helper.

The family: a test that depends on where the checkout lives. Run as another user, Python imports
abibench from the checkout, which another user cannot read when the clone is kept where only
root can (a 0700 home or temporary directory): the gate of bench/setup_times.py's clone failed
so. `processes.python_as_other_user` gives the other user a copy in an open directory; this
holds every test module to it, and the helper itself to working from such a clone's package.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

from tests.processes import python_as_other_user

TESTS = Path(__file__).resolve().parents[1]
# What changes the user a command runs as (in code, not comments).
_OTHER_USER = re.compile(r"\bsetpriv\b|--reuid|\brunuser\b|\bsu\s+-|\bos\.set(e?u|res)uid\b")
# Modules that run another user's program that is not abibench, and why that is safe.
_NOT_ABIBENCH = {
    "servers.py": "PostgreSQL's own binaries as the postgres account, data in a temporary dir",
}


def _code(path: Path) -> str:
    return "\n".join(line.split("#", 1)[0] for line in path.read_text().splitlines())


def test_only_the_helper_runs_as_another_user() -> None:
    helper = TESTS / "processes.py"
    here = Path(__file__).resolve()
    offenders = [str(p.relative_to(TESTS)) for p in sorted(TESTS.rglob("*.py"))
                 if p not in (helper, here) and str(p.relative_to(TESTS)) not in _NOT_ABIBENCH
                 and _OTHER_USER.search(_code(p))]
    assert offenders == [], (
        f"{offenders}: run another user's Python through tests/processes.python_as_other_user "
        "(a copy of the package in an open directory), not the checkout")


def test_the_helper_imports_abibench_as_another_user_whatever_the_checkout() -> None:
    code = "import abibench.workspace, sys; print(abibench.__file__.startswith(sys.argv[1]))"
    with tempfile.TemporaryDirectory() as where:
        r = python_as_other_user(code, Path(where), where)
    if r is None:
        pytest.skip("running as another user needs root and util-linux")
    assert (r.returncode, r.stdout.strip()) == (0, "True"), r.stderr[-2000:]
    assert os.geteuid() == 0
