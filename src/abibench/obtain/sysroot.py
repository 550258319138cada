"""Debian's per-arch .debs downloaded in one batch and unpacked into one sysroot per arch.

``dpkg -x`` of each .deb into a staging directory, a few fix-ups (a minimal /etc/passwd, mount
points), then an atomic rename into the sysroot cache, keyed by (packages, versions, arch).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ..abi import Abi, by_debian_arch
from ..errors import HostError
from ..locks import exclusive, made_once
from ..records import JSONDict
from ..workspace import SYSROOT_WORK_DIR, prefix
from .apt import SUPPORTED_ARCHES, AptSource, PackageError, apt_env
from .libraries import in_root
from .resolve import RECIPE_VERSION, Closure, Pinned, resolve_cached

WORK_DIR = SYSROOT_WORK_DIR  # scratch directories inside a sysroot live under this path


def pool_dir(cache_root: Path) -> Path:
    return cache_root / "debian" / "debs"


def download(pins: Iterable[Pinned], cache_root: Path) -> list[Path]:
    """Fetch the .debs the pool lacks with ONE apt-get download call; return every path."""
    pool = pool_dir(cache_root)
    pool.mkdir(parents=True, exist_ok=True)
    wanted = sorted(set(pins), key=lambda p: (p.name, p.arch))
    if any(not (pool / p.filename).is_file() for p in wanted):
        # One downloader in the pool at a time (locks.py): a concurrent process waits, then
        # fetches only what is still missing (usually nothing).
        with exclusive(pool):
            _fetch_missing(wanted, pool)
    return [pool / p.filename for p in wanted]


def _fetch_missing(wanted: list[Pinned], pool: Path) -> None:
    missing = [p for p in wanted if not (pool / p.filename).is_file()]
    if missing:
        exe = shutil.which("apt-get")
        if exe is None:
            raise HostError("apt-get not found: Debian provenance needs a Debian host with apt")
        with tempfile.TemporaryDirectory(prefix=prefix(".dl"), dir=pool) as tmp:
            os.chmod(tmp, 0o755)  # apt's unprivileged _apt user writes here when it can
            proc = subprocess.run([exe, "download", "-q", *(p.spec() for p in missing)],
                                  cwd=tmp, capture_output=True, text=True, env=apt_env(),
                                  check=False)
            errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("E:")]
            if proc.returncode != 0:
                raise PackageError(
                    f"apt-get download failed for {len(missing)} package(s): "
                    f"{' '.join(errors)[:400] or proc.stderr.strip()[:400]}; run apt-get update "
                    "and try again")
            for p in missing:
                src = Path(tmp) / p.filename
                if not src.is_file():
                    raise PackageError(f"apt-get download did not produce {p.filename} for "
                                       f"{p.spec()}; run apt-get update and try again")
                os.replace(src, pool / p.filename)


@dataclass(frozen=True)
class Sysroot:
    """An unpacked, self-contained root filesystem of one Debian architecture."""

    path: Path
    arch: str
    pins: tuple[Pinned, ...]
    key: str
    cached: bool = False
    skew: tuple[str, ...] = ()

    @property
    def triplet(self) -> str:
        return by_debian_arch(self.arch).gnu_triplet

    def host_path(self, inner: str) -> Path:
        """Where a path seen inside the sysroot is on the host."""
        return self.path / inner.lstrip("/")

    def versions(self) -> dict[str, str]:
        return {p.name: p.version for p in self.pins}

    def to_dict(self) -> JSONDict:
        return {"path": str(self.path), "arch": self.arch, "key": self.key,
                "pins": [asdict(p) for p in self.pins], "skew": list(self.skew)}


def sysroot_key(pins: Iterable[Pinned], arch: str) -> str:
    doc = {"v": RECIPE_VERSION, "arch": arch,
           "pins": sorted((p.name, p.version, p.arch) for p in pins)}
    return hashlib.sha256(json.dumps(doc).encode()).hexdigest()[:16]


_PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
_GROUP = "root:x:0:\nnogroup:x:65534:\n"
_DEVICES = {"null": 3, "zero": 5, "full": 7, "random": 8, "urandom": 9}


def _fixups(root: Path) -> None:
    """What dpkg's maintainer scripts would have created and a program expects to find."""
    etc = root / "etc"
    etc.mkdir(exist_ok=True)
    for name, text in (("passwd", _PASSWD), ("group", _GROUP),
                       ("hosts", "127.0.0.1 localhost\n::1 localhost\n")):
        if not (etc / name).exists():
            (etc / name).write_text(text)
    for d in ("proc", "dev", "dev/shm", "sys", "tmp", "run", "root", WORK_DIR.strip("/")):
        (root / d).mkdir(exist_ok=True)
    os.chmod(root / "tmp", 0o1777)
    os.chmod(root / WORK_DIR.strip("/"), 0o1777)
    if os.geteuid() == 0:
        # chroot gives the program no /dev of its own: the few character devices everyone uses.
        for name, minor in _DEVICES.items():
            node = root / "dev" / name
            if not node.exists():
                with contextlib.suppress(OSError):
                    os.mknod(node, 0o20666, os.makedev(1, minor))
                    os.chmod(node, 0o666)


def unpack(debs: Sequence[Path], dest: Path, shared: Path | None = None) -> None:
    """`dpkg -x` every .deb into dest (maintainer scripts are not run).

    With `shared`, an Architecture: all package (a game's hundreds of MB of data, the same for
    every arch) is unpacked once into shared/<its file name>/ and hard-linked into dest, so
    the i386 and amd64 sysroots hold one copy of it on disk.
    """
    exe = shutil.which("dpkg")
    if exe is None:
        raise HostError("dpkg not found: Debian provenance needs a Debian host")
    for deb in debs:
        if shared is not None and deb.name.endswith("_all.deb"):
            tree = unpacked_once(deb, shared)
            if _link_tree(tree, dest):
                continue
        proc = subprocess.run([exe, "-x", str(deb), str(dest)], capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            raise PackageError(f"dpkg -x {deb.name} failed: {proc.stderr.strip()[:300]}; delete "
                               f"{deb} and try again")


def shared_dir(cache_root: Path) -> Path:
    return cache_root / "debian" / "shared"


def unpacked_once(deb: Path, shared: Path) -> Path:
    """The tree of an Architecture: all .deb, unpacked the first time any sysroot needs it."""
    final = shared / deb.name.removesuffix(".deb")
    return made_once(final, lambda: final if final.is_dir() else None,
                     lambda: _unpack_shared(deb, shared, final))


def _unpack_shared(deb: Path, shared: Path, final: Path) -> Path:
    shared.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=prefix(".all"), dir=shared))
    try:
        unpack([deb], staging)
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, final)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)  # another process unpacked it first
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def _link_tree(tree: Path, dest: Path) -> bool:
    """Hard links of every file of tree in dest (directories made, symbolic links copied);
    False when the two are on different filesystems or links are refused: unpack it then."""
    exe = shutil.which("cp")
    if exe is None:
        return False
    proc = subprocess.run([exe, "-a", "--link", "--remove-destination", f"{tree}/.",
                           str(dest)], capture_output=True, text=True, check=False)
    return proc.returncode == 0


def sysroot_for(closure: Closure, arch: str, cache_root: Path) -> Sysroot:
    """The sysroot of one architecture of a closure: from the cache, or downloaded and unpacked."""
    pins = closure.per_arch[arch]
    key = sysroot_key(pins, arch)
    final = cache_root / "debian" / "sysroots" / f"{arch}-{key}"
    manifest = final / "abibench-sysroot.json"
    def found() -> Sysroot | None:
        return Sysroot(final, arch, pins, key, cached=True, skew=closure.skew) \
            if manifest.is_file() else None

    # One maker per sysroot (locks.py): a concurrent process waits, then finds it made.
    return made_once(final, found, lambda: _make_sysroot(closure, arch, key, final, cache_root))


def _make_sysroot(closure: Closure, arch: str, key: str, final: Path, cache_root: Path) -> Sysroot:
    pins = closure.per_arch[arch]
    debs = download(pins, cache_root)
    final.parent.mkdir(parents=True, exist_ok=True)
    # Named for its owner: a later run removes it if this one is killed (workspace.clean_stale).
    staging = Path(tempfile.mkdtemp(prefix=prefix(f".{arch}"), dir=final.parent))
    try:
        unpack(debs, staging, shared_dir(cache_root))
        _fixups(staging)
        loader = staging / "lib" / by_debian_arch(arch).gnu_triplet
        if not any(loader.glob("ld-linux*.so*")):
            raise PackageError(f"the {arch} sysroot has no dynamic loader in {loader}: is libc6 "
                               "missing from the closure?")
        sysroot = Sysroot(final, arch, pins, key, skew=closure.skew)
        (staging / "abibench-sysroot.json").write_text(json.dumps(sysroot.to_dict(), indent=1))
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, final)
        except OSError:
            # Another abibench process finished the same sysroot first; theirs is as good.
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sysroot


def prepare(packages: Sequence[str], arches: Sequence[str], cache_root: Path, *,
            allow_skew: bool = False, apt: AptSource | None = None) -> dict[str, Sysroot]:
    """Resolve, download (one batch) and unpack: {arch: Sysroot}. Not to be run beside samples."""
    closure = resolve_cached(packages, arches, cache_root, allow_skew=allow_skew, apt=apt)
    missing = [p for a in arches for p in closure.per_arch[a]
               if not (cache_root / "debian" / "sysroots" /
                       f"{a}-{sysroot_key(closure.per_arch[a], a)}").is_dir()]
    if missing:
        download(missing, cache_root)  # one batch for every arch
    return {a: sysroot_for(closure, a, cache_root) for a in arches}


def debian_arch(abi: Abi) -> str:
    if abi.debian_arch not in SUPPORTED_ARCHES:
        raise PackageError(f"ABI {abi.name} has no Debian architecture with binary packages "
                           f"(Debian's {abi.debian_arch} is not in its archive): drop it from "
                           "--abi for --provenance debian")
    return abi.debian_arch


def resolve_inside(root: Path, inner: str) -> Path:
    """The host path of `inner` with symlinks followed as the sysroot sees them (absolute links
    point into the sysroot, not at the host)."""
    found = in_root(root, inner)
    if found.is_symlink():
        raise PackageError(f"too many symbolic links resolving {inner} in {root}")
    return found
