#!/usr/bin/env python3
"""Run one command with a binfmt_misc entry for ARM programs that only that command sees.

    python3 src/abibench/obtain/nsbinfmt.py [--arch aarch64|arm]... -- COMMAND ARGS...
    python3 src/abibench/obtain/nsbinfmt.py --register arm    (inside: add an entry to this
                                                               namespace's)

A script of its own (no import of abibench: bench/arm-host.sh runs it with the system's python
before abibench is installed anywhere), and the way obtain/sysimage.py builds an ARM system's
root with mmdebstrap (`python -m abibench.obtain.nsbinfmt`); each --arch is the name of
qemu-user's emulator without "qemu-" (the ABI table's `emulator` column).

Since Linux 6.7 a user namespace can mount a binfmt_misc instance of its own. This (run as
root) starts COMMAND in new user, mount and PID namespaces: uids and gids 0-65535 map to
themselves (dpkg in a chroot chowns files to system users), /proc and binfmt_misc are mounted
afresh, and each --arch gets an entry pointing at Debian's static qemu with the F flag (the
kernel opens the emulator at registration, so it also serves a chroot without a copy of it).
The machine's own binfmt_misc and mount table are never touched: when COMMAND ends, the
namespaces and everything registered or mounted in them are gone.

Needs root, Linux >= 6.7 and qemu-user-static (the dynamic qemu cannot serve a chroot).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_REC = 0x4000
PR_SET_PDEATHSIG = 1
MS_PRIVATE = 1 << 18
IDS = 65536

# The ELF identification and e_machine an entry matches (EXEC and DYN), with the mask that
# ignores the OS ABI byte and the EXEC/DYN difference: what qemu-user-static's binfmt.d says.
_MASK = bytes([0xFF] * 7 + [0x00] + [0xFF] * 8 + [0xFE, 0xFF, 0xFF, 0xFF])
ENTRIES = {  # keyed by qemu-user's emulator
    "qemu-aarch64": bytes([0x7F, 0x45, 0x4C, 0x46, 0x02, 0x01, 0x01] + [0] * 9 + [0x02, 0, 0xB7, 0]),
    "qemu-arm": bytes([0x7F, 0x45, 0x4C, 0x46, 0x01, 0x01, 0x01] + [0] * 9 + [0x02, 0, 0x28, 0]),
}

_libc = ctypes.CDLL(None, use_errno=True)


def _call(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies: a kill of the outermost process (abibench's
    deadline, Ctrl-C, a SIGKILL) reaches the namespace's PID 1, whose death ends every process
    in the namespace. Checked after the call: a parent already gone is not waited for."""
    _call(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        os._exit(2)


def _hex(data: bytes) -> str:
    return "".join(f"\\x{b:02x}" for b in data)


ARCHES = sorted(k.removeprefix("qemu-") for k in ENTRIES)


def register(arch: str) -> None:
    """An entry for `arch` in the binfmt_misc mounted at /proc/sys/fs/binfmt_misc."""
    qemu = f"/usr/bin/qemu-{arch}-static"
    with open("/proc/sys/fs/binfmt_misc/register", "w") as reg:
        reg.write(f":abibench-{arch}:M::{_hex(ENTRIES['qemu-' + arch])}:{_hex(_MASK)}:{qemu}:F")


def _pid1(arches: list[str], argv: list[str]) -> int:
    """PID 1 of the new namespace: mounts, registrations, then the command."""
    _call(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    _call(_libc.mount(b"proc", b"/proc", b"proc", 0, None), "mount /proc")
    _call(_libc.mount(b"binfmt_misc", b"/proc/sys/fs/binfmt_misc", b"binfmt_misc", 0, None),
          "mount binfmt_misc (a namespace's own instance needs Linux 6.7 or later)")
    for arch in arches:
        register(arch)
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"nsbinfmt: cannot run {argv[0]}: {exc.strerror}", file=sys.stderr)
        os._exit(127)
    while True:  # PID 1 reaps orphans too, until the command itself ends
        pid, status = os.wait()
        if pid == child:
            return os.waitstatus_to_exitcode(status)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--arch", action="append", choices=ARCHES, default=None)
    ap.add_argument("--register", choices=ARCHES, default=None,
                    help="only add this entry, in the namespace this runs in")
    ap.add_argument("argv", nargs="*")
    args = ap.parse_args()
    if args.register:
        register(args.register)
        return 0
    if not args.argv:
        ap.error("give the command to run after --")
    arches = args.arch or ARCHES[:1]
    if os.geteuid() != 0:
        print("nsbinfmt: run as root", file=sys.stderr)
        return 2
    for arch in arches:
        if not os.path.exists(f"/usr/bin/qemu-{arch}-static"):
            print(f"nsbinfmt: /usr/bin/qemu-{arch}-static is missing: apt-get install "
                  "qemu-user-static", file=sys.stderr)
            return 2
    # Started by abibench (mmdebstrap of an ARM system): a SIGKILL of abibench ends this too,
    # and with it, by the same signal down the chain, the namespace.
    _die_with_parent(os.getppid())
    unshared_r, unshared_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    outer = os.getpid()
    child = os.fork()
    if child == 0:
        _die_with_parent(outer)
        os.close(unshared_r)
        os.close(mapped_w)
        try:
            _call(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID), "unshare")
        except OSError as exc:
            print(f"nsbinfmt: {exc}", file=sys.stderr)
            os._exit(2)
        os.write(unshared_w, b"1")
        if os.read(mapped_r, 1) != b"1":
            os._exit(2)
        os.setgid(0)
        os.setuid(0)
        _die_with_parent(outer)  # again: a change of credentials may clear it
        init = os.fork()  # the first process forked after CLONE_NEWPID is the namespace's 1
        if init == 0:
            try:
                _die_with_parent(0)  # its parent is outside the namespace: getppid() says 0
                os._exit(_pid1(arches, args.argv))
            except OSError as exc:
                print(f"nsbinfmt: {exc}", file=sys.stderr)
                os._exit(2)
        _, status = os.waitpid(init, 0)
        os._exit(os.waitstatus_to_exitcode(status))
    os.close(unshared_w)
    os.close(mapped_r)
    if os.read(unshared_r, 1) != b"1":
        os.waitpid(child, 0)
        return 2
    # Written from outside: only a process with CAP_SETUID in the parent namespace may map a
    # range of ids (a process cannot give itself more than its own id).
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{child}/{name}", "w") as f:
            f.write(f"0 0 {IDS}\n")
    os.write(mapped_w, b"1")
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
