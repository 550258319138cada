"""What runs after boot in a whole system: the profile's [[system.run]] entries as systemd units.

Each entry becomes `abibench-run-NAME.service`, wanted by multi-user.target, so its processes
live in a cgroup of their own and the measuring service reports their memory per unit (the X
server, the window manager and the browser apart). The profile's `ready` script becomes
`abibench-ready.service`, a oneshot ordered after every run entry: a target orders itself after
the units it wants (systemd.target(5)), so multi-user.target, and after it the measuring
service (obtain/sysimage.REPORT_UNIT), wait until the system is in the state to measure (the
page has loaded), an event rather than a guessed delay. A ready script that fails or times out
leaves the system `degraded`, which the report shows.

The unit files are pure text; `install` writes them, the users, the packed files and the ready
script into the image's tree (called by obtain/sysimage.customise).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..workloads.system import RunEntry, SystemProfile

READY_UNIT = "abibench-ready.service"
READY_SCRIPT = "/etc/abibench/ready"
FIRST_UID = 1000  # the first user id Debian gives a person (adduser.conf's FIRST_UID)


def _unit_text(s: str) -> str:
    """systemd expands '%' specifiers in these settings: a literal '%' is written '%%'."""
    return s.replace("%", "%%")


def unit_name(entry: RunEntry) -> str:
    return f"abibench-run-{entry.name}.service"


def run_unit(profile_id: str, entry: RunEntry) -> str:
    """The service of one run entry. Restart on failure: a program that lost a race with what
    it needs (a display not yet up) comes back instead of leaving the system half-started."""
    after = " ".join(f"abibench-run-{a}.service" for a in entry.after)
    lines = ["[Unit]", f"Description=abibench system {profile_id}: {entry.name}"]
    if after:
        lines += [f"After={after}", f"Wants={after}"]
    lines += ["", "[Service]", "Type=simple", f"User={entry.user}"]
    if entry.user != "root":
        lines.append("WorkingDirectory=~")
    lines += [f'Environment="{_unit_text(e)}"' for e in entry.environment]
    if entry.wait_for:
        # The unit's own wait, bounded by systemd's start timeout (TimeoutStartSec below).
        lines.append(f"ExecStartPre=/bin/sh -c 'until [ -e {entry.wait_for} ]; do sleep 1; done'")
    lines += [f"ExecStart={_unit_text(entry.command)}", "Restart=on-failure", "RestartSec=5",
              "TimeoutStartSec=900", "StandardOutput=journal", "StandardError=journal", "",
              "[Install]", "WantedBy=multi-user.target", ""]
    return "\n".join(lines)


def ready_unit(profile: SystemProfile) -> str:
    after = " ".join(unit_name(r) for r in profile.run)
    return "\n".join([
        "[Unit]", f"Description=abibench system {profile.id}: ready to measure",
        *([f"After={after}"] if after else []), "",
        "[Service]", "Type=oneshot", "RemainAfterExit=yes", f"ExecStart=/bin/bash {READY_SCRIPT}",
        # Each check's line to the console too (the first serial port): a boot that never
        # reports keeps the console's last lines, so even then the last check says why.
        f"TimeoutStartSec={profile.ready_timeout_s}", "StandardOutput=journal+console", "",
        "[Install]", "WantedBy=multi-user.target", ""])


def units(profile: SystemProfile) -> dict[str, str]:
    """Every unit file the profile adds (file name -> text); empty for a profile with none."""
    out = {unit_name(r): run_unit(profile.id, r) for r in profile.run}
    if profile.ready:
        out[READY_UNIT] = ready_unit(profile)
    return out


def new_users(profile: SystemProfile, passwd: str) -> list[str]:
    """The run entries' users that /etc/passwd (its text) lacks, in the order first named."""
    have = {line.split(":", 1)[0] for line in passwd.splitlines() if ":" in line}
    return [u for u in dict.fromkeys(r.user for r in profile.run) if u not in have]


def user_lines(name: str, passwd: str, group: str) -> tuple[str, str, str]:
    """The passwd, group and shadow lines of a new user: the first id from FIRST_UID free in
    both files, its own group, home /home/NAME, a locked password (nobody logs in)."""
    taken = set()
    for text in (passwd, group):
        for line in text.splitlines():
            parts = line.split(":")
            if len(parts) > 2 and parts[2].isdigit():
                taken.add(int(parts[2]))
    uid = next(i for i in range(FIRST_UID, 60000) if i not in taken)
    return (f"{name}:x:{uid}:{uid}:abibench system user:/home/{name}:/bin/sh",
            f"{name}:x:{uid}:", f"{name}:!:19000:0:99999:7:::")


def install(root: Path, profile: SystemProfile) -> None:
    """Write what runs after boot into the tree at `root`: users, files, units, ready script."""
    etc = root / "etc"
    for name in new_users(profile, (etc / "passwd").read_text()):
        lines = user_lines(name, (etc / "passwd").read_text(), (etc / "group").read_text())
        for fname, line in zip(("passwd", "group", "shadow"), lines, strict=True):
            with (etc / fname).open("a") as fh:
                fh.write(line + "\n")
        uid = int(lines[0].split(":")[2])
        home = root / "home" / name
        home.mkdir(parents=True, exist_ok=True)
        os.chown(home, uid, uid)
        os.chmod(home, 0o750)
    for guest, data in profile.files:
        dest = root / guest.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        os.chmod(dest, 0o644)
    systemd = etc / "systemd/system"
    wants = systemd / "multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    for fname, text in units(profile).items():
        (systemd / fname).write_text(text)
        link = wants / fname
        if not link.is_symlink():
            os.symlink(f"/etc/systemd/system/{fname}", link)
    if profile.ready:
        script = root / READY_SCRIPT.lstrip("/")
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(profile.ready)
