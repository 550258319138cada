"""A system run's records (sysrecords.py) made from what run/sysboot.py booted and parsed.

The boot's report was parsed from verified frames only, every free-form field cleaned and cut
to its length there; this module only copies it into the records the store keeps, so the store,
`export` and every report read the same thing whether the run was measured here or imported.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..obtain.sysimage import SystemImage
from ..obtain.syskernel import SystemKernel
from ..sysrecords import (
    SystemBoot,
    SystemConfig,
    SystemPhase,
    SystemPublished,
)
from ..text import one_line
from ..workloads.system import SystemProfile
from .sysboot import Combination, Phase, SysBoot


def system_config(profile: SystemProfile, combos: Sequence[Combination], boots: int, seed: int,
                  kernels: dict[str, SystemKernel],
                  images: dict[str, SystemImage]) -> SystemConfig:
    """What the run boots: the profile, and each kernel's package and each disk's key."""
    return SystemConfig(
        profile=profile.id, description=profile.description, release=profile.release,
        memory_mb=profile.memory_mb, boots=boots, seed=seed,
        combinations=tuple(f"{c.kernel}:{c.userspace}" for c in combos),
        kernels={f: k.label() for f, k in kernels.items()},
        images={i.arch: i.key for i in images.values()},
        load=bool(profile.load), settle_s=profile.settle_s,
        published=tuple(SystemPublished(p.what, p.hardware, p.increase_pct, p.mb_32, p.mb_64)
                        for p in profile.published))


# What a resumed run must boot exactly as its stored boots did: the same disks and kernels,
# memory, settling and load (its combinations, boots and seed are read from the run itself).
SAME_SYSTEM = ("release", "memory_mb", "settle_s", "load", "kernels", "images")


def system_mismatch(recorded: SystemConfig, now: SystemConfig) -> str | None:
    """Why boots made now would not be more boots of the recorded run (the first field that
    differs, both values), or None: a resume never mixes two systems in one run."""
    for name in SAME_SYSTEM:
        was, is_ = getattr(recorded, name), getattr(now, name)
        if was != is_:
            return (f"its {name} was {one_line(str(was))[:160]}, now {one_line(str(is_))[:160]}")
    return None


def phase_record(ph: Phase) -> SystemPhase:
    """A phase as stored: the parser made its processes and mappings as records already (one
    type for what the guest reported and what is stored), so only the containers change."""
    return SystemPhase(
        state=ph.state, uptime_s=ph.uptime_s, meminfo=dict(ph.meminfo),
        kernel_image=dict(ph.kernel_image),
        processes=tuple(ph.processes), mappings=tuple(ph.mappings),
        threads={str(pid): n for pid, n in ph.threads.items()}, zoneinfo=dict(ph.zoneinfo),
        ready=ph.ready)


def boot_record(index: int, b: SysBoot) -> SystemBoot:
    """One boot as stored: its place in the run's order, and what its guest reported."""
    r = b.report
    return SystemBoot(
        index=index, kernel=b.combination.kernel, userspace=b.combination.userspace,
        ended=b.ended, seconds=max(b.seconds, 0.0), complete=r is not None and r.complete,
        release=r.release if r else "", machine=r.machine if r else "",
        load_status=r.load_status if r else None, console_tail=b.console_tail,
        load_work=dict(r.load_work) if r else {}, load_s=r.load_s if r else None,
        load_guard_s=r.load_guard_s if r else 0,
        phases={name: phase_record(ph) for name, ph in r.phases.items()} if r else {})
