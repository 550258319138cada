"""Debian's own per-arch binaries, unpacked into one self-contained sysroot per architecture.

The steps, each a function of its own so the pure ones can be tested on captured apt output:

1. ``resolve``: for a package list and a set of Debian architectures, pin every package of the
   dependency closure to ONE version available for every architecture (the highest common one,
   in Debian's version ordering), following the Depends/Pre-Depends of the *pinned* version
   (``apt-cache show P:ARCH``, every version, parsed here), never the candidate's.
   Architectures that cannot share a version are a refusal naming every such package, unless
   skew is explicitly allowed, in which case the skew travels with every result as a warning.
2. ``download``: one batched ``apt-get download`` for everything missing from the .deb pool.
3. ``unpack``: ``dpkg -x`` of each .deb into a staging directory, a few fix-ups (a minimal
   /etc/passwd, mount points), then an atomic rename into the sysroot cache, keyed by
   (packages, versions, arch).
4. ``SysrootRunner``: argv -> ``chroot SYSROOT argv`` as root, or
   ``bwrap --bind SYSROOT / --proc /proc --dev /dev --tmpfs /tmp argv`` otherwise, so the program
   sees the sysroot as its root filesystem: its own libc, its own loader, its own data files at
   their absolute paths (Debian's Node.js needs that).

apt calls cost about a second of CPU each, so they are batched, cached and never run beside
timed samples: all of this happens before the first round.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from debian.deb822 import Deb822, PkgRelation
from debian.debian_support import Version

from ..abi import Abi, check_artifact
from ..elf import section_sizes
from ..errors import EXIT_PACKAGE, AbibenchError, HostError
from ..workloads.profile import Workload
from .source import Artifact

#: Debian architectures abibench can put in a sysroot (armhf and arm64 on ARM hosts).
SUPPORTED_ARCHES = ("i386", "amd64", "armhf", "arm64")
GNU_TRIPLETS = {"i386": "i386-linux-gnu", "amd64": "x86_64-linux-gnu",
                "armhf": "arm-linux-gnueabihf", "arm64": "aarch64-linux-gnu"}
RECIPE_VERSION = "1"  # bump when the sysroot layout or fix-ups change
WORK_DIR = "/abibench"  # scratch directories inside a sysroot live under this path
SYSROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MAX_RESTARTS = 30  # version restrictions discovered during resolution; each restarts it once

Mode = Literal["chroot", "bwrap", "loader"]
LOADERS = {"i386": "ld-linux.so.2", "amd64": "ld-linux-x86-64.so.2",
           "armhf": "ld-linux-armhf.so.3", "arm64": "ld-linux-aarch64.so.1"}


class PackageError(AbibenchError):
    """A package, version or closure that Debian's archive cannot give for an architecture."""

    exit_code = EXIT_PACKAGE


# --------------------------------------------------------------------------------------------
# Parsing apt's output (pure functions)


@dataclass(frozen=True)
class Relation:
    """One alternative of a dependency: name, optional :arch qualifier, optional version bound."""

    name: str
    op: str | None = None  # one of << <= = >= >>
    version: str | None = None

    def __str__(self) -> str:
        return f"{self.name} ({self.op} {self.version})" if self.op else self.name

    def accepts(self, version: str) -> bool:
        return self.op is None or self.version is None or satisfies(version, self.op,
                                                                    self.version)


@dataclass(frozen=True)
class Provide:
    name: str
    version: str | None = None


@dataclass(frozen=True)
class PackageRecord:
    """One stanza of ``apt-cache show``: one version of one package for one architecture."""

    name: str
    version: str
    arch: str  # a Debian architecture, or "all"
    depends: tuple[tuple[Relation, ...], ...]  # Pre-Depends then Depends; each an OR group
    provides: tuple[Provide, ...] = ()
    multi_arch: str = ""
    size: int = 0
    downloadable: bool = True  # False for what only dpkg's status knows (installed, no archive)


_OPS = {"<<", "<=", "=", ">=", ">>"}


def satisfies(version: str, op: str, bound: str) -> bool:
    """Debian's version relation, e.g. satisfies("1:2.0-1", ">=", "1.9")."""
    if op not in _OPS:
        raise ValueError(f"unknown version relation {op!r}")
    a, b = Version(version), Version(bound)
    return {"<<": a < b, "<=": a <= b, "=": a == b, ">=": a >= b, ">>": a > b}[op]


def highest(versions: Iterable[str]) -> str | None:
    """The highest version in Debian's ordering (``1.0~rc1 < 1.0 < 1.0+b1``, epochs first)."""
    best: Version | None = None
    for v in versions:
        cand = Version(v)
        if best is None or cand > best:
            best = cand
    return None if best is None else str(best)


_RELATION_RE = re.compile(r"^\s*([a-z0-9][a-z0-9+.-]*)(?::([a-z0-9-]+))?\s*"
                          r"(?:\(\s*(<<|<=|=|>=|>>|<|>)\s*([^\s)]+)\s*\))?\s*"
                          r"(?:\[[^\]]*\])?\s*(?:<[^>]*>\s*)*$")


def parse_relations(text: str) -> tuple[tuple[Relation, ...], ...]:
    """A Depends-style field as OR groups; python-debian does the splitting."""
    groups: list[tuple[Relation, ...]] = []
    if not text.strip():
        return ()
    for group in PkgRelation.parse_relations(text):
        alts: list[Relation] = []
        for alt in group:
            name = str(alt["name"])
            ver = alt.get("version")
            if ver is None and not re.fullmatch(r"[a-z0-9][a-z0-9+.-]*", name):
                # python-debian returns what it cannot parse raw: parse it ourselves.
                m = _RELATION_RE.match(name)
                if m is None:
                    raise ValueError(f"cannot parse the dependency {name!r}")
                op = {"<": "<=", ">": ">="}.get(m.group(3) or "", m.group(3))
                alts.append(Relation(m.group(1), op, m.group(4)))
                continue
            if ver is not None:
                op, bound = str(ver[0]), str(ver[1])
                alts.append(Relation(name, {"<": "<=", ">": ">="}.get(op, op), bound))
            else:
                alts.append(Relation(name))
        if alts:
            groups.append(tuple(alts))
    return tuple(groups)


def _provides(text: str) -> tuple[Provide, ...]:
    out = []
    for group in parse_relations(text):
        for rel in group:
            out.append(Provide(rel.name, rel.version if rel.op == "=" else None))
    return tuple(out)


def parse_show(text: str) -> list[PackageRecord]:
    """Every stanza of ``apt-cache show`` output (which lists every known version)."""
    records: list[PackageRecord] = []
    seen: set[tuple[str, str, str]] = set()
    for para in Deb822.iter_paragraphs(text.splitlines(keepends=True), use_apt_pkg=False):
        if "Package" not in para or "Version" not in para:
            continue
        name, version, arch = para["Package"], para["Version"], para.get("Architecture", "")
        key = (name, version, arch)
        if key in seen:  # the same version from two archives (e.g. a point release and -security)
            continue
        seen.add(key)
        depends = (*parse_relations(para.get("Pre-Depends", "")),
                   *parse_relations(para.get("Depends", "")))
        size = para.get("Size", "0")
        records.append(PackageRecord(
            name=name, version=version, arch=arch, depends=depends,
            provides=_provides(para.get("Provides", "")),
            multi_arch=para.get("Multi-Arch", ""), size=int(size) if size.isdigit() else 0,
            downloadable="Filename" in para))
    return records


def parse_reverse_provides(text: str) -> dict[str, list[tuple[str, str, str | None]]]:
    """``apt-cache showpkg`` -> {virtual name: [(provider, provider version, provider arch)]}.

    The arch is None for the native architecture, which apt prints without a suffix.
    """
    out: dict[str, list[tuple[str, str, str | None]]] = {}
    current: str | None = None
    in_rp = False
    for line in text.splitlines():
        if line.startswith("Package: "):
            current = line.split(":", 1)[1].strip().split(":", 1)[0]
            out.setdefault(current, [])
            in_rp = False
        elif line.startswith("Reverse Provides:"):
            in_rp = True
        elif in_rp and current is not None and line.strip():
            if re.match(r"^[A-Z][A-Za-z -]*:", line):
                in_rp = False
                continue
            parts = line.split()
            if len(parts) >= 2:
                name, _, arch = parts[0].partition(":")
                entry = (name, parts[1], arch or None)
                if entry not in out[current]:
                    out[current].append(entry)
        elif not line.strip():
            in_rp = False
    return out


def deb_filename(name: str, version: str, arch: str) -> str:
    """The file name ``apt-get download`` writes (an epoch's colon is URL-quoted)."""
    return f"{name}_{version.replace(':', '%3a')}_{arch}.deb"


# --------------------------------------------------------------------------------------------
# Talking to apt


class AptSource(Protocol):
    """What resolution needs from apt; tests substitute captured output."""

    def show(self, names: Sequence[str], arches: Sequence[str]) -> str: ...

    def showpkg(self, names: Sequence[str], arches: Sequence[str]) -> str: ...


def _apt_env() -> dict[str, str]:
    return {**os.environ, "LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"}


class AptCache:
    """The real apt-cache: one call per batch of names, every architecture at once."""

    def __init__(self) -> None:
        self.calls = 0

    def _run(self, verb: str, args: list[str]) -> str:
        exe = shutil.which("apt-cache")
        if exe is None:
            raise HostError("apt-cache not found: Debian provenance needs a Debian host with apt")
        self.calls += 1
        proc = subprocess.run([exe, verb, *args], capture_output=True, text=True,
                              env=_apt_env(), check=False)
        # apt-cache exits 100 when none of the names exists: that is an empty answer here.
        if proc.returncode not in (0, 100):
            raise HostError(f"apt-cache {verb} failed (exit {proc.returncode}): "
                            f"{proc.stderr.strip()[:300]}")
        return proc.stdout

    def show(self, names: Sequence[str], arches: Sequence[str]) -> str:
        # Architecture: all packages are only listed under the bare (native) name.
        args = [f"{n}:{a}" for n in names for a in arches] + list(names)
        return self._run("show", args) if args else ""

    def showpkg(self, names: Sequence[str], arches: Sequence[str]) -> str:
        args = [f"{n}:{a}" for n in names for a in arches]
        return self._run("showpkg", args) if args else ""


def indexed_arch(arch: str, lists: Path = Path("/var/lib/apt/lists")) -> bool:
    """Does apt have any package index for this architecture (after apt-get update)?"""
    try:
        return any(f"_binary-{arch}_Packages" in p.name for p in lists.iterdir())
    except OSError:
        return False


def apt_lists_fingerprint(lists: Path = Path("/var/lib/apt/lists")) -> str:
    """Changes whenever `apt-get update` changes what apt knows (cached resolutions expire)."""
    h = hashlib.sha256()
    try:
        entries = sorted(p for p in lists.iterdir() if p.is_file() and "Packages" in p.name)
    except OSError:
        return "none"
    for p in entries:
        st = p.stat()
        h.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# Resolution


@dataclass(frozen=True)
class Pinned:
    """One package of one sysroot at its pinned version."""

    name: str
    version: str
    arch: str  # the sysroot's architecture, or "all"

    def spec(self) -> str:
        """How ``apt-get download`` must name it (Architecture: all without a suffix)."""
        return f"{self.name}={self.version}" if self.arch == "all" else \
            f"{self.name}:{self.arch}={self.version}"

    @property
    def filename(self) -> str:
        return deb_filename(self.name, self.version, self.arch)


@dataclass(frozen=True)
class Closure:
    """The pinned dependency closure of some packages, per architecture."""

    packages: tuple[str, ...]  # what was asked for
    arches: tuple[str, ...]
    per_arch: dict[str, tuple[Pinned, ...]]
    skew: tuple[str, ...] = ()  # "P: i386 V1, amd64 V2" for each allowed version skew

    def requested_versions(self) -> dict[str, dict[str, str]]:
        """{package: {arch: version}} for the packages that were asked for."""
        out: dict[str, dict[str, str]] = {}
        for arch, pins in self.per_arch.items():
            for p in pins:
                if p.name in self.packages:
                    out.setdefault(p.name, {})[arch] = p.version
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"packages": list(self.packages), "arches": list(self.arches),
                "per_arch": {a: [asdict(p) for p in ps] for a, ps in self.per_arch.items()},
                "skew": list(self.skew)}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Closure:
        return Closure(packages=tuple(d["packages"]), arches=tuple(d["arches"]),
                       per_arch={a: tuple(Pinned(**p) for p in ps)
                                 for a, ps in d["per_arch"].items()},
                       skew=tuple(d["skew"]))


@dataclass
class _Restart(Exception):
    name: str
    relation: Relation


@dataclass
class _Resolver:
    apt: AptSource
    arches: tuple[str, ...]
    allow_skew: bool
    records: dict[str, list[PackageRecord]] = field(default_factory=dict)
    providers: dict[str, list[tuple[str, str, str | None]]] = field(default_factory=dict)
    restrictions: dict[str, list[Relation]] = field(default_factory=dict)

    # -- fetching, batched -------------------------------------------------------------------

    def fetch(self, names: Iterable[str]) -> None:
        missing = sorted({n for n in names if n not in self.records})
        if not missing:
            return
        for n in missing:
            self.records[n] = []
        for rec in parse_show(self.apt.show(missing, self.arches)):
            if rec.name in self.records and rec.downloadable and \
                    (rec.arch in self.arches or rec.arch == "all"):
                self.records[rec.name].append(rec)
        virtual = [n for n in missing if not self.records[n]]
        if virtual:
            found = parse_reverse_provides(self.apt.showpkg(virtual, self.arches))
            for n in virtual:
                self.providers[n] = found.get(n, [])
            self.fetch(p for n in virtual for p, _, _ in self.providers[n])

    # -- versions ----------------------------------------------------------------------------

    def versions(self, name: str, arch: str) -> dict[str, PackageRecord]:
        """version -> record usable in an `arch` sysroot, after the restrictions found so far."""
        out: dict[str, PackageRecord] = {}
        for rec in self.records.get(name, []):
            if rec.arch not in (arch, "all"):
                continue
            if not all(r.accepts(rec.version) for r in self.restrictions.get(name, [])):
                continue
            if rec.version not in out or rec.arch == arch:
                out[rec.version] = rec
        return out

    def pin(self, name: str) -> dict[str, PackageRecord]:
        """arch -> the record of the version pinned for it: the highest common one."""
        per = {a: self.versions(name, a) for a in self.arches}
        having = [a for a in self.arches if per[a]]
        if not having:
            return {}
        common = set.intersection(*(set(per[a]) for a in having))
        if common:
            v = highest(common)
            assert v is not None
            return {a: per[a][v] for a in having}
        return {a: per[a][highest(per[a]) or ""] for a in having}

    # -- one pass over the closure -----------------------------------------------------------

    def choose(self, group: tuple[Relation, ...], arch: str,
               chosen: dict[str, PackageRecord]) -> tuple[Relation, str] | None:
        """Which real package satisfies an OR group in `arch`: (relation, package) or None."""
        # Something already in the sysroot that satisfies the group wins (as apt would keep it).
        for rel in group:
            if rel.name in chosen and rel.accepts(chosen[rel.name].version):
                return rel, rel.name
        for rel in group:
            rec = self.pin(rel.name).get(arch)
            if rec is not None and rel.accepts(rec.version):
                return rel, rel.name
            for prov, _, parch in self.providers.get(rel.name, []):
                if parch not in (None, arch) and parch != "all":
                    continue
                prec = self.pin(prov).get(arch)
                if prec is None:
                    continue
                if rel.op is None or any(p.name == rel.name and p.version and
                                         satisfies(p.version, rel.op, rel.version or "")
                                         for p in prec.provides):
                    return rel, prov
        # Nothing satisfies it as pinned: a real package whose other versions might.
        for rel in group:
            if self.records.get(rel.name) and any(
                    rel.accepts(v) for v in self.versions(rel.name, arch)):
                raise _Restart(rel.name, rel)
        return None

    def walk(self, roots: Sequence[str]) -> dict[str, dict[str, PackageRecord]]:
        chosen: dict[str, dict[str, PackageRecord]] = {a: {} for a in self.arches}
        # (arch, OR group, who needs it)
        pending: list[tuple[str, tuple[Relation, ...], str]] = [
            (a, (Relation(n),), "") for a in self.arches for n in roots]
        while pending:
            self.fetch(rel.name for _, group, _ in pending for rel in group)
            nxt: list[tuple[str, tuple[Relation, ...], str]] = []
            for arch, group, parent in pending:
                picked = self.choose(group, arch, chosen[arch])
                if picked is None:
                    raise self.unsatisfiable(group, arch, parent)
                _, name = picked
                if name in chosen[arch]:
                    continue
                rec = self.pin(name)[arch]
                chosen[arch][name] = rec
                nxt.extend((arch, g, f"{name}:{arch}={rec.version}") for g in rec.depends)
            pending = nxt
        return chosen

    def unsatisfiable(self, group: tuple[Relation, ...], arch: str, parent: str) -> PackageError:
        what = " | ".join(str(r) for r in group)
        if not parent:
            name = group[0].name
            others = {a: sorted(self.versions(name, a), key=Version) for a in self.arches}
            have = ", ".join(f"{a}: {' '.join(v)}" for a, v in others.items() if v) or "none"
            return PackageError(
                f"Debian package '{name}' has no build for {arch} (versions known: {have}); "
                f"drop {arch} from --abi, or run apt-get update if the {arch} index is stale")
        known = []
        for r in group:
            vs = sorted(self.versions(r.name, arch), key=Version)
            known.append(f"{r.name}: {' '.join(vs) if vs else 'none'}")
        return PackageError(
            f"the closure cannot be satisfied for {arch}: {parent} depends on {what} "
            f"(available for {arch}: {'; '.join(known)}); run apt-get update, or choose other "
            "packages")


def resolve(packages: Sequence[str], arches: Sequence[str], *, allow_skew: bool = False,
            apt: AptSource | None = None) -> Closure:
    """Pin the Depends/Pre-Depends closure of `packages` to one version for every arch."""
    for a in arches:
        if a not in SUPPORTED_ARCHES:
            raise PackageError(f"Debian architecture '{a}' is not supported for sysroots "
                               f"(supported: {', '.join(SUPPORTED_ARCHES)})")
    if not packages:
        raise PackageError("no Debian packages given: list them under [debian] packages")
    if apt is None:
        for a in arches:
            if not indexed_arch(a):
                raise HostError(f"apt has no package index for {a}: run `dpkg --add-architecture "
                                f"{a} && apt-get update` (bash setup.sh does it for i386)")
    r = _Resolver(apt or AptCache(), tuple(arches), allow_skew)
    for _ in range(MAX_RESTARTS):
        try:
            chosen = r.walk(list(packages))
            break
        except _Restart as again:
            known = r.restrictions.setdefault(again.name, [])
            if again.relation in known:
                raise PackageError(f"the closure cannot be satisfied: {again.name} "
                                   f"{again.relation} has no version for {', '.join(arches)}") \
                    from None
            known.append(again.relation)
    else:
        raise PackageError(f"the closure of {' '.join(packages)} did not settle after "
                           f"{MAX_RESTARTS} version restrictions")
    skew: list[str] = []
    names = sorted({n for c in chosen.values() for n in c})
    for n in names:
        vs = {a: chosen[a][n].version for a in arches if n in chosen[a]}
        if len(set(vs.values())) > 1:
            skew.append(f"{n}: " + ", ".join(f"{a} {v}" for a, v in vs.items()))
    if skew and not allow_skew:
        raise PackageError(
            "no common version for every architecture (version skew): " + "; ".join(skew) +
            ". Run apt-get update (a failed index hides versions), or pass "
            "--allow-version-skew to compare different versions anyway")
    per_arch = {a: tuple(Pinned(rec.name, rec.version, "all" if rec.arch == "all" else a)
                         for _, rec in sorted(chosen[a].items())) for a in arches}
    return Closure(tuple(packages), tuple(arches), per_arch, tuple(skew))


def resolve_cached(packages: Sequence[str], arches: Sequence[str], cache_root: Path, *,
                   allow_skew: bool = False, apt: AptSource | None = None) -> Closure:
    """`resolve`, remembered until apt's package lists change."""
    key = hashlib.sha256(json.dumps(
        {"v": RECIPE_VERSION, "p": sorted(packages), "a": list(arches), "s": allow_skew,
         "lists": apt_lists_fingerprint()}, sort_keys=True).encode()).hexdigest()[:20]
    path = cache_root / "debian" / "closures" / f"{key}.json"
    if path.is_file():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            return Closure.from_dict(json.loads(path.read_text()))
    closure = resolve(packages, arches, allow_skew=allow_skew, apt=apt)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(closure.to_dict(), indent=1))
    os.replace(tmp, path)
    return closure


# --------------------------------------------------------------------------------------------
# Download and unpack


def pool_dir(cache_root: Path) -> Path:
    return cache_root / "debian" / "debs"


def download(pins: Iterable[Pinned], cache_root: Path) -> list[Path]:
    """Fetch the .debs the pool lacks with ONE apt-get download call; return every path."""
    pool = pool_dir(cache_root)
    pool.mkdir(parents=True, exist_ok=True)
    wanted = sorted(set(pins), key=lambda p: (p.name, p.arch))
    missing = [p for p in wanted if not (pool / p.filename).is_file()]
    if missing:
        exe = shutil.which("apt-get")
        if exe is None:
            raise HostError("apt-get not found: Debian provenance needs a Debian host with apt")
        with tempfile.TemporaryDirectory(prefix=".dl-", dir=pool) as tmp:
            os.chmod(tmp, 0o755)  # apt's unprivileged _apt user writes here when it can
            proc = subprocess.run([exe, "download", "-q", *(p.spec() for p in missing)],
                                  cwd=tmp, capture_output=True, text=True, env=_apt_env(),
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
    return [pool / p.filename for p in wanted]


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
        return GNU_TRIPLETS[self.arch]

    def host_path(self, inner: str) -> Path:
        """Where a path seen inside the sysroot is on the host."""
        return self.path / inner.lstrip("/")

    def versions(self) -> dict[str, str]:
        return {p.name: p.version for p in self.pins}

    def to_dict(self) -> dict[str, Any]:
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
    for d in ("proc", "dev", "sys", "tmp", "run", "root", WORK_DIR.strip("/")):
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


def unpack(debs: Sequence[Path], dest: Path) -> None:
    """`dpkg -x` every .deb into dest (maintainer scripts are not run)."""
    exe = shutil.which("dpkg")
    if exe is None:
        raise HostError("dpkg not found: Debian provenance needs a Debian host")
    for deb in debs:
        proc = subprocess.run([exe, "-x", str(deb), str(dest)], capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            raise PackageError(f"dpkg -x {deb.name} failed: {proc.stderr.strip()[:300]}; delete "
                               f"{deb} and try again")


def sysroot_for(closure: Closure, arch: str, cache_root: Path) -> Sysroot:
    """The sysroot of one architecture of a closure: from the cache, or downloaded and unpacked."""
    pins = closure.per_arch[arch]
    key = sysroot_key(pins, arch)
    final = cache_root / "debian" / "sysroots" / f"{arch}-{key}"
    manifest = final / "abibench-sysroot.json"
    if manifest.is_file():
        return Sysroot(final, arch, pins, key, cached=True, skew=closure.skew)
    debs = download(pins, cache_root)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{arch}-", dir=final.parent))
    try:
        unpack(debs, staging)
        _fixups(staging)
        loader = staging / "lib" / GNU_TRIPLETS[arch]
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


# --------------------------------------------------------------------------------------------
# Running inside a sysroot


def default_mode() -> Mode:
    forced = os.environ.get("ABIBENCH_ISOLATION", "")
    modes: dict[str, Mode] = {"chroot": "chroot", "bwrap": "bwrap", "loader": "loader"}
    if forced in modes:
        return modes[forced]
    return "chroot" if os.geteuid() == 0 else "bwrap"


@dataclass(frozen=True)
class SysrootRunner:
    """Turns an argv meant for the sysroot into one that runs it there, as its root filesystem.

    chroot (as root) execs the program in place, so the launcher's wait4 sees the program
    itself; bwrap stays as a small parent of it, and wait4's rusage then still covers the
    program (its resources are the maximum/sum over the waited-for descendants).
    The program's working directory is / in both modes; use absolute paths under WORK_DIR.

    "loader" (ABIBENCH_ISOLATION=loader) is the fallback for simple binaries: the sysroot's own
    ld.so runs the program with the sysroot's library directories, on the host's filesystem.
    Programs that open data at absolute paths (Debian's Node.js: /usr/share/nodejs) or exec
    helpers escape the sysroot that way; check with foreign_mappings().
    """

    sysroot: Sysroot
    mode: Mode = field(default_factory=default_mode)

    def tool(self) -> str:
        if self.mode == "loader":
            # The sysroot's own loader by its real path: amd64's /lib64/ld-linux-x86-64.so.2 in
            # the .deb is an absolute symlink, which outside the sysroot means the host's.
            return str(self.sysroot.host_path(
                f"/lib/{self.sysroot.triplet}/{LOADERS[self.sysroot.arch]}"))
        exe = shutil.which("chroot" if self.mode == "chroot" else "bwrap")
        if exe is None:
            fix = ("apt-get install coreutils" if self.mode == "chroot"
                   else "apt-get install bubblewrap")
            raise HostError(f"{self.mode} not found, needed to run programs inside a sysroot: "
                            f"{fix}")
        if self.mode == "chroot" and os.geteuid() != 0:
            raise HostError("chroot needs root: run as root or set ABIBENCH_ISOLATION=bwrap")
        return exe

    def wrap(self, argv: Sequence[str]) -> list[str]:
        root = str(self.sysroot.path)
        if self.mode == "loader":
            # Fallback for simple binaries only: the program sees the host's filesystem, so
            # data files at absolute paths and anything it execs escape the sysroot.
            t = self.sysroot.triplet
            libs = f"{root}/lib/{t}:{root}/usr/lib/{t}"
            return [self.tool(), "--inhibit-cache", "--library-path", libs, "--argv0", argv[0],
                    str(self.sysroot.host_path(argv[0])), *argv[1:]]
        if self.mode == "chroot":
            return [self.tool(), root, *argv]
        return [self.tool(), "--bind", root, "/", "--proc", "/proc", "--dev", "/dev",
                "--tmpfs", "/tmp", "--die-with-parent", "--chdir", "/", "--", *argv]

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A clean environment: nothing of the host's (LD_LIBRARY_PATH!) leaks in."""
        return {"PATH": SYSROOT_PATH, "HOME": "/root", "LC_ALL": "C", "TZ": "UTC",
                **(extra or {})}

    @contextlib.contextmanager
    def scratch(self, prefix: str = "work") -> Iterator[tuple[Path, str]]:
        """A fresh directory inside the sysroot: (host path, path inside), removed afterwards."""
        # The owner's PID in the name: what a process left behind can be told apart.
        inner = f"{WORK_DIR}/{prefix}-p{os.getpid()}-{uuid.uuid4().hex[:12]}"
        host = self.sysroot.host_path(inner)
        if self.mode == "loader":
            inner = str(host)  # the program sees the host's filesystem
        host.mkdir(parents=True)
        try:
            yield host, inner
        finally:
            shutil.rmtree(host, ignore_errors=True)


def foreign_mappings(pid: int, sysroot: Path) -> list[str]:
    """Files mapped by a process that do not come from the sysroot (must be empty).

    Paths in /proc/PID/maps are as the reader sees them: a chrooted process shows host paths
    under the sysroot; one in bwrap's mount namespace shows paths inside it, so a mapping is
    from the sysroot when its device and inode are those of the file at the same path there.
    """
    out: list[str] = []
    text = Path(f"/proc/{pid}/maps").read_text()
    root = str(sysroot.resolve())
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith("/"):
            continue
        path = parts[5].removesuffix(" (deleted)")
        if path.startswith(root + "/"):
            continue
        inode = int(parts[4])
        try:
            st = os.stat(root + path)
        except OSError:
            out.append(path)
            continue
        if st.st_ino != inode:
            out.append(path)
    return sorted(set(out))


# --------------------------------------------------------------------------------------------
# Workload artifacts of provenance "debian"


def resolve_inside(root: Path, inner: str, hops: int = 40) -> Path:
    """The host path of `inner` with symlinks followed as the sysroot sees them (absolute links
    point into the sysroot, not at the host)."""
    parts = [p for p in inner.split("/") if p]
    done: list[str] = []
    while parts:
        part = parts.pop(0)
        if part == "..":
            if done:
                done.pop()
            continue
        if part == ".":
            continue
        here = root.joinpath(*done, part)
        if here.is_symlink():
            hops -= 1
            if hops < 0:
                raise PackageError(f"too many symbolic links resolving {inner} in {root}")
            target = os.readlink(here)
            if target.startswith("/"):
                done = []
            parts = [p for p in target.split("/") if p] + parts
            continue
        done.append(part)
    return root.joinpath(*done)


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
            sizes={name: asdict(section_sizes(exe))},
            elf={name: asdict(info) | {"path": program}}, log="",
            sysroot=str(root.path), debian_packages=requested,
            debian_closure={p.name: p.version for p in root.pins},
            version_skew=root.skew)
    return out
