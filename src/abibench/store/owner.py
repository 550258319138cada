"""Which process owns a running run, and whether that process is still alive.

A run is written by one process. If that process dies without marking the run (SIGKILL, power
loss, a store that can no longer be written), the stored status stays `running` for ever. The
store keeps the owner's identity with the run and judges it when the run is read: a pid alone
is not enough, since pids are reused, so the process's start time (field 22 of /proc/PID/stat,
in clock ticks since boot) and the boot id pin down one process of one boot of one host.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
BOOT_ID = PROC / "sys" / "kernel" / "random" / "boot_id"

RUNNING = "running"
ABANDONED = "abandoned"


@dataclass(frozen=True)
class Owner:
    """One process of one boot of one host."""

    pid: int
    start: int | None  # clock ticks after boot; None where /proc is not readable
    boot: str | None
    host: str


def boot_id() -> str | None:
    try:
        return BOOT_ID.read_text().strip() or None
    except OSError:
        return None


def start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat; None when no live process has this pid (a zombie is dead)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces and ')'.
    rest = stat[stat.rfind(")") + 2:].split()
    if len(rest) < 20 or rest[0] in ("Z", "X"):
        return None
    try:
        return int(rest[19])  # rest[0] is field 3
    except ValueError:
        return None


def current() -> Owner:
    """This process."""
    pid = os.getpid()
    return Owner(pid, start_time(pid), boot_id(), socket.gethostname())


def is_gone(owner: Owner, here: Owner) -> bool:
    """Whether the owner has certainly died; a process of another host cannot be judged."""
    if owner.host != here.host:
        return False
    if owner.boot is not None and here.boot is not None and owner.boot != here.boot:
        return True
    started = start_time(owner.pid)
    if started is None:
        return True
    # Same pid, another process: the pid was reused after the owner died.
    return owner.start is not None and started != owner.start


def effective_status(stored: str, owner: Owner | None, here: Owner) -> str:
    """The status a run reads as: `abandoned` when it is `running` but its owner is gone."""
    if stored != RUNNING or owner is None:
        return stored
    return ABANDONED if is_gone(owner, here) else stored
