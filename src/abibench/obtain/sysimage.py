"""Whole-system disk images from Debian's archive (abibench system run).

One image per (package set, Debian architecture, release): mmdebstrap --variant=minbase with
the profile's packages, from the Debian archive this host's apt already uses (read from its
sources, never written here), then abibench's measuring service (native/sysreport.c, static,
built for the image's own ABI) and its systemd unit added, and the tree made into an ext4 disk
image by `mke2fs -d` (no loop mount). mmdebstrap runs in a mount namespace of its own, so the
/proc, /sys and /dev it mounts in the tree vanish with it on every path, a kill included. The
image is cached under a key of everything it is made of; a boot never writes it (qemu's
snapshot overlay, in the boot's own directory, takes the writes).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..abi import Abi
from ..errors import HostError
from ..tools import native_tool
from ..workloads.system import SystemProfile
from ..workspace import owned_dir
from . import sysunits
from .apt import PackageError
from .syskernel import guest_compiler

IMAGE_DIR = "system-images"  # under the cache root
# mmdebstrap's trees (tarballs), cached apart from the disks: what is added to a tree (the
# measuring service, a profile's load and units) changes often, the packages rarely, and an ARM
# tree takes 20 minutes and more through qemu-user.
ROOT_DIR = "system-roots"
IMAGE_VERSION = 1  # bump when the way an image is made changes
BUILD_TIMEOUT_S = 3600.0
REPORT_UNIT = """[Unit]
Description=abibench: measure the settled system, report on ttyS1, power off
After=multi-user.target

[Service]
Type=simple
ExecStart=/usr/local/sbin/abibench-sysreport
StandardOutput=null

[Install]
WantedBy=multi-user.target
"""


@dataclass(frozen=True)
class FirstBoot:
    """A data directory a package's maintainer script makes at install time, made instead on
    the guest's first boot by the package's own command, run by the guest's own kernel.

    At image build the script runs under the build host's kernel, or for a foreign
    architecture under qemu-user, where a server may not run at all: MariaDB's
    mysql_install_db starts mariadbd, which under qemu-aarch64-static 7.2 dies on its 8 TiB
    address-space reservation, then on "Illegal instruction" (docs/systems.md). So the
    directory the image holds is emptied (but for the files named in `keep`) and a oneshot unit
    ordered before the service that needs it makes it, only when `made` is absent: one rule
    for every architecture, and every boot of a snapshot disk makes it the same way."""

    name: str  # the unit abibench-firstboot-NAME.service
    installed: str  # a file of the package: the rule applies only to images that have it
    datadir: str
    keep: tuple[str, ...]  # glob patterns of files the script made that stay (Debian's flags)
    before: str  # the unit that needs the directory
    command: str  # the script's own command
    made: str  # a path that exists once the directory is made

    @property
    def unit(self) -> str:
        return f"abibench-firstboot-{self.name}.service"

    def unit_text(self) -> str:
        return "\n".join([
            "[Unit]", f"Description=abibench: make /{self.datadir} on the first boot",
            f"Before={self.before}", f"ConditionPathExists=!{self.made}", "",
            # TMPDIR empty as in Debian's postinst (its bug #1022994); a TCG boot is slow.
            "[Service]", "Type=oneshot", "RemainAfterExit=yes", "Environment=TMPDIR=",
            f"ExecStart={self.command}", "TimeoutStartSec=1800", "StandardOutput=journal", "",
            "[Install]", f"RequiredBy={self.before}", ""])


# mariadb-server's postinst (bookworm, 10.11): the command is the one it runs.
FIRST_BOOT = (FirstBoot(
    "mariadb-datadir", "usr/sbin/mariadbd", "var/lib/mysql", ("debian-*.flag",),
    "mariadb.service",
    "/bin/bash /usr/bin/mysql_install_db --rpm --cross-bootstrap --user=mysql "
    "--disable-log-bin --skip-test-db", "/var/lib/mysql/mysql"),)


def defer_to_first_boot(root: Path, rules: Iterable[FirstBoot] = FIRST_BOOT) -> list[str]:
    """Every rule whose package the tree at `root` has: its data directory emptied but for
    `keep`, its unit installed and required by the service it precedes. The units added."""
    added = []
    for rule in rules:
        if not (root / rule.installed).exists():
            continue
        datadir = root / rule.datadir
        datadir.mkdir(parents=True, exist_ok=True)
        for entry in datadir.iterdir():
            if any(entry.match(k) for k in rule.keep) and not entry.is_dir():
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        units = root / "etc/systemd/system"
        requires = units / f"{rule.before}.requires"
        requires.mkdir(parents=True, exist_ok=True)
        (units / rule.unit).write_text(rule.unit_text())
        if not (requires / rule.unit).is_symlink():
            os.symlink(f"/etc/systemd/system/{rule.unit}", requires / rule.unit)
        added.append(rule.unit)
    return added


@dataclass(frozen=True)
class SystemImage:
    path: Path  # the raw ext4 disk
    profile: str
    arch: str  # Debian architecture of the userspace
    release: str
    key: str


def _deb822_uris(text: str, release: str) -> list[str]:
    found: list[str] = []
    for stanza in re.split(r"\n\s*\n", text):
        fields = {m[1].lower(): m[2].strip()
                  for m in re.finditer(r"^([A-Za-z-]+):[ \t]*(.*)$", stanza, re.M)}
        if "deb" in fields.get("types", "").split() and \
                release in fields.get("suites", "").split() and \
                fields.get("enabled", "yes").lower() != "no":
            found += fields.get("uris", "").split()
    return found


def _list_uris(text: str, release: str) -> list[str]:
    found = []
    for line in text.splitlines():
        words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb" and words[2] == release:
            found.append(words[1])
    return found


def archive_uri(release: str, apt_dir: Path = Path("/etc/apt")) -> str:
    """The URI of the Debian archive apt uses for `release` (not its security archive: its
    i386 index may not download, and the point release is what the kernels come from)."""
    files = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*"))]
    for f in files:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        uris = _deb822_uris(text, release) if f.suffix == ".sources" else \
            _list_uris(text, release) if f.suffix == ".list" or f.name == "sources.list" else []
        for uri in uris:
            if re.fullmatch(r"(https?|file)://[^\s\"'`$\\]+", uri):
                return uri.rstrip("/")
    raise HostError(f"apt has no Debian archive for {release} in {apt_dir}/sources.list(.d): "
                    f"add the {release} main archive to apt's sources")


def image_key(profile: SystemProfile, arch: str, reporter: Path) -> str:
    fields = {"v": IMAGE_VERSION, "arch": arch, **profile.key_fields(),
              "reporter": reporter.parent.name,
              "first_boot": [r.unit_text() for r in FIRST_BOOT]}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def root_key(arch: str, release: str, packages: Iterable[str]) -> str:
    """The key of mmdebstrap's tree: its architecture, release and package set, nothing else."""
    fields = {"v": IMAGE_VERSION, "arch": arch, "release": release,
              "packages": sorted(set(packages))}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def reporter_for(abi: Abi, cache_root: Path) -> Path:
    """native/sysreport.c built statically for the userspace's ABI (-m32 for i386, the cross
    gcc for ARM)."""
    return native_tool("sysreport", cache_root, static=True, flags=tuple(abi.cflags),
                       cc=guest_compiler(abi))


def foreign_emulator(abi: Abi, machine: str | None = None) -> str | None:
    """qemu-user's emulator that runs `abi`'s programs where this host's kernel cannot (an ARM
    system's maintainer scripts on an x86 host), or None where it runs them itself."""
    if (machine or platform.machine()) in abi.run_on:
        return None
    if not abi.emulator:
        raise HostError(f"this host cannot run {abi.name} programs and abibench has no emulator "
                        f"for them: a {abi.name} system cannot be built here")
    return abi.emulator


def mmdebstrap_argv(exe: str, arch: str, release: str, packages: Iterable[str], root: Path,
                    uri: str, emulator: str | None = None) -> list[str]:
    """mmdebstrap in a mount namespace of its own; for a foreign architecture, inside
    obtain/nsbinfmt.py's namespaces, where `emulator`'s static build serves its programs
    through a binfmt_misc entry no other process sees."""
    include = ",".join(sorted(set(packages)))
    binfmt = [] if emulator is None else [
        sys.executable, "-m", "abibench.obtain.nsbinfmt",
        "--arch", emulator.removeprefix("qemu-"), "--"]
    return [*binfmt, "unshare", "--mount", "--propagation", "private", exe, "--variant=minbase",
            f"--arch={arch}", "--mode=root", *([f"--include={include}"] if include else []),
            release, str(root), f"deb {uri} {release} main"]


def customise(root: Path, profile: SystemProfile, reporter: Path) -> None:
    """abibench's measuring service, its unit enabled, the profile's services and load."""
    sbin = root / "usr/local/sbin"
    sbin.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(reporter, sbin / "abibench-sysreport")
    os.chmod(sbin / "abibench-sysreport", 0o755)
    units = root / "etc/systemd/system"
    wants = units / "multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    (units / "abibench-report.service").write_text(REPORT_UNIT)
    os.symlink("/etc/systemd/system/abibench-report.service",
               wants / "abibench-report.service")
    for unit in profile.services:
        found = [d / unit for d in (root / "lib/systemd/system", root / "usr/lib/systemd/system")
                 if (d / unit).is_file()]
        if not found:
            raise PackageError(f"system {profile.id}: no unit {unit} in its packages; add the "
                               "package that has it to [system] packages")
        link = wants / unit
        if not link.is_symlink():
            os.symlink(f"/{found[0].relative_to(root)}", link)
    if profile.load:
        (root / "etc/abibench").mkdir(parents=True, exist_ok=True)
        (root / "etc/abibench/load").write_text(profile.load)
    (root / "etc/hostname").write_text("abibench\n")
    defer_to_first_boot(root)
    sysunits.install(root, profile)  # what runs after boot (the desktop); nothing for others


def _tree_mb(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            with contextlib.suppress(OSError):  # gone meanwhile: not ours to count
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
    return total // (1 << 20)


def _run(argv: list[str], what: str, timeout: float) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])[:400]
        raise PackageError(f"{what} failed ({proc.returncode}): {tail}")


def root_tree(profile: SystemProfile, abi: Abi, cache_root: Path) -> Path:
    """mmdebstrap's tree of the profile's packages for `abi`'s architecture, as a tarball:
    cached, or built now (root only)."""
    arch = abi.debian_arch
    final = cache_root / ROOT_DIR / \
        f"{arch}-{profile.release}-{root_key(arch, profile.release, profile.packages)}"
    tarball = final / "root.tar"
    if tarball.is_file():
        return tarball
    emulator = foreign_emulator(abi)
    if emulator is not None and not Path(f"/usr/bin/{emulator}-static").is_file():
        raise HostError(f"building a {arch} system here needs /usr/bin/{emulator}-static: "
                        "apt-get install qemu-user-static (or bash setup.sh)")
    exe, mke2fs = shutil.which("mmdebstrap"), shutil.which("mke2fs")
    if exe is None or mke2fs is None or shutil.which("unshare") is None:
        raise HostError("mmdebstrap, mke2fs or unshare not found: apt-get install mmdebstrap "
                        "e2fsprogs util-linux (or bash setup.sh)")
    if os.geteuid() != 0:
        raise HostError("building a system image needs root (mmdebstrap's root mode, and files "
                        "owned by root on the disk): run abibench system as root once, the "
                        "image is then cached")
    uri = archive_uri(profile.release)
    final.parent.mkdir(parents=True, exist_ok=True)
    with owned_dir(".root", parent=final.parent) as staging:
        _run(mmdebstrap_argv(exe, arch, profile.release, profile.packages,
                             staging / "root.tar", uri, emulator),
             f"mmdebstrap of {profile.id} for {arch}", BUILD_TIMEOUT_S)
        _publish(staging, final, tarball)
    return tarball


def _publish(staging: Path, final: Path, made: Path) -> None:
    """The staging directory becomes `final`, unless another build put one there first."""
    try:
        os.rename(staging, final)
    except OSError:
        if not made.is_file():
            raise


def build_image(profile: SystemProfile, abi: Abi, cache_root: Path) -> SystemImage:
    """The profile's system for `abi`'s Debian architecture: cached, or built now from
    mmdebstrap's tree (root_tree) with abibench's service and the profile's files added."""
    arch = abi.debian_arch
    reporter = reporter_for(abi, cache_root)
    key = image_key(profile, arch, reporter)
    # Named for what it holds, not for the profile: profiles of one package set share it.
    final = cache_root / IMAGE_DIR / f"{arch}-{profile.release}-{key}"
    image = final / "root.img"
    if image.is_file():
        return SystemImage(image, profile.id, arch, profile.release, key)
    mke2fs, tar = shutil.which("mke2fs"), shutil.which("tar")
    if mke2fs is None or tar is None:
        raise HostError("mke2fs or tar not found: apt-get install e2fsprogs tar (or bash "
                        "setup.sh)")
    tarball = root_tree(profile, abi, cache_root)  # checks root and mmdebstrap when it builds
    if os.geteuid() != 0:
        raise HostError("building a system image needs root (files owned by root on the "
                        "disk): run abibench system as root once, the image is then cached")
    final.parent.mkdir(parents=True, exist_ok=True)
    with owned_dir(".image", parent=final.parent) as staging:
        root = staging / "root"
        root.mkdir()
        _run([tar, "--numeric-owner", "--xattrs", "--xattrs-include=*", "-xpf", str(tarball),
              "-C", str(root)], f"unpacking {tarball}", 600.0)
        customise(root, profile, reporter)
        size_mb = _tree_mb(root) * 5 // 4 + 128  # room for what the boot writes (journal, logs)
        _run([mke2fs, "-q", "-F", "-t", "ext4", "-L", "abibench", "-d", str(root),
              str(staging / "root.img"), f"{size_mb}M"], "mke2fs -d", 600.0)
        shutil.rmtree(root)
        _publish(staging, final, image)
    return SystemImage(image, profile.id, arch, profile.release, key)
