"""System profiles: a whole Debian system to boot and measure (`abibench system run NAME`).

One TOML file per system under workloads/systems/, with one `[system]` table:

    [system]
    description = "systemd to multi-user, nothing else"
    release = "bookworm"            # Debian's release, the same for every architecture
    packages = ["systemd-sysv"]     # what mmdebstrap --variant=minbase adds
    services = []                   # systemd units to enable beyond what the packages enable
    settle = 30                     # seconds after multi-user.target before measuring (guest time)
    memory_mb = 1024                # the machine's memory, the same for every combination
    load = ""                       # a shell script run after the idle measurement ("" = none)
    load_seconds = 60               # the load's time limit; measured `load_after` s after it starts
    load_after = 20

    [[system.published]]            # someone else's figures, shown beside ours
    what = "Raspberry Pi OS, idle"
    hardware = "Raspberry Pi 400"
    mb_32 = 103.0
    mb_64 = 196.0                   # or increase_pct = 60.0 alone

Errors name the file and the key, as workload profiles' do.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProfileError
from ..files import read_regular
from ..paths import PACKAGE_DIR

SYSTEMS_DIR = PACKAGE_DIR / "workloads" / "systems"
_NAME = re.compile(r"[a-z0-9][a-z0-9.+-]{0,80}")  # a Debian package or systemd unit name
_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,40}")
KEYS = ("description", "release", "packages", "services", "settle", "memory_mb", "load",
        "load_seconds", "load_after", "published")
PUBLISHED_KEYS = ("what", "hardware", "mb_32", "mb_64", "increase_pct")


@dataclass(frozen=True)
class Published:
    """A figure someone else measured on their hardware, shown beside ours, never mixed in."""

    what: str
    hardware: str
    mb_32: float | None
    mb_64: float | None
    increase_pct: float  # how much more the 64-bit system used than the 32-bit one


@dataclass(frozen=True)
class SystemProfile:
    id: str
    description: str
    release: str
    packages: tuple[str, ...]
    services: tuple[str, ...]
    settle_s: int
    memory_mb: int
    load: str
    load_seconds: int
    load_after_s: int
    published: tuple[Published, ...]

    def key_fields(self) -> dict[str, object]:
        """What the built image depends on (its cache key); memory and settling do not."""
        return {"release": self.release, "packages": sorted(self.packages),
                "services": sorted(self.services), "load": self.load}


def available() -> list[str]:
    return sorted(p.stem for p in SYSTEMS_DIR.glob("*.toml"))


def load_system(name: str) -> SystemProfile:
    """The built-in system profile `name`, or a profile file at that path."""
    path = Path(name) if name.endswith(".toml") else SYSTEMS_DIR / f"{name}.toml"
    if not path.is_file():
        raise ProfileError(f"no system profile {name!r}: choose one of "
                           f"{', '.join(available())} or give a .toml file")
    try:
        data = tomllib.loads(read_regular(path, 1 << 20).decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: not valid TOML ({exc}); fix the file") from None
    table = data.get("system")
    if not isinstance(table, dict):
        raise ProfileError(f"{path}: no [system] table; add one (see docs/systems.md)")
    return parse_system(path.stem, table, str(path))


def _int(t: Mapping[str, object], key: str, default: int, lo: int, hi: int, where: str) -> int:
    v = t.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ProfileError(f"{where}: [system] {key} must be a whole number from {lo} to {hi}")
    return v


def _names(t: Mapping[str, object], key: str, where: str) -> tuple[str, ...]:
    v = t.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) and _NAME.fullmatch(x) for x in v):
        raise ProfileError(f"{where}: [system] {key} must be a list of package or unit names "
                           "(lower-case letters, digits, '.', '+', '-')")
    return tuple(v)


def _published(items: object, where: str) -> tuple[Published, ...]:
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ProfileError(f"{where}: [[system.published]] must be tables")
    out = []
    for item in items:
        unknown = set(item) - set(PUBLISHED_KEYS)
        nums = {k: item.get(k) for k in ("mb_32", "mb_64", "increase_pct")}
        if unknown or not all(v is None or (isinstance(v, int | float) and 0 < v < 1e6)
                              for v in nums.values()):
            raise ProfileError(f"{where}: [[system.published]] takes {', '.join(PUBLISHED_KEYS)}"
                               " (positive numbers for mb_32, mb_64, increase_pct)")
        m32, m64, pct = (None if v is None else float(v) for v in nums.values())
        if pct is None and (m32 is None or m64 is None):
            raise ProfileError(f"{where}: [[system.published]] needs mb_32 and mb_64, or "
                               "increase_pct")
        what, hw = item.get("what", ""), item.get("hardware", "")
        if not isinstance(what, str) or not isinstance(hw, str) or not what or not hw:
            raise ProfileError(f"{where}: [[system.published]] needs what and hardware (text)")
        if pct is None and m32 is not None and m64 is not None:
            pct = 100.0 * (m64 / m32 - 1)
        out.append(Published(what[:200], hw[:200], m32, m64, pct or 0.0))
    return tuple(out)


def parse_system(name: str, t: Mapping[str, object], where: str) -> SystemProfile:
    if not _ID.fullmatch(name):
        raise ProfileError(f"{where}: a system's name is lower-case letters, digits, '_', '-'")
    unknown = sorted(set(t) - set(KEYS))
    if unknown:
        raise ProfileError(f"{where}: [system] has no key {unknown[0]!r}; the keys are "
                           f"{', '.join(KEYS)}")
    desc, release, load = t.get("description", ""), t.get("release", "bookworm"), t.get("load", "")
    if not isinstance(desc, str) or not isinstance(load, str) or len(load) > 65536:
        raise ProfileError(f"{where}: [system] description and load are text (load < 64 kB)")
    if not isinstance(release, str) or not re.fullmatch(r"[a-z]{2,20}", release):
        raise ProfileError(f"{where}: [system] release is a Debian codename such as bookworm")
    return SystemProfile(
        id=name, description=desc[:300], release=release,
        packages=_names(t, "packages", where), services=_names(t, "services", where),
        settle_s=_int(t, "settle", 30, 0, 3600, where),
        memory_mb=_int(t, "memory_mb", 1024, 128, 16384, where), load=load,
        load_seconds=_int(t, "load_seconds", 60, 1, 3600, where),
        load_after_s=_int(t, "load_after", 20, 0, 3600, where),
        published=_published(t.get("published", []), where))
