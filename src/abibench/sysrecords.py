"""The records of a whole-system run (abibench system run): what each boot's guest reported.

A system run is a run of its own kind in the one run format: its `RunConfig.system` says what
was booted (the profile, the kernels' package versions, the disks' keys, the release, the
memory size, the number of boots and the seed) and `RunDoc.system_boots` holds one
`SystemBoot` per boot, stored the moment the boot ends (store/sql.py, table `system_boots`).
It has no samples: a system boot is no execution of a workload's target, and its numbers
never enter a timing statistic. The store, `export`, `import` and every report read these
records only; `run/sysrecord.py` makes them from the guest's parsed report.

The guest is untrusted and so is an imported file: `check_system` holds every system record to
what a guest can report (the invariant "a system record is what a guest can report"), in one
place, on top of the codec's types, finiteness and non-negative quantities.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields, is_dataclass

from .codec import QUANTITY, Invalid, rule

PHASES = ("idle", "load")
# The longest text a guest's report holds (run/sysboot.py cuts every field to these or less):
# a console tail is 600 characters, a cgroup 300; anything longer did not come from a guest.
MAX_TEXT = 1000
# More entries than a 1 GB guest can have processes, mappings or meminfo lines: a file with
# more is not a system's report but an attempt to make the reader slow.
MAX_ITEMS = 100_000


@dataclass(frozen=True)
class SystemProcess:
    """A user process when measured: its PSS and RSS (smaps_rollup), name and cgroup."""

    pid: int = field(metadata=QUANTITY)
    pss_kb: int = field(metadata=QUANTITY)
    rss_kb: int = field(metadata=QUANTITY)
    comm: str
    cgroup: str

    @property
    def unit(self) -> str:
        """The systemd unit (or scope, or slice) the process runs in: its cgroup's last part."""
        return self.cgroup.rstrip("/").rsplit("/", 1)[-1] or "/"


@dataclass(frozen=True)
class SystemMapping:
    """A big process's mappings of one name (a file, [heap], [anon], "[anon N kB]"), summed
    from /proc/PID/smaps (native/sysreport.c's breakdown)."""

    pid: int = field(metadata=QUANTITY)
    name: str
    count: int = field(metadata=QUANTITY)
    size_kb: int = field(metadata=QUANTITY)
    rss_kb: int = field(metadata=QUANTITY)
    pss_kb: int = field(metadata=QUANTITY)
    anon_kb: int = field(metadata=QUANTITY)


@dataclass(frozen=True)
class SystemPhase:
    """One measurement of the settled system: idle, or under the profile's load."""

    state: str  # systemctl is-system-running: running, degraded, starting...
    uptime_s: float = field(metadata=QUANTITY)  # guest time since its boot: emulation time
    meminfo: dict[str, int] = field(default_factory=dict)  # kB, every /proc/meminfo line
    kernel_image: dict[str, int] = field(default_factory=dict)  # /proc/iomem "Kernel ...": bytes
    processes: tuple[SystemProcess, ...] = ()
    mappings: tuple[SystemMapping, ...] = ()  # of processes above 16 MiB of PSS
    threads: dict[str, int] = field(default_factory=dict)  # pid -> threads, the same processes
    # /proc/zoneinfo, kB, "ZONE.FIELD": the watermarks (min, low, high), spanned, present and
    # managed memory and the largest lowmem_reserve ("protection") of each zone
    zoneinfo: dict[str, int] = field(default_factory=dict)
    # the profile's ready check's last line (the desktop's page check): why a system measured
    # `degraded` never became ready; empty for a profile without a ready script
    ready: str = ""


@dataclass(frozen=True)
class SystemBoot:
    """One boot of one kernel/userspace combination, as its guest reported it."""

    index: int = field(metadata=QUANTITY)  # its place in the run's boot order, from 0
    kernel: str  # the kernel flavour: "amd64", "686-pae"
    userspace: str = field(metadata=rule(id="abi"))  # the userspace's ABI: "i386", "x86_64"
    ended: str  # how qemu ended: powered off, the deadline, interrupted...
    seconds: float = field(metadata=QUANTITY)  # qemu's start to its exit: emulation time
    complete: bool  # the guest's END frame came and counted every frame before it
    release: str = ""  # the guest kernel's uname release
    machine: str = ""
    load_status: int | None = None  # the profile's load's exit status
    console_tail: str = ""  # the console's last lines, when the report was incomplete
    phases: dict[str, SystemPhase] = field(default_factory=dict)
    load_work: dict[str, int] = field(default_factory=dict)  # what the load counted doing
    load_s: float | None = field(default=None, metadata=QUANTITY)  # its duration, guest time
    load_guard_s: int = field(default=0, metadata=QUANTITY)  # the limit that stopped it, or 0

    @property
    def combination(self) -> str:
        return f"{self.kernel}:{self.userspace}"

    @property
    def ok(self) -> bool:
        """A boot that counts: a complete report with the idle measurement."""
        return self.complete and "idle" in self.phases


@dataclass(frozen=True)
class SystemPublished:
    """A figure someone else measured on their hardware, shown beside ours, never mixed in."""

    what: str
    hardware: str
    increase_pct: float
    mb_32: float | None = field(default=None, metadata=QUANTITY)
    mb_64: float | None = field(default=None, metadata=QUANTITY)


@dataclass(frozen=True)
class SystemConfig:
    """What a system run booted: the provenance of every boot it stores."""

    profile: str  # the profile's id: minimal, server, or a file's stem
    description: str
    release: str  # Debian's release of every disk
    memory_mb: int = field(metadata=QUANTITY)
    boots: int = field(metadata=QUANTITY)  # asked per combination
    seed: int  # of the boots' random order
    combinations: tuple[str, ...]  # "kernel:userspace", in the order asked
    kernels: dict[str, str] = field(default_factory=dict)  # flavour -> "package version"
    images: dict[str, str] = field(default_factory=dict)  # Debian arch -> the disk's key
    load: bool = False  # whether the profile has a load phase
    settle_s: int = field(default=0, metadata=QUANTITY)
    published: tuple[SystemPublished, ...] = ()


def _texts(value: object, at: str) -> Iterable[tuple[str, str]]:
    """Every string in a record (field values and mapping keys), with its `$.path`."""
    if isinstance(value, str):
        yield at, value
    elif is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            yield from _texts(getattr(value, f.name), f"{at}.{f.name}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield f"{at}.<key>", k
            yield from _texts(v, f"{at}.{k[:40]}")
    elif isinstance(value, tuple | list):
        for i, v in enumerate(value):
            yield from _texts(v, f"{at}[{i}]")


def _sizes(value: object, at: str) -> Iterable[tuple[str, int]]:
    if is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            yield from _sizes(getattr(value, f.name), f"{at}.{f.name}")
    elif isinstance(value, dict | tuple | list):
        yield at, len(value)
        for v in (value.values() if isinstance(value, dict) else value):
            yield from _sizes(v, at)


def check_system(config: SystemConfig | None, boots: Iterable[SystemBoot],
                 at_config: str = ".run.config.system") -> None:
    """Raise `Invalid` at the first place a system record is not what a guest reports: a text
    longer than MAX_TEXT, a list or mapping of more than MAX_ITEMS, a phase not idle or load,
    a boot of a combination the run did not ask for, boots out of their order or twice."""
    listed = list(boots)
    records: list[tuple[str, object]] = [(f".system_boots[{i}]", b) for i, b in enumerate(listed)]
    if config is not None:
        records.insert(0, (at_config, config))
    elif listed:
        raise Invalid("system boots without the run's system configuration").at(at_config)
    for at, rec in records:
        for where, text in _texts(rec, ""):
            if len(text) > MAX_TEXT:
                raise Invalid(f"a text of {len(text)} characters; a system's report holds at "
                              f"most {MAX_TEXT}").at(where).at(at)
        for where, n in _sizes(rec, ""):
            if n > MAX_ITEMS:
                raise Invalid(f"{n} entries; a system's report holds at most {MAX_ITEMS}"
                              ).at(where).at(at)
    for i, b in enumerate(listed):
        if i and b.index <= listed[i - 1].index:
            raise Invalid(f"boot {b.index} after boot {listed[i - 1].index}: a run's boots are "
                          "in the order booted, each once").at(".index").at(
                              f".system_boots[{i}]")
        for name in b.phases:
            if name not in PHASES:
                raise Invalid(f"phase {name[:40]!r} is not one of {', '.join(PHASES)}"
                              ).at(".phases").at(f".system_boots[{i}]")
        if config is not None and b.combination not in config.combinations:
            raise Invalid(f"combination {b.combination[:80]!r} is not one the run booted "
                          f"({', '.join(config.combinations)[:200]})"
                          ).at(".kernel").at(f".system_boots[{i}]")
