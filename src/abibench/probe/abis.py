"""What this host can build and run for each ABI, and exactly why not where it cannot."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from ..abi import ABIS, FAMILY_CPU, HOST_FAMILY, Abi, check_artifact
from ..errors import AbiMismatchError
from ..paths import cache_dir
from ..records import JSONDict, emulated_words
from ..text import one_line
from ..workspace import owned_dir
from . import host
from .emulator import QEMU_PACKAGE, Emulator, find_emulator

# Returns pointer size so a run proves the binary really is of its data model.
_PROBE_SOURCE = "int main(void) { return (int)sizeof(void *); }\n"


@dataclass(frozen=True)
class AbiStatus:
    abi: str
    can_build: bool
    can_run: bool
    compiler: str | None  # the command that compiles for this ABI here
    reason: str | None  # why not, in one line; None when both work (or a note on how it runs)
    fix: str | None  # the command or setting that fixes it
    # Set when the samples of this ABI run under qemu-user: this kernel (or CPU) cannot run
    # them. Their times then measure QEMU, not the ABI on real hardware.
    emulator: Emulator | None = None
    note: str | None = None  # how it runs when that is not plainly native (why it is emulated)

    @property
    def emulated(self) -> bool:
        return self.emulator is not None

    def to_dict(self) -> JSONDict:
        out: JSONDict = {k: v for k, v in asdict(self).items() if k != "emulator"}
        out["emulated"] = self.emulated
        out["emulator"] = self.emulator.to_dict() if self.emulator else None
        return out


def compiler_for(abi: Abi, machine: str | None = None) -> str | None:
    """The C compiler that targets `abi` on this host: the host's gcc (with the ABI's flags)
    where it targets the ABI, else the cross gcc of its triplet."""
    machine = machine or platform.machine()
    if machine in abi.native_on:
        return shutil.which("gcc") or shutil.which("cc")
    return shutil.which(abi.cc_prefix + "gcc")


def _apt_fix(packages: tuple[str, ...]) -> str:
    return f"apt-get install {' '.join(packages)}" if packages else "apt-get install build-essential"


def _build_failure_reason(abi: Abi, stderr: str, machine: str) -> tuple[str, str]:
    text = stderr.lower()
    packages = abi.compiler_packages(machine)
    if "asm/errno.h" in text or "asm/types.h" in text:
        # gcc-multilib's only file: gone when a cross compiler replaced gcc-multilib.
        return ("the /usr/include/asm link that gcc-multilib provides is missing",
                "ln -s x86_64-linux-gnu/asm /usr/include/asm (bash setup.sh does this)")
    if "bits/libc-header-start.h" in text or "gnu/stubs-" in text or "cannot find" in text:
        return (f"no {abi.name} C library or multilib support installed", _apt_fix(packages))
    first = stderr.strip().splitlines()[0] if stderr.strip() else "compiler failed"
    return (f"test compile failed: {first}", _apt_fix(packages))


def _kernel_reason(abi: Abi, errno: int) -> tuple[str, str]:
    """Why a kernel of the ABI's own machine refused it: its option (the ABI table's row)."""
    option = abi.kernel_option
    cfg = host.kernel_config(option)
    param = abi.kernel_param.split("=", 1)[0]
    off = [a for a in host.kernel_cmdline().split()
           if param and a.startswith(param + "=") and a != abi.kernel_param]
    if cfg == "y" and off:
        return (f"kernel has {abi.name} support but {off[-1]} on the command line disables it",
                f"boot with {abi.kernel_param}")
    if cfg == "y":
        return (f"kernel has {option}=y but refused the {abi.name} program "
                f"({os.strerror(errno) if errno else 'exec failed'})", abi.kernel_fix)
    state = " not set" if cfg in ("n", None) else f"={cfg}"
    return (f"kernel lacks {abi.name} support ({option}{state})", abi.kernel_fix)


def _run_failure_reason(abi: Abi, errno: int) -> tuple[str, str]:
    if abi.enoexec_reason and errno == 8:  # ENOEXEC: e.g. an AArch64 CPU without AArch32
        return (abi.enoexec_reason, f"run {abi.name} under emulation: apt-get install "
                                    f"{QEMU_PACKAGE}")
    if abi.kernel_option:
        return _kernel_reason(abi, errno)
    if errno == 2:  # ENOENT for an existing file: its loader is missing
        return (f"the {abi.name} loader {abi.loader} is not installed",
                f"dpkg --add-architecture {abi.debian_arch} && apt-get update && "
                f"apt-get install libc6:{abi.debian_arch}")
    return (f"exec failed with {os.strerror(errno)}", "check the kernel supports this ABI")


def _no_compiler(abi: Abi, machine: str) -> AbiStatus:
    if machine in abi.native_on:
        return AbiStatus(abi.name, False, False, None, "no C compiler found",
                         "apt-get install build-essential")
    return AbiStatus(abi.name, False, False, None,
                     f"no {abi.name} cross compiler ({abi.cc_prefix}gcc) installed",
                     _apt_fix(abi.cross_packages))


def _run_probe(argv: list[str]) -> int | OSError:
    return _run_probe_said(argv)[0]


def _run_probe_said(argv: list[str]) -> tuple[int | OSError, str]:
    """The test program's exit code (or why it could not start) and its first line of stderr."""
    try:
        proc = subprocess.run(argv, capture_output=True, check=False, timeout=60)
    except OSError as exc:
        return exc, ""
    lines = proc.stderr.decode(errors="replace").strip().splitlines()
    return proc.returncode, one_line(lines[0])[:200] if lines else ""


def probe_abi(abi: Abi, workdir: Path, machine: str | None = None,
              cache_root: Path | None = None) -> AbiStatus:
    machine = machine or platform.machine()
    if HOST_FAMILY.get(machine) != abi.family and not abi.emulator and not abi.no_emulator:
        host_kind = FAMILY_CPU.get(abi.family, f"a {abi.family}")
        return AbiStatus(abi.name, False, False, None,
                         f"needs {host_kind} host (this one is {machine})",
                         f"run abibench on {host_kind} machine")
    cc = compiler_for(abi, machine)
    if cc is None:
        return _no_compiler(abi, machine)
    src = workdir / "probe.c"
    src.write_text(_PROBE_SOURCE)
    exe = workdir / f"probe-{abi.name}"
    proc = subprocess.run([cc, *abi.cflags, "-O2", "-o", str(exe), str(src)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        reason, fix = _build_failure_reason(abi, proc.stderr, machine)
        return AbiStatus(abi.name, False, False, cc, reason, fix)
    try:
        check_artifact(exe, abi)
    except AbiMismatchError as exc:
        return AbiStatus(abi.name, False, False, cc, str(exc), "check the compiler's multilib setup")
    want = abi.pointer_bits // 8
    native_why: tuple[str, str] | None = None
    if machine in abi.run_on:
        # A real exec: whether this CPU runs the ABI (AArch32 on an AArch64 core, x32 system
        # calls) is known only by trying.
        got = _run_probe([str(exe)])
        if got == want:
            return AbiStatus(abi.name, True, True, cc, None, None)
        if isinstance(got, OSError):
            native_why = _run_failure_reason(abi, got.errno or 0)
        elif not Path(abi.loader).exists():
            # Not ENOENT when a binfmt handler (qemu-user-static on a board without AArch32)
            # takes the exec and fails in its own way: the missing loader is the cause all the
            # same.
            native_why = _run_failure_reason(abi, 2)
        else:
            native_why = (f"test program returned {got}, expected pointer size {want}",
                          "check the loader and C library for this ABI")
    if not abi.emulator:
        if native_why is None:
            native_why = (f"this {machine} kernel cannot run {abi.name}"
                          + (f" and {abi.no_emulator}" if abi.no_emulator else ""),
                          f"run on one of: {', '.join(abi.run_on)}")
        return AbiStatus(abi.name, True, False, cc, *native_why)
    emu = find_emulator(abi, cache_root or cache_dir())
    if isinstance(emu, str):
        reason = native_why[0] if native_why else f"this {machine} kernel cannot run {abi.name}"
        return AbiStatus(abi.name, True, False, cc, f"{reason}, and {emu.split(': ')[0]}",
                         f"apt-get install {QEMU_PACKAGE}" if "apt-get" in emu else
                         emu.split(": ", 1)[-1])
    got, said = _run_probe_said(emu.wrap([str(exe)]))
    if got != want:
        shown = got if isinstance(got, int) else got.strerror
        why = f"{native_why[0]}; " if native_why else ""
        return AbiStatus(abi.name, True, False, cc,
                         f"{why}the test program under {emu.command} returned {shown}, "
                         f"expected pointer size {want}" + (f" ({said})" if said else ""),
                         f"check {emu.libc_dir} (apt-get install "
                         f"{' '.join(abi.cross_packages)})")
    why = native_why[0] if native_why else f"this {machine} kernel cannot run {abi.name}"
    return AbiStatus(abi.name, True, True, cc, None, None, emu,
                     f"{why}: runs under {emu.version} ({emulated_words(abi.name)})")


def probe_all(abis: list[Abi] | None = None, cache_root: Path | None = None) -> list[AbiStatus]:
    with owned_dir("probe") as tmp:
        return [probe_abi(a, tmp, cache_root=cache_root) for a in (abis or list(ABIS.values()))]


def program_cannot_run(abi: Abi, interpreter: str | None, status: AbiStatus,
                       machine: str | None = None, loader_exists: bool | None = None) -> str | None:
    """Why one given program of `abi` cannot run here, or None when it can.

    The ABI's probe builds and runs a test program, so it fails for want of a compiler or a
    multilib C library; a program someone already built needs neither. A static one (no
    interpreter) needs only a kernel that executes its ELF class and machine; a dynamic one
    needs its own loader too (its libraries are checked by the artifact's inspection). A kernel
    that refuses it anyway fails the first sample, with exec's reason."""
    if status.can_run:
        return None
    machine = machine or platform.machine()
    if machine not in abi.run_on:
        return status.reason or f"this {machine} kernel cannot run {abi.name}"
    if abi.kernel_option and host.kernel_config(abi.kernel_option) == "n":
        return f"kernel lacks {abi.name} support ({abi.kernel_option} not set)"
    if interpreter is not None:
        exists = Path(interpreter).exists() if loader_exists is None else loader_exists
        if not exists:
            return (f"its loader {interpreter} is not installed: apt-get install "
                    f"{abi.libc_package()}")
    return None
