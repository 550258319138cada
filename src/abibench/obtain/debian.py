"""Workload artifacts of provenance "debian": Debian's own per-arch builds, one version for all.

Resolution (obtain/resolve.py), one batched download and the sysroots (obtain/sysroot.py) happen
here, before the first sample: never beside timed runs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from ..abi import Abi, check_artifact
from ..elf import section_sizes
from ..hashing import sha256_file
from ..records import Artifact
from ..workloads.profile import Workload
from .apt import PackageError
from .ownlibs import own_libraries
from .sysroot import debian_arch, prepare, resolve_inside


def main_program(wl: Workload) -> str:
    """The path inside the sysroot of the program a workload runs (the ELF that is checked)."""
    if wl.server is not None:
        return {"mariadb": "/usr/sbin/mariadbd"}[wl.server.kind]
    first = wl.command[0].replace("{bin}", wl.debian_bin.rstrip("/") or "/")
    if not first.startswith("/"):
        first = f"{wl.debian_bin.rstrip('/')}/{first}"
    return first


def obtain(wl: Workload, abis: Sequence[Abi], cache_root: Path, *,
           allow_skew: bool = False) -> dict[str, Artifact]:
    """{ABI name: Artifact} of Debian's own builds for every ABI, one pinned version for all.

    Downloads happen here, before any sample: never beside timed runs.
    """
    if not wl.debian_packages:
        raise PackageError(f"{wl.id}: --provenance debian needs a [debian] table with packages "
                           f"= [...] in {wl.path}")
    arches = {abi.name: debian_arch(abi) for abi in abis}
    t0 = time.monotonic()
    roots = prepare(wl.debian_packages, list(dict.fromkeys(arches.values())), cache_root,
                    allow_skew=allow_skew)
    seconds = time.monotonic() - t0
    program = main_program(wl)
    out: dict[str, Artifact] = {}
    for abi in abis:
        root = roots[arches[abi.name]]
        exe = resolve_inside(root.path, program)
        if not exe.is_file():
            raise PackageError(f"{wl.id}: {program} is not in the {root.arch} sysroot of "
                               f"{' '.join(wl.debian_packages)}: fix [debian] packages or bin")
        info = check_artifact(exe, abi)
        requested = {p.name: p.version for p in root.pins if p.name in wl.debian_packages}
        name = Path(program).name
        out[abi.name] = Artifact(
            workload=wl.id, abi=abi.name, provenance="debian",
            bin_dir=wl.debian_bin, files=(name,), cache_key=root.key, cached=root.cached,
            compiler="", compiler_version=f"Debian {root.arch} build", cflags=(), abi_flags=(),
            commands=(), effective={}, build_seconds=round(seconds, 3),
            sizes={name: asdict(section_sizes(exe))}, digests={name: sha256_file(exe)},
            elf={name: asdict(info) | {"path": program}}, log="",
            sysroot=str(root.path), debian_packages=requested,
            debian_closure={p.name: p.version for p in root.pins},
            version_skew=root.skew,
            # its size counts its own source package's libraries (libnode for node)
            libraries=own_libraries(root, exe, cache_root, wl.debian_packages))
    return out
