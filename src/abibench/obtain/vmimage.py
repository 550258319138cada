"""What a booted guest is made of (abibench vm): Debian's own kernel and an initramfs of ours.

The kernel is the image of Debian's kernel metapackage of the emulated machine (the ABI table's
`vm_kernel`), downloaded with the sysroots' own `download` into the same .deb pool; only its
/boot/vmlinuz-* is taken out of the .deb (its modules are hundreds of MB the guest never loads:
serial ports, devtmpfs and every ABI's system calls are built in). The initramfs (cpio "newc",
gzip) holds abibench's static init (native/vminit.c), the programs to run, and their job list.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..abi import Abi
from ..errors import HostError
from ..locks import made_once
from ..tools import native_tool
from ..workspace import owned_dir
from .apt import AptCache, AptSource, PackageError, parse_show
from .resolve import Pinned
from .sysroot import download

KERNEL_DIR = "vm-kernels"  # under the cache root: one directory per kernel package version


@dataclass(frozen=True)
class Kernel:
    path: Path  # the bzImage
    package: str  # linux-image-<release>-<flavour>
    version: str

    def label(self) -> str:
        return f"{self.package} {self.version}"


def kernel_package(meta: str, arch: str, apt: AptSource, version: str | None = None) -> Pinned:
    """The versioned kernel image package the metapackage `meta` depends on, at the version
    apt would install (the highest it knows), or at the metapackage's `version`."""
    records = [r for r in parse_show(apt.show([meta], [arch])) if r.arch == arch
               and (version is None or r.version == version)]
    if not records:
        raise PackageError(f"apt knows no {meta} {version or ''} for {arch}: run apt-get update")
    # linux-image-amd64 and linux-image-686-pae both lead to linux-image-<abi number>-...
    wanted = re.compile(r"^linux-image-\d" if meta.startswith("linux-image-")
                        else rf"^{re.escape(meta.rsplit('-', 1)[0])}-\d")
    newest = max(records, key=lambda r: version_key(r.version))
    image = next((alt.name for group in newest.depends for alt in group
                  if wanted.match(alt.name)), None)
    if image is None:
        raise PackageError(f"{meta} {newest.version} depends on no kernel image package")
    versions = [r for r in parse_show(apt.show([image], [arch])) if r.arch == arch]
    if not versions:
        raise PackageError(f"apt knows no {image} for {arch}: run apt-get update")
    best = max(versions, key=lambda r: version_key(r.version))
    return Pinned(image, best.version, arch)


def version_key(version: str) -> tuple[object, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", version))


def kernel(kernel_abi: Abi, cache_root: Path, apt: AptSource | None = None) -> Kernel:
    """Debian's kernel of the emulated machine: cached, or downloaded and its image extracted."""
    pin = kernel_package(kernel_abi.vm_kernel, kernel_abi.debian_arch, apt or AptCache())
    final = cache_root / KERNEL_DIR / re.sub(r"[^A-Za-z0-9.+~-]", "_",
                                             f"{pin.name}_{pin.version}")
    image = final / "vmlinuz"
    # One extraction at a time (locks.py): a concurrent process waits, then finds it.
    made_once(final, lambda: image if image.is_file() else None,
              lambda: _extract_kernel(pin, final, image, cache_root))
    return Kernel(image, pin.name, pin.version)


def _extract_kernel(pin: Pinned, final: Path, image: Path, cache_root: Path) -> Path:
    (deb,) = download([pin], cache_root)
    final.parent.mkdir(parents=True, exist_ok=True)
    with owned_dir(".kernel", parent=final.parent) as staging:
        extract_image(deb, staging / "vmlinuz")
        try:
            os.rename(staging, final)
        except OSError:
            if not image.is_file():  # not another process finishing first: a real failure
                raise
    return image


def extract_image(deb: Path, dest: Path) -> None:
    """/boot/vmlinuz-* of a kernel .deb, read from its data archive without unpacking the rest."""
    dpkg_deb, tar = shutil.which("dpkg-deb"), shutil.which("tar")
    if dpkg_deb is None or tar is None:
        raise HostError("dpkg-deb or tar not found: booting a Debian kernel needs a Debian host")
    where = dest.parent / "unpacked"
    where.mkdir()
    with subprocess.Popen([dpkg_deb, "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as feed:
        done = subprocess.run([tar, "-x", "-C", str(where), "--wildcards", "./boot/vmlinuz-*"],
                              stdin=feed.stdout, capture_output=True, text=True, check=False)
    found = sorted((where / "boot").glob("vmlinuz-*")) if (where / "boot").is_dir() else []
    if done.returncode != 0 or not found:
        raise PackageError(f"{deb.name} holds no /boot/vmlinuz-*: {done.stderr.strip()[:200]}; "
                           f"delete {deb} and try again")
    os.replace(found[0], dest)
    shutil.rmtree(where)


def init_program(cache_root: Path) -> Path:
    """abibench's static init for the guest (native/vminit.c), compiled once."""
    return native_tool("vminit", cache_root, static=True)


# ------------------------------------------------------------------------------------- initramfs

_NEWC_MAGIC = b"070701"
S_IFDIR, S_IFREG, S_IFCHR = 0o040000, 0o100000, 0o020000


@dataclass(frozen=True)
class Entry:
    """One member of the initramfs: a directory, a file (its bytes) or a character device."""

    name: str  # relative, no leading slash
    mode: int
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)


def _pad4(n: int) -> bytes:
    return b"\0" * (-n % 4)


def newc(entries: Iterable[Entry]) -> bytes:
    """The cpio "newc" archive of these entries (the format the kernel unpacks into rootfs)."""
    out = bytearray()
    ino = 1
    for e in (*entries, Entry("TRAILER!!!", 0)):
        name = e.name.encode() + b"\0"
        fields = (ino, e.mode, 0, 0, 1, 0, len(e.data), 0, 0, e.rdev[0], e.rdev[1], len(name), 0)
        header = _NEWC_MAGIC + b"".join(b"%08x" % f for f in fields)
        out += header + name + _pad4(len(header) + len(name)) + e.data + _pad4(len(e.data))
        ino += 1
    return bytes(out)


def parse_newc(blob: bytes) -> list[Entry]:
    """The entries of a newc archive (the inverse of `newc`, for the tests and for checking)."""
    entries: list[Entry] = []
    pos = 0
    while True:
        if blob[pos:pos + 6] != _NEWC_MAGIC:
            raise ValueError(f"no newc header at offset {pos}")
        fields = [int(blob[pos + 6 + 8 * i: pos + 14 + 8 * i], 16) for i in range(13)]
        namesize, filesize = fields[11], fields[6]
        name_at = pos + 110
        name = blob[name_at:name_at + namesize - 1].decode()
        data_at = name_at + namesize + (-(110 + namesize) % 4)
        data = blob[data_at:data_at + filesize]
        pos = data_at + filesize + (-filesize % 4)
        if name == "TRAILER!!!":
            return entries
        entries.append(Entry(name, fields[1], data, (fields[9], fields[10])))


def image_entries(init: Path, programs: dict[str, Path], jobs: str) -> list[Entry]:
    """The guest's files: /init, /dev/console (the kernel opens it for init before /dev is
    mounted), mount points, the programs under their guest names, and /abibench/jobs."""
    dirs = {"dev", "proc", "sys", "bin", "abibench"}
    for name in programs:
        parts = name.split("/")[:-1]
        dirs |= {"/".join(parts[:i]) for i in range(1, len(parts) + 1)}
    entries = [Entry(d, S_IFDIR | 0o755) for d in sorted(dirs)]
    entries.append(Entry("dev/console", S_IFCHR | 0o600, rdev=(5, 1)))
    entries.append(Entry("init", S_IFREG | 0o755, init.read_bytes()))
    entries += [Entry(name, S_IFREG | 0o755, path.read_bytes())
                for name, path in sorted(programs.items())]
    entries.append(Entry("abibench/jobs", S_IFREG | 0o644, jobs.encode()))
    return entries


def initramfs(init: Path, programs: dict[str, Path], jobs: str) -> bytes:
    """The gzip-compressed initramfs of `image_entries`."""
    return gzip.compress(newc(image_entries(init, programs, jobs)), compresslevel=1, mtime=0)


# ------------------------------------------------------------------------------------------ jobs


@dataclass(frozen=True)
class Job:
    label: str  # [A-Za-z0-9_.-]: how the report names it
    argv: tuple[str, ...]  # argv[0] a path in the guest
    timeout: float


_LABEL = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def jobs_text(jobs: Sequence[Job]) -> str:
    """The job list native/vminit.c reads: arguments as hex, so any byte but NUL passes."""
    lines: list[str] = []
    for j in jobs:
        if not _LABEL.fullmatch(j.label):
            raise ValueError(f"job label {j.label!r} is not [A-Za-z0-9_.-]{{1,100}}")
        if not j.argv or any("\0" in a or len(a.encode()) >= 4096 for a in j.argv):
            raise ValueError(f"job {j.label}: an argument is empty, has a NUL or is too long")
        lines += [f"J {j.label}", f"T {j.timeout:g}",
                  *(f"A {a.encode().hex()}" for a in j.argv), "E"]
    return "".join(f"{ln}\n" for ln in lines)
