"""The test run's apt configuration (tests/aptcache.py) is the system's, but for where apt keeps
its package cache: every other setting apt reads, in every part of /etc/apt/apt.conf.d, is the
same, so every apt answer a test gets is the one it would get without the cache."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ..aptcache import write_config

CHANGED = ("Dir::Cache::pkgcache ", "Dir::Cache::srcpkgcache ", "Dir::Etc::parts ")


def _dump(env: dict[str, str]) -> list[str]:
    return subprocess.run(["apt-config", "dump"], capture_output=True, text=True, check=True,
                          env=env).stdout.splitlines()


def test_the_runs_apt_configuration_differs_only_in_its_cache(tmp_path: Path) -> None:
    if shutil.which("apt-config") is None:
        pytest.skip("apt-config not found: a Debian host (apt) is needed")
    system = {k: v for k, v in os.environ.items() if k != "APT_CONFIG"}
    ours = {**system, "APT_CONFIG": str(write_config(tmp_path / "apt"))}
    before, after = _dump(system), _dump(ours)
    assert [ln for ln in before if not ln.startswith(CHANGED)] == \
        [ln for ln in after if not ln.startswith(CHANGED)]
    assert f'Dir::Cache::pkgcache "{tmp_path}/apt/pkgcache.bin";' in after
    assert f'Dir::Cache::srcpkgcache "{tmp_path}/apt/srcpkgcache.bin";' in after
