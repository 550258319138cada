"""QEMU's command line for every guest abibench boots: `abibench vm` (run/vm.py) and `abibench
system` (run/sysboot.py), x86 and ARM alike. One function family, so the two commands' machines
differ only where a caller says so (a disk, a plugin, the board of the ABI table).

Always: TCG (never KVM: under a nested paravirtual hypervisor a stock kernel hangs), a fixed
memory size, one CPU, no network, display or monitor, no reboot (the guest's power-off ends
qemu). The kernel's console is the first serial port, a file; the guest's report goes to a file
of its own, never mixed with the console: a second serial port where the board has one (the
PC), a virtio serial port where it has a single UART (ARM's virt: the guest sees /dev/vport0p1).
The root disk, if any, is virtio-blk on PCI with `snapshot=on` (its writes go to an overlay in
qemu's TMPDIR, the boot's own directory). Paths are escaped for QEMU's option syntax (a comma
is doubled), so no path can add an option.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..abi import Abi

REPORT_KINDS = ("serial", "virtio")
# The guest's name for the virtio report port: device 0 of virtio_console, port 1 (port 0 is a
# console's, which a getty could claim).
VIRTIO_REPORT_DEVICE = "vport0p1"


@dataclass(frozen=True)
class Machine:
    """The emulated board: the emulator's path, its board and CPU options, the kernel's console
    device and where the report goes (one of REPORT_KINDS)."""

    emulator: str
    options: tuple[str, ...] = ()
    console: str = "ttyS0"
    report: str = "serial"


def machine_of(kernel_abi: Abi, emulator: str) -> Machine:
    """The machine a kernel built for `kernel_abi` boots on (the ABI table's system_ columns),
    with `emulator` the path of its system_emulator."""
    return Machine(emulator, kernel_abi.system_machine, kernel_abi.system_console,
                   kernel_abi.system_report)


def escape(path: Path | str) -> str:
    """A value for QEMU's key=value,... syntax: a comma is written twice."""
    return str(path).replace(",", ",,")


def report_args(machine: Machine, report: Path) -> list[str]:
    """The report's port, a file on the host."""
    if machine.report == "virtio":
        return ["-device", "virtio-serial-pci",
                "-chardev", f"file,id=abibench-report,path={escape(report)}",
                "-device", "virtserialport,chardev=abibench-report,nr=1,name=abibench.report"]
    if machine.report == "serial":
        return ["-serial", f"file:{report}"]
    raise ValueError(f"report port kind {machine.report!r} is none of {REPORT_KINDS}")


def disk_args(disk: Path) -> list[str]:
    """The root disk on virtio-blk (PCI), raw, its writes in a snapshot overlay."""
    return ["-drive", f"file={escape(disk)},format=raw,if=none,id=root,snapshot=on",
            "-device", "virtio-blk-pci,drive=root"]


def kernel_cmdline_console(machine: Machine) -> tuple[str, ...]:
    """The kernel parameters that put its console where `qemu_argv` reads it, and tell the
    guest's report where its port is (native/sysreport.c reads abibench.port=)."""
    port = () if machine.report == "serial" else (f"abibench.port={VIRTIO_REPORT_DEVICE}",)
    return (f"console={machine.console}", *port)


def qemu_argv(machine: Machine, memory_mb: int, console: Path, report: Path, kernel: Path,
              initrd: Path, cmdline: str, disk: Path | None = None,
              plugin: str | None = None) -> list[str]:
    """The whole command line: see the module's docstring."""
    return [machine.emulator, *machine.options, "-accel", "tcg", "-m", str(memory_mb),
            "-smp", "1", "-nic", "none", "-display", "none", "-monitor", "none", "-no-reboot",
            "-serial", f"file:{console}", *report_args(machine, report),
            *(["-plugin", plugin] if plugin else []),
            "-kernel", str(kernel), "-initrd", str(initrd), "-append", cmdline,
            *(disk_args(disk) if disk is not None else [])]
