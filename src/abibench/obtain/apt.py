"""Talking to apt, and parsing what it says: pure functions tested on captured output.

`apt-cache show` lists every known version of a package per architecture; `showpkg` names who
provides a virtual package. apt calls cost about a second of CPU each, so callers batch names
and never run them beside timed samples.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from debian.deb822 import Deb822, PkgRelation
from debian.debian_support import Version

from ..abi import sysroot_arches
from ..errors import EXIT_PACKAGE, AbibenchError, HostError

#: Debian architectures abibench can put in a sysroot (the ABI table's `sysroot` rows).
SUPPORTED_ARCHES = sysroot_arches()


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


def apt_env() -> dict[str, str]:
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
                              env=apt_env(), check=False)
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
