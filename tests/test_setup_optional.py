"""setup.sh's optional packages: one that cannot be installed is tried once per state of apt's
package lists, not on every call (each try is an apt-get install holding dpkg's lock).

Real runs of this checkout's setup.sh, as root, with a package no archive has
(ABIBENCH_SETUP_OPTIONAL) and an apt configuration of the test's own whose package lists are a
directory of the test's (APT_CONFIG): apt-get install really fails, and the test "updates" the
lists as apt-get update would, by writing a file there. Nothing on the system changes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PKG = "abibench-no-such-package"


def _setup(env: dict[str, str]) -> str:
    done = subprocess.run(["bash", str(REPO / "setup.sh")], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr


@pytest.mark.needs_setup(root=True)
def test_a_failed_optional_package_is_tried_again_only_when_apt_lists_change(
        tmp_path: Path) -> None:
    lists = tmp_path / "lists"
    (lists / "partial").mkdir(parents=True)
    (tmp_path / "cache" / "archives" / "partial").mkdir(parents=True)
    conf = tmp_path / "apt.conf"
    # The lock: another test's apt-get may hold dpkg's; apt waits for it rather than fail.
    conf.write_text(f'Dir::State::lists "{lists}/";\nDir::Cache "{tmp_path}/cache/";\n'
                    'DPkg::Lock::Timeout "300";\n')
    env = {k: v for k, v in os.environ.items() if k != "ABIBENCH_SETUP_SKIP"}
    env.update(APT_CONFIG=str(conf), ABIBENCH_SETUP_OPTIONAL=PKG,
               ABIBENCH_CACHE=str(tmp_path / "abibench-cache"))
    stamp = tmp_path / "abibench-cache" / "setup-optional" / f"{PKG}.failed"

    first = _setup(env)
    assert f"installing (optional): {PKG}" in first and f"could not install {PKG}" in first
    assert stamp.is_file()

    second = _setup(env)
    assert f"installing (optional): {PKG}" not in second
    skipped = [line for line in second.splitlines() if f"not trying {PKG} again" in line]
    assert len(skipped) == 1 and "lists are unchanged" in skipped[0], second

    (lists / "deb.example_dists_x_InRelease").write_text("new\n")  # what an update brings
    third = _setup(env)
    assert f"installing (optional): {PKG}" in third and "not trying" not in third
