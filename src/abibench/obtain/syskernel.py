"""A booted system's kernel: Debian's kernel image and an initramfs that mounts the root disk.

Debian builds virtio, the block layer's disk driver and ext4 as modules, so a kernel alone
cannot mount a disk. The initramfs holds abibench's init (native/sysinit.c, static, for the
kernel's own machine: the host's gcc for x86, the cross gcc of the ABI for ARM) and those
modules (and, where the report goes to a virtio serial port, its driver: the booted system has
no other module), with everything they need first (each module's `depends=` in its .modinfo,
followed to the end), taken from the same kernel .deb as the image. It is the same for every
userspace the kernel boots: the disk is what differs. Both are cached under the kernel package's
name and version.
"""

from __future__ import annotations

import gzip
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..abi import ABIS, Abi
from ..errors import HostError
from ..probe.abis import compiler_for
from ..tools import native_tool
from ..workspace import owned_dir
from .apt import AptCache, AptSource, PackageError, parse_show
from .sysroot import download
from .vmimage import (
    S_IFCHR,
    S_IFDIR,
    S_IFREG,
    Entry,
    extract_image,
    kernel_package,
    newc,
    version_key,
)

KERNEL_DIR = "system-kernels"  # under the cache root
# What mounting /dev/vda as ext4 needs; crc32c is asked for by name through the crypto API
# (ext4's and jbd2's checksums), not by a symbol, so no depends= leads to it.
ROOT_MODULES = ("crc32c_generic", "virtio_pci", "virtio_blk", "ext4")
# The guest's report port where it is a virtio serial port (run/qemuargs.py), not a UART.
REPORT_MODULES = {"serial": (), "virtio": ("virtio_console",)}


@dataclass(frozen=True)
class SystemKernel:
    """One of Debian's kernels, ready to boot a root disk."""

    flavour: str  # the ABI table's system_kernel: the metapackage linux-image-<flavour>
    arch: str  # its Debian architecture
    package: str
    version: str
    image: Path  # vmlinuz
    initrd: Path  # gzip newc: sysinit and the modules

    def label(self) -> str:
        return f"{self.package} {self.version}"


# The kernels a userspace boots under, from the ABI table: flavour -> the ABI it is built for
# (its Debian architecture, and the compiler and flags of the init built for it).
KERNELS: dict[str, Abi] = {a.system_kernel: a for a in ABIS.values() if a.system_kernel}


def wanted_modules(abi: Abi) -> tuple[str, ...]:
    """What the initramfs loads: the root disk's modules and the report port's."""
    return (*ROOT_MODULES, *REPORT_MODULES[abi.system_report])


def modinfo_depends(ko: bytes) -> list[str]:
    """The modules a .ko needs loaded first: its .modinfo's `depends=` (comma-separated)."""
    m = re.search(rb"(?:^|\0)depends=([A-Za-z0-9_,-]*)\0", ko)
    if m is None or not m[1]:
        return []
    return [d.replace("-", "_") for d in m[1].decode().split(",") if d]


def load_order(wanted: tuple[str, ...], read: dict[str, bytes]) -> list[str]:
    """Every module `wanted` needs, each after its dependencies (depth first, no repeats).
    `read` maps module names to their bytes; a missing dependency is a PackageError."""
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in path:
            raise PackageError(f"module dependencies loop: {' -> '.join((*path, name))}")
        if name not in read:
            raise PackageError(f"the kernel package holds no module {name} (needed by "
                               f"{path[-1] if path else 'the root disk'})")
        for dep in modinfo_depends(read[name]):
            visit(dep, (*path, name))
        order.append(name)

    for w in wanted:
        visit(w, ())
    return order


def _members(deb: Path) -> dict[str, str]:
    """Module name -> member path, for every .ko in the package."""
    listing = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True,
                             check=False)
    if listing.returncode != 0:
        raise PackageError(f"{deb.name} is not a readable .deb; delete it and try again")
    names = subprocess.run(["tar", "-t"], input=listing.stdout, capture_output=True, check=False)
    out = {}
    for line in names.stdout.decode("utf-8", "replace").splitlines():
        if line.endswith(".ko"):
            out[Path(line).stem.replace("-", "_")] = line
    return out


def _extract(deb: Path, members: list[str], where: Path) -> None:
    with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as feed:
        done = subprocess.run(["tar", "-x", "-C", str(where), *members], stdin=feed.stdout,
                              capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PackageError(f"{deb.name}: cannot extract modules: {done.stderr.strip()[:200]}")


def modules(deb: Path, where: Path, top: tuple[str, ...] = ROOT_MODULES
            ) -> list[tuple[str, bytes]]:
    """The modules `top` and what they need from the kernel .deb, in load order (extracted
    into `where`)."""
    paths = _members(deb)
    read: dict[str, bytes] = {}
    wanted = list(top)
    while wanted:  # a round of extraction per level of dependencies (three or four)
        batch = [w for w in dict.fromkeys(wanted) if w not in read]
        missing = [w for w in batch if w not in paths]
        if missing:
            raise PackageError(f"{deb.name} holds no module {missing[0]}")
        if not batch:
            break
        _extract(deb, [paths[w] for w in batch], where)
        for w in batch:
            read[w] = (where / paths[w]).read_bytes()
        wanted = [d for w in batch for d in modinfo_depends(read[w]) if d not in read]
    return [(name, read[name]) for name in load_order(top, read)]


def initrd_entries(init: bytes, mods: list[tuple[str, bytes]]) -> list[Entry]:
    entries = [Entry(d, S_IFDIR | 0o755) for d in ("dev", "root", "modules")]
    entries.append(Entry("dev/console", S_IFCHR | 0o600, rdev=(5, 1)))
    entries.append(Entry("init", S_IFREG | 0o755, init))
    entries += [Entry(f"modules/{n}.ko", S_IFREG | 0o644, b) for n, b in mods]
    order = "".join(f"{n}\n" for n, _ in mods).encode()
    entries.append(Entry("modules/order", S_IFREG | 0o644, order))
    return entries


def common_version(flavours: list[str], apt: AptSource) -> str | None:
    """The newest version of the kernel metapackage every flavour has (the kernels compared are
    then one source), or None when the archive has none in common (each its newest)."""
    sets = []
    for f in flavours:
        arch = KERNELS[f].debian_arch
        meta = f"linux-image-{f}"
        sets.append({r.version for r in parse_show(apt.show([meta], [arch])) if r.arch == arch})
    common = set.intersection(*sets) if sets else set()
    return max(common, key=version_key) if common else None


def guest_compiler(abi: Abi, machine: str | None = None) -> str | None:
    """The compiler of abibench's guest programs for `abi`: None where the host's own gcc
    targets it (with the ABI's flags: -m32), else its cross gcc (an error naming the packages
    when it is not installed)."""
    if (machine or platform.machine()) in abi.native_on:
        return None
    cc = compiler_for(abi, machine)
    if cc is None:
        raise HostError(f"no {abi.name} compiler ({abi.cc_prefix}gcc) for abibench's guest "
                        f"programs: apt-get install {' '.join(abi.cross_packages)} "
                        "(or bash setup.sh)")
    return cc


def init_for(abi: Abi, cache_root: Path) -> Path:
    """native/sysinit.c, static, for the kernel's own ABI."""
    return native_tool("sysinit", cache_root, static=True, flags=abi.cflags,
                       cc=guest_compiler(abi))


def system_kernel(flavour: str, cache_root: Path, apt: AptSource | None = None,
                  version: str | None = None) -> SystemKernel:
    """Debian's linux-image-<flavour> at the version apt would install (or the metapackage's
    `version`): image and initramfs, cached, or downloaded and made."""
    if flavour not in KERNELS:
        raise HostError(f"no kernel flavour {flavour}: abibench boots {', '.join(KERNELS)}")
    abi = KERNELS[flavour]
    arch = abi.debian_arch
    pin = kernel_package(f"linux-image-{flavour}", arch, apt or AptCache(), version)
    init = init_for(abi, cache_root)
    top = wanted_modules(abi)
    # The module set is part of the name only where it is not the root disk's alone (x86's
    # cached kernels keep theirs).
    extra = "" if top == ROOT_MODULES else "_" + "+".join(top[len(ROOT_MODULES):])
    tag = re.sub(r"[^A-Za-z0-9.+~-]", "_",
                 f"{pin.name}_{pin.version}_{init.parent.name}{extra}")
    final = cache_root / KERNEL_DIR / tag
    image, initrd = final / "vmlinuz", final / "initrd.gz"
    if not (image.is_file() and initrd.is_file()):
        if shutil.which("dpkg-deb") is None or shutil.which("tar") is None:
            raise HostError("dpkg-deb or tar not found: booting a Debian kernel needs a "
                            "Debian host")
        (deb,) = download([pin], cache_root)
        final.parent.mkdir(parents=True, exist_ok=True)
        with owned_dir(".kernel", parent=final.parent) as staging:
            extract_image(deb, staging / "vmlinuz")
            (staging / "mods").mkdir()
            mods = modules(deb, staging / "mods", top)
            shutil.rmtree(staging / "mods")
            (staging / "initrd.gz").write_bytes(gzip.compress(
                newc(initrd_entries(init.read_bytes(), mods)), compresslevel=6, mtime=0))
            try:
                os.rename(staging, final)
            except OSError:
                if not initrd.is_file():  # not another process finishing first
                    raise
    return SystemKernel(flavour, arch, pin.name, pin.version, image, initrd)
