"""qemu-user for ABIs this kernel cannot run: which emulator, which version, and the guest root.

qemu-user maps a guest path P to ROOT/P only where that exists and falls back to the host's P
otherwise. With `-L /usr/<triplet>` alone the guest's loader would read the host's x86
/etc/ld.so.cache (and try the host's 32-bit x86 libraries first), so what a guest executes would
depend on this machine. The guest root here is an overlay of links instead: `lib` (and `lib32`
or `lib64` where the ABI's loader and libraries live there: the ABI table's guest_dirs) is the
cross C library's directory and `etc/ld.so.cache` is empty, so every library comes from the
cross libc tree and nothing from the host.

Everything measured under an emulator measures QEMU, not the guest CPU: the run stage marks
such samples `emulated`, and the analysis never turns their times into a speed verdict.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from ..abi import Abi
from ..records import JSONDict

QEMU_PACKAGE = "qemu-user"  # the dynamic build: it loads TCG plugins (qemu-user-static does not)


@dataclass(frozen=True)
class Emulator:
    """How the samples of one ABI run under qemu-user on this host."""

    abi: str
    command: str  # absolute path of qemu-<arch>
    version: str  # its --version line, e.g. "qemu-arm version 7.2.22 (Debian 1:7.2+dfsg-...)"
    root: str  # the guest root given with -L (see the module's docstring)
    libc_dir: str  # the cross C library the root's /lib points to
    plugins: bool  # whether it accepts -plugin (the TCG plugin API, for instruction counts)

    def wrap(self, argv: list[str], plugin: str | None = None) -> list[str]:
        """argv run under the emulator; `plugin` is a -plugin argument (path,arg=value...)."""
        return [self.command, "-L", self.root, *(["-plugin", plugin] if plugin else []), *argv]

    def to_dict(self) -> JSONDict:
        return dict(asdict(self))

    @property
    def label(self) -> str:
        """The emulator in a few words, for the host context."""
        return self.version


def cross_libc_dir(abi: Abi) -> Path:
    """The host directory of the ABI's loader: where the guest's loader directory points."""
    loader_dir = Path(abi.loader).parent.name
    guest = dict(abi.guest_libs())
    return Path(guest.get(loader_dir, abi.guest_libs()[0][1]))


@cache
def emulator_version(command: str) -> str | None:
    try:
        proc = subprocess.run([command, "--version"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = proc.stdout.strip().splitlines()
    return lines[0].strip() if proc.returncode == 0 and lines else None


@cache
def accepts_plugins(command: str) -> bool:
    """Whether this qemu-user build was made with the TCG plugin API (-plugin in its help)."""
    try:
        proc = subprocess.run([command, "-h"], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return re.search(r"^-plugin\s", proc.stdout, re.M) is not None


def guest_root(abi: Abi, cache_root: Path) -> Path:
    """The overlay root for `abi` under the cache, made (or repaired) on every call."""
    root = cache_root / "emulation" / abi.name
    (root / "etc").mkdir(parents=True, exist_ok=True)
    for guest, host_dir in abi.guest_libs():
        _link(root / guest, Path(host_dir))
    cache_file = root / "etc" / "ld.so.cache"
    if not cache_file.is_file() or cache_file.stat().st_size:
        cache_file.write_bytes(b"")
    return root


def _link(path: Path, target: Path) -> None:
    if path.is_symlink() and os.readlink(path) == str(target):
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    os.replace(tmp, path)


def find_emulator(abi: Abi, cache_root: Path) -> Emulator | str:
    """The emulator for `abi`, or why there is none (one line naming the fix)."""
    if not abi.emulator:
        return f"abibench does not emulate {abi.name}"
    command = shutil.which(abi.emulator)
    if command is None:
        return f"{abi.emulator} is not installed: apt-get install {QEMU_PACKAGE}"
    version = emulator_version(command)
    if version is None:
        return f"{command} --version fails: reinstall it (apt-get install --reinstall " \
               f"{QEMU_PACKAGE})"
    libc = cross_libc_dir(abi)
    loader = libc / Path(abi.loader).name
    if not loader.exists():
        return (f"no {abi.name} C library for the emulator ({loader} is missing): apt-get "
                f"install {' '.join(p for p in abi.cross_packages if p.startswith('libc6'))}")
    root = guest_root(abi, cache_root)
    return Emulator(abi.name, command, version, str(root), str(libc), accepts_plugins(command))
