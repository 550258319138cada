"""Host context: what machine a result was measured on, and what weakens it."""

from __future__ import annotations

import gzip
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from ..abi import abi_of_elf, machine_bits
from ..elf import read_elf
from ..records import HostContext, JSONDict
from . import board


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _first_line(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def cpu_model() -> str:
    info = _read("/proc/cpuinfo") or ""
    m = re.search(r"^model name\s*:\s*(.+)$", info, re.M)
    return m.group(1).strip() if m else platform.processor() or "unknown"


def governor() -> str | None:
    """None when the kernel exposes no cpufreq (typical in VMs: the hypervisor decides)."""
    return _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


def turbo() -> str | None:
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo is not None:
        return "off" if no_turbo == "1" else "on"
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    if boost is not None:
        return "on" if boost == "1" else "off"
    return None


def kernel_config(option: str) -> str | None:
    """The value of one CONFIG_ option from /proc/config.gz or /boot; None when unknowable."""
    text: str | None = None
    try:
        with gzip.open("/proc/config.gz", "rt") as fh:
            text = fh.read()
    except OSError:
        text = _read(f"/boot/config-{platform.release()}")
    if text is None:
        return None
    m = re.search(rf"^{option}=(\S+)$", text, re.M)
    if m:
        return m.group(1)
    return "n" if re.search(rf"^# {option} is not set$", text, re.M) else None


def kernel_cmdline() -> str:
    return _read("/proc/cmdline") or ""


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()


def mem_total_kb() -> int | None:
    m = re.search(r"^MemTotal:\s+(\d+)", _read("/proc/meminfo") or "", re.M)
    return int(m.group(1)) if m else None


def libc_version() -> str:
    name, version = platform.libc_ver()
    return f"{name} {version}".strip() or "unknown"


def compilers() -> dict[str, str]:
    found: dict[str, str] = {}
    for cc in ("gcc", "g++", "clang"):
        line = _first_line([cc, "--version"])
        if line:
            found[cc] = line
    return found


def virtualization() -> str | None:
    line = _first_line(["systemd-detect-virt"])
    return line if line and line != "none" else None


def userspace_abi() -> str | None:
    """The ABI of this userspace (the Python running abibench): seed 003's kernel-vs-userspace
    matrix, e.g. a 64-bit kernel under an armhf Raspberry Pi OS."""
    try:
        return abi_of_elf(read_elf(Path(sys.executable).resolve()))
    except ValueError:
        return None


def board_context(root: Path = board.ROOT) -> JSONDict:
    """What a single-board computer adds to the context (nothing on a PC or VM)."""
    out: JSONDict = {}
    model = board.board_model(root)
    if model:
        out["board"] = model
    top = board.max_clock_mhz(root)
    if top is not None:
        out["cpu_max_mhz"] = top
    bits = board.throttled_bits(root)
    if bits is not None:
        out["throttled_since_boot"] = ", ".join(
            board.throttle_words(bits, board.THROTTLE_SINCE_BOOT)) or "never"
    return out


def capture() -> HostContext:
    """Everything a reader needs to judge where a number came from."""
    uname = platform.uname()
    extra: JSONDict = {**board_context(), "userspace": userspace_abi()}
    return HostContext(
        hostname=socket.gethostname(),
        cpu_model=cpu_model(),
        cpus_online=os.cpu_count(),
        machine=uname.machine,
        kernel_release=uname.release,
        kernel_version=uname.version,
        kernel_bits=machine_bits(uname.machine),
        kernel_x32=kernel_config("CONFIG_X86_X32_ABI"),
        governor=governor(),
        turbo=turbo(),
        virtualization=virtualization(),
        mem_total_kb=mem_total_kb(),
        load_average=tuple(load_average()),
        libc=libc_version(),
        compilers=compilers(),
        python=platform.python_version(),
        os_release=_os_release(),
        extra=extra,
    )


def _os_release() -> str:
    text = _read("/etc/os-release") or ""
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', text, re.M)
    return m.group(1) if m else platform.platform()


def context_warnings(ctx: HostContext) -> list[str]:
    """Conditions that make timings less trustworthy; reported with every result."""
    warnings = []
    gov = ctx.governor
    if gov is not None and gov != "performance":
        warnings.append(
            f"CPU governor is '{gov}', not 'performance': frequency scaling adds noise "
            "(cpupower frequency-set -g performance)"
        )
    load = ctx.load_average or (0.0,)
    if load[0] > 0.5:
        warnings.append(f"load average {load[0]:.2f} > 0.5 at start: other work competes for the CPU")
    if ctx.virtualization:
        warnings.append(f"running under {ctx.virtualization}: a neighbour's load can add noise")
    return warnings


def runtime_library(loader: str) -> str | None:
    """The Debian package (and version) that provides an ABI's C library on this host.

    Programs of different ABIs are linked against different libc builds (libc6:amd64 vs
    libc6-i386 here): when their versions differ, the comparison includes that difference.
    """
    if shutil.which("dpkg") is None or not Path(loader).exists():
        return None
    # dpkg knows the path as packaged, which may be the unresolved symlink; try both.
    for path in (loader, os.path.realpath(loader)):
        proc = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, check=False)
        if proc.returncode == 0 and ":" in proc.stdout:
            pkg = proc.stdout.split(": ", 1)[0].split(",")[0].strip()
            ver = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                                 text=True, check=False).stdout.strip()
            return f"{pkg} {ver}".strip()
    return None


def library_skew(libs: dict[str, str | None]) -> str | None:
    """A warning when targets run on C libraries of different versions."""
    versions = {abi: lib.split(" ", 1)[1] for abi, lib in libs.items() if lib and " " in lib}
    if len(set(versions.values())) > 1:
        shown = ", ".join(f"{abi}: {libs[abi]}" for abi in versions)
        return f"targets run on different C library versions ({shown}): part of any difference"
    return None
