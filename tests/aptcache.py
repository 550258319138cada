"""apt's binary package cache, kept for the length of a test run where the system keeps none.

Debian's container images configure apt without its cache files (Dir::Cache::pkgcache "", the
docker-clean snippet), so every `apt-cache show`, `showpkg`, `policy` or `depends` re-reads the
package lists of four architectures: 2.2-3.3 CPU s a call on this VM, against 0.03 with the
cache. Debian workloads, sysroots, `setup.sh missing` and the fleet's hosts call it again and
again. For the test run only, apt gets a configuration identical to the system's (every part of
/etc/apt/apt.conf.d, in order) plus one last part naming cache files in a temporary directory:
the same lists, the same answers (apt checks its cache against the lists and rebuilds it when
they differ; it writes it to a temporary file and renames it, so parallel workers are safe).
Nothing changes where the system keeps its cache, or where the caller gave APT_CONFIG.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .owned import owned_tempdir

APT_PARTS = Path("/etc/apt/apt.conf.d")
LAST_PART = "zzzz-abibench-test-cache"


def cache_disabled() -> bool:
    """True where apt keeps no binary package cache (its path configured empty)."""
    if shutil.which("apt-config") is None or "APT_CONFIG" in os.environ:
        return False
    out = subprocess.run(["apt-config", "shell", "P", "Dir::Cache::pkgcache"],
                         capture_output=True, text=True, check=False).stdout.strip()
    return out in ("", "P=''")


def write_config(where: Path) -> Path:
    """The system's apt configuration with its package cache in `where`; returns the file to
    give as APT_CONFIG."""
    parts = where / "apt.conf.d"
    parts.mkdir(parents=True)
    if APT_PARTS.is_dir():
        for part in sorted(APT_PARTS.iterdir()):
            (parts / part.name).symlink_to(part)
    (parts / LAST_PART).write_text(f'Dir::Cache::pkgcache "{where}/pkgcache.bin";\n'
                                   f'Dir::Cache::srcpkgcache "{where}/srcpkgcache.bin";\n')
    # Read before the parts (apt.conf(5)), so the parts are taken from the copy; the main file,
    # read after them, is still the system's.
    conf = where / "apt.conf"
    conf.write_text(f'Dir::Etc::parts "{parts}";\n')
    return conf


def start() -> Path | None:
    """Where apt keeps no cache: a directory with one for this test run, APT_CONFIG set to it
    (inherited by the workers and every command they start); None elsewhere."""
    if not cache_disabled():
        return None
    where = owned_tempdir("abibench-test-apt-")  # swept if this run is killed
    where.chmod(0o755)  # apt run as another user (its sandbox, _apt) reads it like the system's
    os.environ["APT_CONFIG"] = str(write_config(where))
    return where


_WHERE = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    # Made once, by the process that starts the workers, which inherit APT_CONFIG.
    if not hasattr(config, "workerinput"):
        where = start()
        if where is not None:
            config.stash[_WHERE] = where


def pytest_unconfigure(config: pytest.Config) -> None:
    where = config.stash.get(_WHERE, None)
    if where is not None:
        os.environ.pop("APT_CONFIG", None)
        shutil.rmtree(where, ignore_errors=True)
