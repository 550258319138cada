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
    load_seconds = 60               # a guard: the load (a fixed amount of work) is killed then
    load_after = 20                 # measured this many seconds after the load ended

    [[system.published]]            # someone else's figures, shown beside ours
    what = "Raspberry Pi OS, idle"
    hardware = "Raspberry Pi 400"
    mb_32 = 103.0
    mb_64 = 196.0                   # or increase_pct = 60.0 alone

What runs after boot (the desktop), each program a systemd service of its own, so that its
memory is reported per unit (obtain/sysunits.py makes the units):

    [[system.run]]
    name = "browser"                # the unit abibench-run-browser.service
    command = "/usr/bin/chromium --no-first-run file:///usr/local/share/abibench/page.html"
    user = "abibench"               # created in the image if it has no such user (default root)
    after = ["xserver"]             # other run entries it starts after
    environment = ["DISPLAY=:0"]
    wait_for = "/tmp/.X11-unix/X0"  # a path that must exist before it starts

    ready = "..."                   # a bash script that returns once the system is in the state
    ready_timeout = 1800            # to measure (the page loaded); multi-user.target waits for it

    [system.files]                  # files packed into the image: guest path = a file beside
    "/usr/local/share/abibench/page.html" = "desktop/page.html"   # the profile

Errors name the file and the key, as workload profiles' do.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProfileError
from ..files import read_regular
from ..paths import PACKAGE_DIR
from ..text import one_line

SYSTEMS_DIR = PACKAGE_DIR / "workloads" / "systems"
_NAME = re.compile(r"[a-z0-9][a-z0-9.+-]{0,80}")  # a Debian package or systemd unit name
_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,40}")
KEYS = ("description", "release", "packages", "services", "settle", "memory_mb", "load",
        "load_seconds", "load_after", "published", "run", "ready", "ready_timeout", "files")
RUN_KEYS = ("name", "command", "user", "after", "environment", "wait_for")
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
class RunEntry:
    """A program that runs after boot as a systemd service of its own (abibench-run-NAME)."""

    name: str
    command: str  # ExecStart: an absolute path and its arguments, one line
    user: str
    after: tuple[str, ...]  # other entries' names
    environment: tuple[str, ...]  # KEY=value
    wait_for: str  # a path that must exist before the command starts ("" = none)


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
    run: tuple[RunEntry, ...] = ()
    ready: str = ""
    ready_timeout_s: int = 0
    files: tuple[tuple[str, bytes], ...] = ()  # (guest path, content)

    def key_fields(self) -> dict[str, object]:
        """What the built image depends on (its cache key); memory and settling do not. The
        fields of what runs after boot enter only when set: older profiles keep their images."""
        fields: dict[str, object] = {"release": self.release, "packages": sorted(self.packages),
                                     "services": sorted(self.services), "load": self.load}
        if self.run or self.ready or self.files:
            fields["run"] = [[r.name, r.command, r.user, sorted(r.after), list(r.environment),
                              r.wait_for] for r in self.run]
            fields["ready"] = [self.ready, self.ready_timeout_s]
            fields["files"] = {p: hashlib.sha256(b).hexdigest() for p, b in self.files}
        return fields


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
    return parse_system(path.stem, table, str(path), base=path.parent)


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


_LINE = re.compile(r"[^\x00-\x1f\x7f]{1,1000}")  # one line of a unit file: no control characters
_RUN_NAME = re.compile(r"[a-z][a-z0-9-]{0,30}")
_USER = re.compile(r"[a-z][a-z0-9-]{0,30}")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,60}=[^\x00-\x1f\x7f\"\\]{0,500}")
_GUEST_PATH = re.compile(r"/(?:usr/local|etc/abibench)(?:/[A-Za-z0-9_][A-Za-z0-9_.+-]{0,80}){1,6}")
_WAIT_PATH = re.compile(r"/[A-Za-z0-9_./+-]{1,200}")
FILE_MAX_BYTES = 1 << 20


def _run_entry(item: Mapping[str, object], names: set[str], where: str) -> RunEntry:
    bad = f"{where}: [[system.run]]"
    unknown = sorted(set(item) - set(RUN_KEYS))
    if unknown:
        raise ProfileError(f"{bad} has no key {unknown[0]!r}; the keys are {', '.join(RUN_KEYS)}")
    name, cmd = item.get("name"), item.get("command")
    user, wait = item.get("user", "root"), item.get("wait_for", "")
    after, env = item.get("after", []), item.get("environment", [])
    if not isinstance(name, str) or not _RUN_NAME.fullmatch(name) or name in names:
        raise ProfileError(f"{bad} name must be a new lower-case name (letters, digits, '-')")
    if not isinstance(cmd, str) or not _LINE.fullmatch(cmd) or not cmd.startswith("/"):
        raise ProfileError(f"{bad} {name}: command must be one line starting with an absolute "
                           "path")
    if not isinstance(user, str) or not _USER.fullmatch(user):
        raise ProfileError(f"{bad} {name}: user must be a user name (lower-case, digits, '-')")
    if not isinstance(after, list) or not all(isinstance(a, str) and a in names for a in after):
        raise ProfileError(f"{bad} {name}: after must list run entries named before it")
    if not isinstance(env, list) or not all(isinstance(e, str) and _ENV.fullmatch(e)
                                            for e in env):
        raise ProfileError(f"{bad} {name}: environment must be a list of KEY=value (one line, "
                           "no quotes or backslashes)")
    if not isinstance(wait, str) or (wait and (not _WAIT_PATH.fullmatch(wait) or ".." in wait)):
        raise ProfileError(f"{bad} {name}: wait_for must be an absolute path")
    return RunEntry(name, cmd, user, tuple(after), tuple(env), wait)


def _run(items: object, where: str) -> tuple[RunEntry, ...]:
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ProfileError(f"{where}: [[system.run]] must be tables")
    out: list[RunEntry] = []
    for item in items:
        out.append(_run_entry(item, {r.name for r in out}, where))
    return tuple(out)


def _files(table: object, base: Path | None, where: str) -> tuple[tuple[str, bytes], ...]:
    """[system.files]: guest path = a file beside the profile (under its directory only)."""
    if not isinstance(table, dict):
        raise ProfileError(f"{where}: [system.files] must be a table of guest path = file")
    out = []
    for guest, src in sorted(table.items()):
        if not _GUEST_PATH.fullmatch(guest) or "/." in guest:
            raise ProfileError(f"{where}: [system.files] {guest[:80]!r}: a guest path is under "
                               "/usr/local or /etc/abibench")
        if base is None or not isinstance(src, str) or not src or src.startswith("/") \
                or ".." in Path(src).parts:
            raise ProfileError(f"{where}: [system.files] {guest}: give a file beside the profile "
                               "(a relative path, no '..')")
        try:
            out.append((guest, read_regular(base / src, FILE_MAX_BYTES)))
        except (OSError, ValueError) as exc:
            raise ProfileError(f"{where}: [system.files] {guest}: cannot read {src} "
                               f"({one_line(str(exc))[:120]}); fix the path") from None
    return tuple(out)


def parse_system(name: str, t: Mapping[str, object], where: str,
                 base: Path | None = None) -> SystemProfile:
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
        published=_published(t.get("published", []), where),
        run=_run(t.get("run", []), where), ready=_ready(t.get("ready", ""), where),
        ready_timeout_s=_int(t, "ready_timeout", 900, 1, 7200, where),
        files=_files(t.get("files", {}), base, where))


def _ready(v: object, where: str) -> str:
    if not isinstance(v, str) or len(v) > 65536 or "\x00" in v:
        raise ProfileError(f"{where}: [system] ready is a bash script (text, < 64 kB)")
    return v
