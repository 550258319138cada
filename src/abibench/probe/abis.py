"""What this host can build and run for each ABI, and exactly why not where it cannot."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from ..abi import ABIS, HOST_FAMILY, Abi, check_artifact
from ..errors import AbiMismatchError
from ..records import JSONDict
from ..workspace import owned_dir
from . import host

# Returns pointer size so a run proves the binary really is of its data model.
_PROBE_SOURCE = "int main(void) { return (int)sizeof(void *); }\n"


@dataclass(frozen=True)
class AbiStatus:
    abi: str
    can_build: bool
    can_run: bool
    compiler: str | None  # the command that compiles for this ABI here
    reason: str | None  # why not, in one line; None when both work
    fix: str | None  # the command or setting that fixes it

    def to_dict(self) -> JSONDict:
        return asdict(self)


def compiler_for(abi: Abi, machine: str | None = None) -> str | None:
    """The C compiler that targets `abi` on this host: native gcc with ABI flags, else a cross gcc."""
    machine = machine or platform.machine()
    if HOST_FAMILY.get(machine) == abi.family:
        return shutil.which("gcc") or shutil.which("cc")
    return shutil.which(abi.cc_prefix + "gcc")


def _apt_fix(packages: tuple[str, ...]) -> str:
    return f"apt-get install {' '.join(packages)}" if packages else "apt-get install build-essential"


def _build_failure_reason(abi: Abi, stderr: str) -> tuple[str, str]:
    text = stderr.lower()
    if "bits/libc-header-start.h" in text or "gnu/stubs-" in text or "cannot find" in text:
        return (f"no {abi.name} C library or multilib support installed",
                _apt_fix(abi.multilib_packages))
    first = stderr.strip().splitlines()[0] if stderr.strip() else "compiler failed"
    return (f"test compile failed: {first}", _apt_fix(abi.multilib_packages))


def _run_failure_reason(abi: Abi, errno: int) -> tuple[str, str]:
    if abi.name == "x32":
        cfg = host.kernel_config("CONFIG_X86_X32_ABI")
        if cfg == "y" and "syscall.x32=n" in host.kernel_cmdline():
            return ("kernel has x32 support but it is disabled on the command line",
                    "boot with syscall.x32=y")
        return ("kernel lacks x32 support (CONFIG_X86_X32_ABI"
                + (" not set)" if cfg in ("n", None) else f"={cfg})"),
                "run a kernel built with CONFIG_X86_X32_ABI=y; Debian's kernels also need the "
                "boot parameter syscall.x32=y")
    if abi.name == "i386":
        return ("kernel cannot run 32-bit x86 programs (CONFIG_IA32_EMULATION off or "
                "ia32_emulation=0)", "boot a kernel with CONFIG_IA32_EMULATION=y")
    return (f"exec failed with {os.strerror(errno)}", "check the kernel supports this ABI")


def probe_abi(abi: Abi, workdir: Path, machine: str | None = None) -> AbiStatus:
    machine = machine or platform.machine()
    if HOST_FAMILY.get(machine) != abi.family:
        want = "an ARM" if abi.family == "arm" else "an x86"
        return AbiStatus(abi.name, False, False, None,
                         f"needs {want} host (this one is {machine}); emulated timings would "
                         "say nothing about the hardware",
                         f"run abibench on {want} machine")
    cc = compiler_for(abi, machine)
    if cc is None:
        return AbiStatus(abi.name, False, False, None, "no C compiler found",
                         "apt-get install build-essential")
    src = workdir / "probe.c"
    src.write_text(_PROBE_SOURCE)
    exe = workdir / f"probe-{abi.name}"
    proc = subprocess.run([cc, *abi.cflags, "-O2", "-o", str(exe), str(src)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        reason, fix = _build_failure_reason(abi, proc.stderr)
        return AbiStatus(abi.name, False, False, cc, reason, fix)
    try:
        check_artifact(exe, abi)
    except AbiMismatchError as exc:
        return AbiStatus(abi.name, False, False, cc, str(exc), "check the compiler's multilib setup")
    if machine not in abi.run_on:
        return AbiStatus(abi.name, True, False, cc, f"a {machine} kernel cannot run {abi.name}",
                         f"run on one of: {', '.join(abi.run_on)}")
    try:
        run = subprocess.run([str(exe)], capture_output=True, check=False, timeout=10)
    except OSError as exc:
        reason, fix = _run_failure_reason(abi, exc.errno or 0)
        return AbiStatus(abi.name, True, False, cc, reason, fix)
    if run.returncode != abi.pointer_bits // 8:
        return AbiStatus(abi.name, True, False, cc,
                         f"test program returned {run.returncode}, expected pointer size "
                         f"{abi.pointer_bits // 8}", "check the loader and C library for this ABI")
    return AbiStatus(abi.name, True, True, cc, None, None)


def probe_all(abis: list[Abi] | None = None) -> list[AbiStatus]:
    with owned_dir("probe") as tmp:
        return [probe_abi(a, tmp) for a in (abis or list(ABIS.values()))]
