#!/usr/bin/env python3
"""The desktop system's settle check, natively (issue 28): does the page's title arrive through
Chromium's DevTools at all, and how fast, before a boot spends TCG hours waiting for it.

The desktop image's own tree (i386 and amd64 both run on this host) is mounted read-only from
its cached disk, under a writable tmpfs overlay, in a mount and PID namespace of its own (its
mounts, its loop device and every process it starts end with the namespace, on every path), and
made the root by pivot_root (not chroot: Chromium's namespace sandbox refuses to start in a
chroot). Then the profile's own `[[system.run]]` commands start in their order, as their users,
with their environments and waits, and the profile's own ready script runs, as the image's
units would. It prints the seconds to "the page has loaded" and to "memory settled", and the
CPU seconds the programs used (live processes' user+sys), which load does not inflate.

    sudo .venv/bin/python bench/desktop_native.py --abi x86_64 --abi i386
    sudo .venv/bin/python bench/desktop_native.py --abi i386 --timeout 300

Needs root (a loop mount and pivot_root) and the desktop image (built, or cached).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from abibench.abi import ABIS
from abibench.obtain.sysimage import build_image
from abibench.paths import cache_dir
from abibench.workloads.system import RunEntry, SystemProfile, load_system
from abibench.workspace import owned_dir

# Inside the namespace: mount the disk read-only, a tmpfs overlay over it, the kernel's file
# systems, then pivot_root into it. $1 the disk, $2 the scratch directory.
ENTER = r"""
set -eu
img=$1 w=$2
mount -t tmpfs tmpfs "$w"
mkdir "$w/low" "$w/up" "$w/work" "$w/root"
mount -o loop,ro,noload "$img" "$w/low"
mount -t overlay overlay -o "lowerdir=$w/low,upperdir=$w/up,workdir=$w/work" "$w/root"
n=$w/root
mount -t proc proc "$n/proc"
mount --rbind /dev "$n/dev"
umount -R "$n/dev/shm" 2>/dev/null || true  # the host's: the guest has one /dev/shm, its own
mount -t tmpfs -o mode=1777 tmpfs "$n/dev/shm"
mount -t tmpfs -o mode=1777 tmpfs "$n/tmp"
mount -t tmpfs -o mode=755 tmpfs "$n/run"
mount --rbind /sys "$n/sys"
mkdir "$n/.oldroot"
cd "$n"
pivot_root . .oldroot
umount -l /.oldroot
cd /
set +e
# What systemd-tmpfiles makes at boot for X (/tmp/.X11-unix, owned by root, 1777).
systemd-tmpfiles --create /usr/lib/tmpfiles.d/x11.conf
"""

CPU = r"""
tot=0
for p in /proc/[0-9]*; do
  t=$(awk '{ print $14 + $15 }' "$p/stat" 2>/dev/null) && tot=$((tot + ${t:-0}))
done
echo "abibench-native: cpu ticks $tot of $(getconf CLK_TCK)"
echo "abibench-native: processes: $(cat /proc/[0-9]*/comm 2>/dev/null | sort | uniq -c | tr -s ' \n' ' ')"
"""


def start_line(entry: RunEntry, uid: int, gid: int) -> str:
    """One run entry as its unit would start it: wait for its path, then its command as its
    user with its environment, in the background, its output in /tmp/NAME.log."""
    wait = (f"until [ -e {shlex.quote(entry.wait_for)} ]; do sleep 0.2; done; "
            if entry.wait_for else "")
    env = " ".join(shlex.quote(e) for e in entry.environment)
    home = "/root" if uid == 0 else f"/home/{entry.user}"
    return (f"{wait}setpriv --reuid {uid} --regid {gid} --clear-groups env -i PATH=/usr/bin:/bin "
            f"HOME={home} {env} {entry.command} > /tmp/{entry.name}.log 2>&1 &")


def ids(passwd: str, user: str) -> tuple[int, int]:
    for line in passwd.splitlines():
        parts = line.split(":")
        if len(parts) > 3 and parts[0] == user:
            return int(parts[2]), int(parts[3])
    raise SystemExit(f"the image has no user {user}")


def script(profile: SystemProfile, passwd: str, page_only: bool) -> str:
    lines = [ENTER, "t0=$(date +%s.%N)"]
    for entry in profile.run:
        uid, gid = ids(passwd, entry.user)
        if uid:
            lines.append(f"chown {uid}:{gid} /home/{shlex.quote(entry.user)}")
        lines.append(start_line(entry, uid, gid))
    if page_only:  # the ready script up to the page's event (natively, memory is the host's)
        lines.append("sed -i '/^echo \"abibench: the page has loaded\"/q' /etc/abibench/ready")
    lines += ["bash /etc/abibench/ready | while read -r l; do",
              '  case "$l" in *memory*) echo "(natively that memory is the host\'s)";; esac',
              '  echo "$l after $(awk -v a="$t0" -v b="$(date +%s.%N)" '
              "'BEGIN { printf \"%.1f\", b - a }') s\"; done", CPU,
              "for f in /tmp/*.log; do echo \"== $f\"; grep -iv dbus \"$f\" | tail -${LOG_LINES:-5}; done"]
    return "\n".join(lines)


def passwd_of(image: Path) -> str:
    out = subprocess.run(["debugfs", "-R", "cat /etc/passwd", str(image)], capture_output=True,
                         text=True, check=True)
    return out.stdout


def run(abi: str, timeout: float, extra: str, page_only: bool) -> int:
    profile = load_system("desktop")
    if extra:  # flags to try before they go into the profile (and its image's key)
        profile = dataclasses.replace(profile, run=tuple(
            dataclasses.replace(r, command=f"{r.command} {extra}") if r.name == "browser" else r
            for r in profile.run))
    image = build_image(load_system("desktop"), ABIS[abi], cache_dir())
    text = script(profile, passwd_of(image.path), page_only)
    print(f"== {abi}: {image.path}", flush=True)
    with owned_dir(".native") as work:
        t0 = time.monotonic()
        try:
            proc = subprocess.run(["unshare", "--mount", "--pid", "--fork", "--propagation",
                                   "private", "--kill-child", "bash", "-c", text, "native",
                                   str(image.path), str(work)], timeout=timeout,
                                  stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired:
            print(f"== {abi}: no settled page in {timeout:.0f} s")
            return 1
        print(f"== {abi}: exit {proc.returncode} after {time.monotonic() - t0:.1f} s")
        return proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--abi", action="append", choices=["i386", "x86_64"])
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--page-only", action="store_true", help="stop at the page's event")
    ap.add_argument("--browser-flags", default="", help="added to the browser's command")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root: a loop mount and pivot_root", file=sys.stderr)
        return 2
    return max(run(abi, args.timeout, args.browser_flags, args.page_only) for abi in args.abi or ["x86_64"])


if __name__ == "__main__":
    sys.exit(main())
