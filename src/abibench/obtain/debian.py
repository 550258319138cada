"""Workload artifacts of provenance "debian": Debian's own per-arch builds, one version for all.

Resolution (obtain/resolve.py), one batched download and the sysroots (obtain/sysroot.py) happen
here, before the first sample: never beside timed runs.

A program's stripped size is kept by its content (debian/stripped/SHA256.json) with the strip
that measured it: stripping chromium's 283 MiB ELF costs a CPU second per arch, on every run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from .. import kept
from ..abi import Abi, check_artifact
from ..elf import section_sizes, strip_tools, stripped_size
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


def _strips(machine: str) -> str:
    """Which strips stripped_size would try, as installed now (a new binutils: measured again)."""
    found = []
    for name in strip_tools(machine):
        exe = shutil.which(name)
        if exe is not None:
            st = os.stat(exe)
            found.append(f"{os.path.realpath(exe)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(found).encode()).hexdigest()


def _a_size(value: object) -> bool:
    return type(value) is int and value >= 0


def kept_stripped_size(cache_root: Path, digest: str) -> Callable[[Path, str], int | None]:
    """stripped_size of the file whose SHA-256 is `digest`, measured once per content and strip
    (kept.py); a size no strip here could measure (None) is not kept."""
    def size(path: Path, machine: str) -> int | None:
        entry = cache_root / "debian" / "stripped" / f"{digest}.json"
        return kept.answer(entry, {"sha256": digest, "strips": _strips(machine)}, _a_size,
                           lambda: stripped_size(path, machine),
                           keep=lambda found: found is not None)
    return size


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
        digest = sha256_file(exe)
        out[abi.name] = Artifact(
            workload=wl.id, abi=abi.name, provenance="debian",
            bin_dir=wl.debian_bin, files=(name,), cache_key=root.key, cached=root.cached,
            compiler="", compiler_version=f"Debian {root.arch} build", cflags=(), abi_flags=(),
            commands=(), effective={}, build_seconds=round(seconds, 3),
            sizes={name: asdict(section_sizes(exe, kept_stripped_size(cache_root, digest)))},
            digests={name: digest},
            elf={name: asdict(info) | {"path": program}}, log="",
            sysroot=str(root.path), debian_packages=requested,
            debian_closure={p.name: p.version for p in root.pins},
            version_skew=root.skew,
            # its size counts its own source package's libraries (libnode for node)
            libraries=own_libraries(root, exe, cache_root, wl.debian_packages))
    return out
