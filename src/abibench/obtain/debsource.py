"""Debian source packages: one pinned version, fetched with apt-get source, unpacked and patched.

The tree is cached by (package, version): every ABI builds from the very same sources, and the
version is recorded with each artifact so a result says exactly what was measured.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from debian.debian_support import Version

from ..errors import AbibenchError, HostError
from ..locks import exclusive
from ..workspace import owned_dir
from . import buildbox

EXIT_SOURCE = 2


class SourceVersionError(AbibenchError):
    """The package or the version asked for is not available from the configured sources."""

    exit_code = EXIT_SOURCE


@dataclass(frozen=True)
class SourceTree:
    package: str
    version: str
    path: Path


def parse_showsrc(text: str, package: str) -> list[str]:
    """Versions of `package` in `apt-cache showsrc` output (which also lists binary-name matches)."""
    versions: list[str] = []
    for stanza in re.split(r"\n\s*\n", text):
        pkg = re.search(r"^Package:\s*(\S+)", stanza, re.M)
        ver = re.search(r"^Version:\s*(\S+)", stanza, re.M)
        if pkg and ver and pkg.group(1) == package and ver.group(1) not in versions:
            versions.append(ver.group(1))
    return sorted(versions, key=Version, reverse=True)


@cache
def available_versions(package: str) -> tuple[str, ...]:
    if shutil.which("apt-cache") is None:
        raise HostError("apt-cache not found: building from Debian sources needs a Debian system")
    proc = subprocess.run(["apt-cache", "showsrc", package], capture_output=True, text=True,
                          check=False)
    return tuple(parse_showsrc(proc.stdout, package))


def pick_version(package: str, wanted: str | None) -> str:
    versions = available_versions(package)
    if not versions:
        raise SourceVersionError(
            f"source package '{package}' is not known to apt: check the name, and that deb-src "
            "entries exist (bash setup.sh adds them) and `apt-get update` ran")
    if wanted is None:
        return versions[0]
    if wanted not in versions:
        raise SourceVersionError(
            f"source package '{package}' version {wanted} is not available (available: "
            f"{', '.join(versions)}): set [source] version to one of them")
    return wanted


def fetch(package: str, wanted: str | None, cache_root: Path) -> SourceTree:
    """The unpacked, Debian-patched tree of package at the pinned version, from cache if there."""
    version = pick_version(package, wanted)
    final = cache_root / "debsrc" / f"{package}_{version}"
    tree = final / "tree"
    if (final / "complete").is_file():
        return SourceTree(package, version, tree)
    # One fetch per version at a time (locks.py): a concurrent process waits, then finds it.
    with exclusive(final):
        if not (final / "complete").is_file():
            _fetch_into(package, version, final)
    return SourceTree(package, version, tree)


def _fetch_into(package: str, version: str, final: Path) -> None:
    """apt-get source and dpkg-source -x into a staging directory, renamed to final."""
    final.parent.mkdir(parents=True, exist_ok=True)
    # Owned by this process and removed on every exit; a killed run's is removed, and what
    # still runs in it killed, by the next start (workspace.clean_stale).
    with owned_dir(f".{package}", parent=final.parent, mode=0o755) as staging:
        log = staging / "fetch.log"
        with log.open("w") as fh:
            rc = buildbox.run_unconfined(["apt-get", "source", "--download-only", "-q",
                                          f"{package}={version}"], staging, fh, staging)
        dscs = list(staging.glob("*.dsc"))
        if rc != 0 or len(dscs) != 1:
            tail = log.read_text().strip().splitlines()[-1:] or ["no output"]
            raise SourceVersionError(f"apt-get source {package}={version} failed: {tail[0]}")
        with log.open("a") as fh:
            rc = buildbox.run_unconfined(["dpkg-source", "-x", dscs[0].name, "tree"], staging,
                                         fh, staging)
        if rc != 0:
            raise HostError(f"dpkg-source -x {dscs[0].name} failed; log: {log} "
                            "(apt-get install dpkg-dev)")
        (staging / "complete").write_text(f"{package} {version}\n")
        # Failing: another process unpacked the same version first.
        with contextlib.suppress(OSError):
            staging.rename(final)
