"""Whole systems booted per kernel/userspace combination (abibench system run).

Each combination is one of Debian's kernels (obtain/syskernel.py) booting one userspace's disk
(obtain/sysimage.py) under its machine's QEMU (run/qemuargs.py: the PC for x86, the `virt` board
for ARM; TCG, never KVM), with a fixed memory size. The disk is attached with `snapshot=on`: the
writes of a boot go to an overlay qemu makes in the boot's own directory (its TMPDIR), so the
cached image never changes and nothing of a boot outlives it. The system's own measuring service
(native/sysreport.c) reports on a port of its own (a second serial port, or a virtio one) in
hashed frames, read by `run/vm.verified_frames` only: nothing on a screen or console is ever
scraped. qemu is started and stopped exactly as `abibench vm` does it (run/vm.run_guest: its own
session, killed by PID on every way out).

Time under TCG is QEMU's translation, not the machine's: every time here is "emulation time".
"""

from __future__ import annotations

import random
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..abi import ABIS, Abi
from ..errors import HostError, UsageError
from ..obtain.apt import AptCache
from ..obtain.sysimage import SystemImage, build_image
from ..obtain.syskernel import SystemKernel, common_version, system_kernel
from ..outputs import write_output
from ..sysrecords import SystemMapping, SystemProcess
from ..text import one_line
from ..workloads.system import SystemProfile
from ..workspace import clean_stale, owned_dir
from . import qemuargs
from .vm import run_guest, verified_frames

BASE_CMDLINE = ("panic=-1", "quiet")
# A TCG boot of systemd to multi-user took 80-110 s here; the whole boot may take this many
# times the settling and load time on top of its boot allowance before it is abandoned.
BOOT_ALLOWANCE_S = 600.0


@dataclass(frozen=True)
class Combination:
    """A kernel flavour booting a userspace ABI's system."""

    kernel: str  # a syskernel.KERNELS key (the ABI table's system_kernel)
    userspace: str  # an ABI name

    @property
    def label(self) -> str:
        return f"{self.kernel} kernel + {self.userspace}"

    @property
    def bits(self) -> tuple[int, int]:
        """(kernel, userspace) pointer width."""
        return (kernel_abi(self.kernel).pointer_bits, ABIS[self.userspace].pointer_bits)


def kernel_abi(flavour: str) -> Abi:
    """The ABI a kernel flavour is built for (the ABI table's system_kernel)."""
    return next(a for a in ABIS.values() if a.system_kernel == flavour)


def family_combinations(family: str) -> tuple[Combination, ...]:
    """A family's 32-bit kernel with its 32-bit userspace, then its 64-bit kernel with each:
    the three systems the studies compared (all-32, 64-bit kernel with 32-bit userspace, all-64)."""
    own = [a for a in ABIS.values() if a.family == family and a.system_kernel]
    small = [a for a in own if a.pointer_bits == 32]
    big = [a for a in own if a.pointer_bits == 64]
    return tuple([*(Combination(a.system_kernel, a.name) for a in small),
                  *(Combination(b.system_kernel, a.name) for b in big for a in small),
                  *(Combination(b.system_kernel, b.name) for b in big)])


X86 = family_combinations("x86")
ARM = family_combinations("arm")
# Every family whose ABIs name a system kernel, in the table's order.
FAMILIES = tuple(dict.fromkeys(a.family for a in ABIS.values() if a.system_kernel))


def every_combination() -> tuple[Combination, ...]:
    return tuple(c for f in FAMILIES for c in family_combinations(f))


def parse_combinations(text: str | None, family: str = "x86") -> tuple[Combination, ...]:
    """`--combo 686-pae:i386,arm64:armhf` (kernel:userspace), or every combination of
    `family` ("all": of every family)."""
    known = every_combination()
    if not text:
        if family == "all":
            return known
        if family not in FAMILIES:
            raise UsageError(f"--family {one_line(family)[:20]}: abibench boots whole systems "
                             f"of {', '.join((*FAMILIES, 'all'))}")
        return family_combinations(family)
    out = []
    for part in text.split(","):
        kernel, _, user = part.strip().partition(":")
        combo = Combination(kernel, user)
        if combo not in known:
            raise UsageError(f"--combo {one_line(part)[:40]}: abibench boots "
                             f"{', '.join(f'{c.kernel}:{c.userspace}' for c in known)}")
        out.append(combo)
    return tuple(dict.fromkeys(out))


# ---------------------------------------------------------------------------------- the report


@dataclass
class Phase:
    """One measurement of the settled system (idle, or under the profile's load)."""

    state: str = ""  # systemctl is-system-running: running, degraded, starting...
    uptime_s: float = 0.0  # guest time since its boot: emulation time
    meminfo: dict[str, int] = field(default_factory=dict)  # kB
    kernel_image: dict[str, int] = field(default_factory=dict)  # /proc/iomem "Kernel ...": bytes
    processes: list[SystemProcess] = field(default_factory=list)
    mappings: list[SystemMapping] = field(default_factory=list)  # of processes above 16 MiB PSS
    threads: dict[int, int] = field(default_factory=dict)  # pid -> threads, the same processes
    # /proc/zoneinfo, kB: "ZONE.FIELD" (min, low, high, spanned, present, managed, protection)
    zoneinfo: dict[str, int] = field(default_factory=dict)
    ready: str = ""  # the profile's ready check's last line (why a system never became ready)


@dataclass(frozen=True)
class SysReport:
    release: str
    machine: str
    phases: dict[str, Phase]
    load_status: int | None
    complete: bool  # the END frame came, and counted every frame before it
    load_work: dict[str, int] = field(default_factory=dict)  # what the load counted doing
    load_s: float | None = None  # the load's duration (guest time: emulation time)
    load_guard_s: int = 0  # the time limit that stopped the load, or 0: it ended by itself


_HEX = r"((?:[0-9a-f]{2})+|-)"
_PHASE = r"(idle|load)"
_FRAMES = {
    "begin": re.compile(rf"ABIBENCH-SYS 1 BEGIN {_HEX} {_HEX}"),
    "end": re.compile(r"ABIBENCH-SYS 1 END (\d+)"),
    "Y": re.compile(rf"Y {_PHASE} {_HEX}"),
    "S": re.compile(rf"S {_PHASE} (\d{{1,15}})"),
    "R": re.compile(rf"R {_PHASE} {_HEX}"),
    "M": re.compile(rf"M {_PHASE} ([A-Za-z0-9_]{{1,60}}) (\d{{1,15}})"),
    "K": re.compile(rf"K {_PHASE} {_HEX} (\d{{1,15}})"),
    "P": re.compile(rf"P {_PHASE} (\d{{1,10}}) (\d{{1,15}}) (\d{{1,15}}) {_HEX} {_HEX}"),
    "G": re.compile(rf"G {_PHASE} (\d{{1,10}}) {_HEX}" + r" (\d{1,15})" * 5),
    "T": re.compile(rf"T {_PHASE} (\d{{1,10}}) (\d{{1,9}})"),
    "X": re.compile(r"X load (-?\d{1,5})"),
    "Z": re.compile(rf"Z {_PHASE} {_HEX} (min|low|high|spanned|present|managed|protection) "
                    r"(\d{1,15})"),
    "C": re.compile(rf"C load {_HEX} (\d{{1,15}})"),
    "D": re.compile(r"D load (\d{1,12}) (\d{1,6})"),
}


def _text(field_: str) -> str:
    return "" if field_ == "-" else one_line(bytes.fromhex(field_).decode("utf-8", "replace"))


class SysReportError(ValueError):
    """No BEGIN frame: the system reported nothing."""


def _apply(kind: str, m: re.Match[str], phases: dict[str, Phase]) -> None:
    ph = phases.setdefault(m[1], Phase())
    if kind == "Y":
        ph.state = _text(m[2])[:40]
    elif kind == "S":
        ph.uptime_s = int(m[2]) / 1000
    elif kind == "R":
        ph.ready = _text(m[2])[:400]
    elif kind == "M":
        ph.meminfo[m[2]] = int(m[3])
    elif kind == "K":
        name = _text(m[2])[:60]
        ph.kernel_image[name] = ph.kernel_image.get(name, 0) + int(m[3])
    elif kind == "P":
        ph.processes.append(SystemProcess(int(m[2]), int(m[3]), int(m[4]), _text(m[5])[:60],
                                    _text(m[6])[:300]))
    elif kind == "G":
        ph.mappings.append(SystemMapping(int(m[2]), _text(m[3])[:160],
                                         *map(int, m.groups()[3:8])))
    elif kind == "T":
        ph.threads[int(m[2])] = int(m[3])
    elif kind == "Z":
        ph.zoneinfo[f"{_text(m[2])[:32]}.{m[3]}"] = int(m[4])


@dataclass
class _LoadFrames:
    """The load's frames: its exit status (X), what it counted (C), its duration (D)."""

    status: int | None = None
    work: dict[str, int] = field(default_factory=dict)
    seconds: float | None = None
    guard_s: int = 0

    def take(self, t: str) -> bool:
        if (x := _FRAMES["X"].fullmatch(t)) is not None:
            self.status = int(x[1])
        elif (c := _FRAMES["C"].fullmatch(t)) is not None:
            if len(self.work) < 16:  # the guest sends at most 16
                self.work[_text(c[1])[:32]] = int(c[2])
        elif (d := _FRAMES["D"].fullmatch(t)) is not None:
            self.seconds, self.guard_s = int(d[1]) / 1000, int(d[2])
        else:
            return False
        return True


def parse_sysreport(data: bytes) -> SysReport:
    """Every verified frame of the system's report; nothing guessed (see run/vm.verified_frames).
    Frames are numbers and hex, so nothing a process names itself can end or forge one."""
    texts = verified_frames(data)
    begin = next((m for m in map(_FRAMES["begin"].fullmatch, texts) if m), None)
    if begin is None:
        raise SysReportError("the system reported nothing (no BEGIN frame)")
    phases: dict[str, Phase] = {}
    load = _LoadFrames()
    end: int | None = None
    counted = 0
    for t in texts:
        e = _FRAMES["end"].fullmatch(t)
        if e is not None:
            end = int(e[1])
            break
        counted += 1
        if load.take(t):
            continue
        for kind in ("Y", "R", "S", "M", "K", "P", "G", "T", "Z"):
            m = _FRAMES[kind].fullmatch(t)
            if m is not None:
                _apply(kind, m, phases)
                break
    return SysReport(_text(begin[1]), _text(begin[2]), phases, load.status,
                     complete=end is not None and end == counted, load_work=load.work,
                     load_s=load.seconds, load_guard_s=load.guard_s)


# -------------------------------------------------------------------------------------- booting


@dataclass(frozen=True)
class SysBoot:
    combination: Combination
    report: SysReport | None
    seconds: float  # qemu's start to its exit: emulation time
    ended: str
    console_tail: str
    raw: bytes = b""  # the guest's report as it arrived (what --keep-reports writes)

    @property
    def ok(self) -> bool:
        return self.report is not None and self.report.complete and "idle" in self.report.phases


def machine_of(combo: Combination) -> qemuargs.Machine:
    """The board the combination's kernel boots on, with its emulator found on this host."""
    abi = kernel_abi(combo.kernel)
    exe = shutil.which(abi.system_emulator)
    if exe is None:
        raise HostError(f"{abi.system_emulator} not found: apt-get install "
                        f"{abi.system_emulator_package} (or bash setup.sh)")
    return qemuargs.machine_of(abi, exe)


def qemu_argv(machine: qemuargs.Machine, kernel: SystemKernel, disk: Path, memory_mb: int,
              console: Path, report: Path, cmdline: str) -> list[str]:
    """The machine (run/qemuargs.py): TCG, fixed memory, one CPU, no network or display; the
    disk on virtio with its writes in a snapshot overlay; console and report each a file."""
    return qemuargs.qemu_argv(machine, memory_mb, console, report, kernel.image, kernel.initrd,
                              cmdline, disk=disk)


def cmdline(profile: SystemProfile, machine: qemuargs.Machine) -> str:
    """The kernel's command line: its console and the report's port, no messages, a panic
    ends the machine; and the measuring service's timing (native/sysreport.c reads it from
    /proc/cmdline)."""
    return " ".join((*qemuargs.kernel_cmdline_console(machine), *BASE_CMDLINE,
                     f"abibench.settle={profile.settle_s}",
                     f"abibench.load_seconds={profile.load_seconds}",
                     f"abibench.load_after={profile.load_after_s}"))


def allowance_of(profile: SystemProfile) -> float:
    """Seconds until the report must have begun: the boot's, and the profile's ready script's
    limit when it has one (the measuring service starts only once the system is ready)."""
    return BOOT_ALLOWANCE_S + (profile.ready_timeout_s if profile.ready else 0)


def deadline_of(profile: SystemProfile) -> float:
    """The boot's allowance, the settling, the load's guard and the wait after it, and two
    minutes to measure and stop."""
    return (allowance_of(profile) + profile.settle_s + 120.0
            + (profile.load_seconds + profile.load_after_s if profile.load else 0))


def boot_once(combo: Combination, kernel: SystemKernel, image: SystemImage,
              profile: SystemProfile, deadline_s: float,
              on_start: Callable[[int], None] | None = None) -> SysBoot:
    """One boot to the system's report and power-off, or to the deadline."""
    machine = machine_of(combo)
    with owned_dir(".sys") as work:
        console, report = work / "console.log", work / "report"
        argv = qemu_argv(machine, kernel, image.path, profile.memory_mb, console, report,
                         cmdline(profile, machine))
        ended, seconds = run_guest(argv, work, report, deadline_s,
                                   allowance_s=min(deadline_s, allowance_of(profile)),
                                   on_start=on_start)
        data = report.read_bytes() if report.is_file() else b""
        try:
            parsed: SysReport | None = parse_sysreport(data)
        except SysReportError:
            parsed = None
        tail = ""
        if parsed is None or not parsed.complete:
            text = b"".join(f.read_bytes()[-4000:] for f in (console, work / "qemu.log")
                            if f.is_file())
            tail = " | ".join(one_line(ln) for ln in
                              text.decode("utf-8", "replace").splitlines()[-4:] if ln.strip())
        return SysBoot(combo, parsed, seconds, ended, tail[:600], data)


@dataclass(frozen=True)
class SystemRun:
    profile: SystemProfile
    kernels: dict[str, SystemKernel]
    images: dict[str, SystemImage]
    boots: tuple[SysBoot, ...]


def boot_order(combos: Sequence[Combination], boots: int, seed: int) -> list[Combination]:
    """Every combination `boots` times, each round in a new random order (no combination
    always booted first, while the host is coolest or least loaded)."""
    rng = random.Random(seed)
    order: list[Combination] = []
    for _ in range(boots):
        round_ = list(combos)
        rng.shuffle(round_)
        order += round_
    return order


def pending_boots(combos: Sequence[Combination], boots: int, seed: int,
                  done: frozenset[int] = frozenset()) -> list[tuple[int, Combination]]:
    """The places of the run's boot order still to boot, with their combination: every place
    not in `done` (a resumed run's stored boots), each once, in order. The one place that
    decides what a run or a resumed run boots (the invariant "a resumed system run boots each
    place of its order exactly once")."""
    return [(i, c) for i, c in enumerate(boot_order(combos, boots, seed)) if i not in done]


def kernel_version(combos: Sequence[Combination] = ()) -> str | None:
    """One kernel version for every flavour of every family (a run of one combination then
    compares with the whole matrix's, and x86 with ARM); where apt knows no version common to
    all (a host without an ARM index), one common to the flavours of `combos`' families."""
    apt = AptCache()
    every = list(dict.fromkeys(c.kernel for c in every_combination()))
    families = {kernel_abi(c.kernel).family for c in combos}
    own = list(dict.fromkeys(c.kernel for f in sorted(families) for c in family_combinations(f)))
    return common_version(every, apt) or (common_version(own, apt) if own else None)


def measure(profile: SystemProfile, combos: Sequence[Combination], boots: int, cache_root: Path,
            say: Callable[[str], None] = lambda _: None, seed: int = 0,
            on_ready: Callable[[dict[str, SystemKernel], dict[str, SystemImage]], None]
            | None = None, on_boot: Callable[[int, SysBoot], None] | None = None,
            done_before: frozenset[int] = frozenset(),
            keep_reports: Path | None = None) -> SystemRun:
    """Build (or reuse) the kernels and disks, then boot every combination `boots` times.

    The storing hook: `on_ready` gets the kernels and disks before the first boot (a run's
    provenance), `on_boot` each boot with its place in the order the moment it ends (stored
    then, so a boot done is never lost to a later interrupt); places in `done_before` (a
    resumed run's stored boots) are not booted again; `keep_reports`: a directory for every
    boot's raw report, written through outputs.write_output once the boot is stored."""
    clean_stale(cache_root)  # first: a killed earlier run's qemu, overlays and staging
    if boots < 1:
        raise UsageError("--boots takes a positive number")
    flavours = list(dict.fromkeys(c.kernel for c in combos))
    version = kernel_version(combos)
    kernels = {}
    for f in flavours:
        say(f"kernel {f}: Debian's linux-image-{f} {version or '(newest)'}")
        kernels[f] = system_kernel(f, cache_root, version=version)
    images = {}
    for user in dict.fromkeys(c.userspace for c in combos):
        say(f"system {profile.id} for {ABIS[user].debian_arch}: cached or built with mmdebstrap")
        images[user] = build_image(profile, ABIS[user], cache_root)
    if on_ready is not None:
        on_ready(kernels, images)
    done: list[SysBoot] = []
    order = boot_order(combos, boots, seed)
    for i, combo in pending_boots(combos, boots, seed, done_before):
        say(f"boot {i + 1}/{len(order)}: {combo.label} ({profile.memory_mb} MB, TCG)")
        keep = None if keep_reports is None else \
            keep_reports / f"boot{i + 1:02d}-{combo.kernel}-{combo.userspace}.report"
        b = boot_once(combo, kernels[combo.kernel], images[combo.userspace], profile,
                      deadline_of(profile))
        done.append(b)
        if on_boot is not None:
            on_boot(i, b)
        if keep is not None:  # after the boot is stored: a failed write loses no boot
            write_output(keep, b.raw, "--keep-reports")
        say(f"boot {i + 1}/{len(order)}: {b.ended} after {b.seconds:.0f} s (emulation time)"
            + ("" if b.ok else f"; no complete report: {b.console_tail[:200]}"))
    return SystemRun(profile, kernels, images, tuple(done))
