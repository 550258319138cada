"""A fleet's own profiles: the workloads given as paths travel to every host.

A profile's sources, inputs and build recipe live beside it (its directory is what abibench
copies to build it), so each such directory goes to the hosts whole: packed here into one
archive, unpacked by the playbook into the host's work directory, and the run options name the
profile there. A directory too large to copy to every host is refused before any host is
touched.
"""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..workloads.profile import names_a_profile_file

# Where the unpacked profiles are on a host: the playbook puts its own directory in its place.
PLACEHOLDER = "@ABIBENCH_PROFILES@"
MAX_BYTES = 64 << 20
MAX_FILES = 2000


@dataclass(frozen=True)
class Shipped:
    archive: Path | None  # None: every workload is a built-in one
    run_args: list[str]  # the run options, profiles named where the hosts will have them


def _size(directory: Path, profile: str) -> None:
    files = total = 0
    for path in directory.rglob("*"):
        if path.is_file() and not path.is_symlink():
            files += 1
            total += path.stat().st_size
        if files > MAX_FILES or total > MAX_BYTES:
            raise UsageError(f"profile {profile}: a fleet copies its directory {directory} to "
                             f"every host, and it holds more than {MAX_FILES} files or "
                             f"{MAX_BYTES >> 20} MB: put the profile and its sources in a "
                             "directory of their own")


def ship_profiles(selected: list[str], run_args: list[str], archive: Path) -> Shipped:
    """selected: the workloads as given (ids and paths); run_args: the hosts' run options."""
    directories: dict[Path, str] = {}
    remote: dict[str, str] = {}
    for item in selected:
        if not names_a_profile_file(item):
            continue
        path = Path(item).resolve()
        if path.parent not in directories:
            _size(path.parent, item)
            directories[path.parent] = str(len(directories))
        remote[item] = f"{PLACEHOLDER}/{directories[path.parent]}/{path.name}"
    if not remote:
        return Shipped(None, run_args)
    with tarfile.open(archive, "w:gz") as tar:
        for directory, name in directories.items():
            tar.add(directory, arcname=name,
                    filter=lambda t: None if "__pycache__" in t.name else t)
    return Shipped(archive, [_renamed(a, remote) for a in run_args])


def _renamed(arg: str, remote: dict[str, str]) -> str:
    """A run option with a profile path in it, as the hosts must see it."""
    if arg in remote:
        return remote[arg]
    name, eq, value = arg.partition("=")
    if eq and name == "--workload" and value in remote:
        return f"--workload={remote[value]}"
    return arg
