"""Programs someone already built, one per ABI (`--binary ABI=PATH`, a profile's [binaries]).

Nothing is built: the file is identified (ELF class and machine against the ABI it is named
for), sized, digested and inspected like any artifact, and then measured like any other.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from ..abi import Abi, describe
from ..elf import ElfInfo, read_elf, section_sizes
from ..errors import UsageError
from ..hashing import sha256_file
from ..records import Artifact
from .libraries import inspect_artifacts


def identify(abi: Abi, path: Path) -> ElfInfo:
    """The ELF identity of a prebuilt program; a file that is not a runnable program of this ABI
    is refused (exit 2): comparing it would compare the wrong thing. `run` asks this before it
    imports its machinery or probes the host, so a wrong file costs no more than a bad option."""
    if not path.is_file():
        raise UsageError(f"prebuilt program for {abi.name} {path} does not exist: give the path "
                         "of the program file")
    if not os.access(path, os.X_OK):
        raise UsageError(f"prebuilt program for {abi.name} {path} is not executable: chmod +x "
                         "it or name the right file")
    try:
        info = read_elf(path)
    except ValueError:
        raise UsageError(f"prebuilt program for {abi.name} {path} is not an ELF program: name "
                         "the compiled program itself, not a script or wrapper") from None
    if not abi.matches(info):
        raise UsageError(f"prebuilt program for {abi.name} {path} is {describe(info)}, not "
                         f"{abi.name}: name the program built for {abi.name}")
    return info


def obtain(workload: str, abi: Abi, path: Path) -> Artifact:
    """The artifact of a prebuilt program, refused as `identify` says."""
    info = identify(abi, path)
    real = path.resolve()
    name = real.name
    return Artifact(
        workload=workload, abi=abi.name, provenance="prebuilt", bin_dir=str(real.parent),
        files=(name,), cache_key=sha256_file(real)[:16], compiler_version="prebuilt",
        sizes={name: asdict(section_sizes(real))}, elf={name: asdict(info) | {"path": str(real)}},
        digests={name: sha256_file(real)},
        inspection=inspect_artifacts(real.parent, (name,)))
