"""What a guest's measuring service (native/sysreport.c) writes, for tests: hashed frames of
one line each, made from the figures a test wants the guest to report. Tests read them back
through the real parser (run/sysboot.parse_sysreport) and the real record builder
(run/sysrecord.boot_record), so a stored boot in a test is one a guest could have written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from abibench.run.sysboot import Combination, SysBoot, parse_sysreport
from abibench.run.sysrecord import boot_record
from abibench.run.vm import fnv1a
from abibench.sysrecords import SystemBoot, SystemConfig, SystemPublished


def hashed(body: str) -> bytes:
    return f"{body} {fnv1a(body.encode()):08x}\n".encode()


def _hex(raw: bytes) -> str:
    return raw.hex() or "-"


@dataclass(frozen=True)
class GuestPhase:
    """One measurement as the guest reports it (every text as the bytes it writes)."""

    meminfo: dict[str, int]
    state: bytes = b"running"
    uptime_ms: int = 61_500
    image: Sequence[tuple[bytes, int]] = ()  # /proc/iomem "Kernel ..." parts: name, bytes
    processes: Sequence[tuple[int, int, int, bytes, bytes]] = ()  # pid, pss, rss, comm, cgroup
    # pid, name, count, size, rss, pss, anon (kB)
    mappings: Sequence[tuple[int, bytes, int, int, int, int, int]] = ()
    threads: dict[int, int] = field(default_factory=dict)
    ready: bytes = b""  # the ready check's last line; no R frame when empty


def phase_frames(name: str, ph: GuestPhase) -> list[str]:
    frames = [f"Y {name} {_hex(ph.state)}", *([f"R {name} {_hex(ph.ready)}"] if ph.ready else []),
              f"S {name} {ph.uptime_ms}"]
    frames += [f"M {name} {k} {v}" for k, v in ph.meminfo.items()]
    frames += [f"K {name} {_hex(part)} {n}" for part, n in ph.image]
    frames += [f"P {name} {pid} {pss} {rss} {_hex(comm)} {_hex(cg)}"
               for pid, pss, rss, comm, cg in ph.processes]
    frames += [f"G {name} {pid} {_hex(what)} {count} {size} {rss} {pss} {anon}"
               for pid, what, count, size, rss, pss, anon in ph.mappings]
    frames += [f"T {name} {pid} {n}" for pid, n in ph.threads.items()]
    return frames


def guest_report(phases: dict[str, GuestPhase], release: bytes = b"6.1.0-50-amd64",
                 machine: bytes = b"x86_64", load_status: int | None = None,
                 ended: bool = True) -> bytes:
    """A whole report (BEGIN, the phases, the load's status, END counting the frames between);
    `ended=False`: cut before its END, as a deadline cuts one."""
    frames = [f"ABIBENCH-SYS 1 BEGIN {_hex(release)} {_hex(machine)}"]
    for name, ph in phases.items():
        frames += phase_frames(name, ph)
    if load_status is not None:
        frames.append(f"X load {load_status}")
    if ended:
        frames.append(f"ABIBENCH-SYS 1 END {len(frames)}")  # BEGIN counted too
    return b"".join(hashed(f) for f in frames)


def system_boot(index: int, combo: str, used_kb: int, complete: bool = True) -> SystemBoot:
    """A boot as the real path stores it: a server's idle report as the guest writes it,
    parsed (run/sysboot.py) and made a record (run/sysrecord.boot_record); an incomplete boot
    reported nothing."""
    kernel, user = combo.split(":")
    idle = GuestPhase(
        {"MemTotal": 1_000_000, "MemAvailable": 1_000_000 - used_kb, "Slab": 20000,
         "PageTables": 900, "KernelStack": 1500, "Cached": 30000, "Buffers": 800},
        image=[(b"Kernel code", 1 << 24)],
        processes=[(1, 4000, 9000, b"systemd", b"/init.scope"),
                   (300, used_kb // 2, used_kb, b"mariadbd", b"/system.slice/mariadb.service")],
        mappings=[(300, b"[heap]", 1, 90000, 80000, 80000, 80000),
                  (300, b"[anon 131072 kB]", 1, 131072, 40000, 40000, 40000)],
        threads={300: 11})
    machine = b"x86_64" if user == "x86_64" else b"i686"
    report = parse_sysreport(guest_report({"idle": idle}, machine=machine)) if complete else None
    return boot_record(index, SysBoot(Combination(kernel, user), report, 300.0, "powered off",
                                      ""))


def system_config(combos: tuple[str, ...], boots: int, seed: int = 28) -> SystemConfig:
    """A server system run's configuration, as run/sysrecord.system_config records one."""
    return SystemConfig("server", "ssh, cron, MariaDB and nginx", "bookworm", 1024, boots, seed,
                        combos, {"amd64": "linux-image-6.1.0-50-amd64 6.1.176-1"},
                        {"i386": "a1b2", "amd64": "c3d4"}, False, 45,
                        (SystemPublished("64-bit Fedora", "the study's own PCs", 60.0),))
