"""Pin a package list's dependency closure to ONE version available for every architecture.

The highest common version, in Debian's version ordering, following the Depends/Pre-Depends of
the *pinned* version (``apt-cache show P:ARCH``, every version), never the candidate's.
Architectures that cannot share a version are a refusal naming every such package, unless skew
is explicitly allowed, in which case the skew travels with every result as a warning.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from debian.debian_support import Version

from .. import kept
from ..errors import HostError
from ..records import JSONDict
from .apt import (
    SUPPORTED_ARCHES,
    AptCache,
    AptSource,
    PackageError,
    PackageRecord,
    Relation,
    apt_lists_fingerprint,
    deb_filename,
    highest,
    indexed_arch,
    parse_reverse_provides,
    parse_show,
    satisfies,
)

RECIPE_VERSION = "1"  # bump when the closure or sysroot layout changes
MAX_RESTARTS = 30  # version restrictions discovered during resolution; each restarts it once


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

    def to_dict(self) -> JSONDict:
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


def _names(v: object) -> bool:
    """A list of package names, versions or architectures: never a path (a pool file's name
    is made of them)."""
    return isinstance(v, list) and all(
        isinstance(x, str) and x and "/" not in x and "\0" not in x for x in v)


def _closure_shape(v: object) -> bool:
    """What Closure.to_dict writes, and nothing else."""
    if not (isinstance(v, dict) and set(v) == {"packages", "arches", "per_arch", "skew"}
            and _names(v["packages"]) and _names(v["arches"]) and isinstance(v["skew"], list)
            and all(isinstance(x, str) for x in v["skew"]) and isinstance(v["per_arch"], dict)):
        return False
    return set(v["per_arch"]) == set(v["arches"]) and all(
        isinstance(ps, list) and all(isinstance(p, dict) and set(p) == {"name", "version", "arch"}
                                     and _names(list(p.values())) for p in ps)
        for ps in v["per_arch"].values())


def resolve_cached(packages: Sequence[str], arches: Sequence[str], cache_root: Path, *,
                   allow_skew: bool = False, apt: AptSource | None = None) -> Closure:
    """`resolve`, remembered until apt's package lists change (kept.py)."""
    key = {"v": RECIPE_VERSION, "p": sorted(packages), "a": list(arches), "s": allow_skew,
           "lists": apt_lists_fingerprint()}
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    doc = kept.answer(cache_root / "debian" / "closures" / f"{name}.json", key, _closure_shape,
                      lambda: resolve(packages, arches, allow_skew=allow_skew, apt=apt).to_dict())
    return Closure.from_dict(doc)
