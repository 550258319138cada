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
from dataclasses import dataclass, field
from pathlib import Path

from ..abi import abi_of_elf, machine_bits
from ..elf import read_elf
from ..records import HostContext, JSONDict
from . import board, dpkgowner


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


# --------------------------------------------------------------------------- virtualisation
#
# Two layers, told apart because they weaken a result differently: the machine (a hypervisor
# schedules this vCPU beside other guests) and a container (a namespace on a shared kernel). Each
# is decided from its own evidence only. systemd-detect-virt is not asked: it names a container
# from /.dockerenv alone, which a VM whose root file system was made from a container image keeps
# (issue 29: a Firecracker microVM reported as "running under docker").

# DMI strings (sys_vendor, product_name, bios_vendor, board_vendor) -> the hypervisor, first
# match wins; lower case substrings.
_DMI_HYPERVISORS = (
    ("firecracker", "Firecracker microVM (KVM)"), ("amazon ec2", "Amazon EC2 (KVM)"),
    ("google compute engine", "Google Compute Engine (KVM)"), ("qemu", "QEMU"),
    ("kvm", "KVM"), ("vmware", "VMware"), ("virtualbox", "VirtualBox"),
    ("innotek", "VirtualBox"), ("xen", "Xen"), ("bochs", "Bochs"), ("parallels", "Parallels"),
    ("bhyve", "bhyve"), ("cloud hypervisor", "Cloud Hypervisor (KVM)"),
    ("openstack", "OpenStack (KVM)"), ("microsoft corporation virtual machine", "Hyper-V"),
)
# The ACPI tables' OEM id (bytes 10-15 of their header): Firecracker writes its own, and has no
# DMI at all on x86.
_ACPI_HYPERVISORS = {"FIRECK": "Firecracker microVM (KVM)", "BOCHS": "QEMU", "BXPC": "QEMU",
                     "VBOX": "VirtualBox", "VMWARE": "VMware", "XEN": "Xen",
                     "CLOUDH": "Cloud Hypervisor (KVM)"}
# PID 1's cgroup paths -> the container engine that put it there.
_CGROUP_CONTAINERS = (("kubepods", "Kubernetes"), ("docker", "docker"), ("libpod", "podman"),
                      ("/lxc", "LXC"), ("/machine.slice/", "systemd-nspawn"),
                      ("containerd", "containerd"))
# A root file system a container engine mounts; a VM's own root is a block device's.
_LAYERED_FS = {"overlay", "aufs", "fuse-overlayfs", "shiftfs"}


@dataclass(frozen=True)
class VirtFacts:
    """What the host's files say about virtualisation, read once (:func:`virt_facts`) and
    judged by a pure function (:func:`classify_virt`), so that it is tested on captured files."""

    dmi: dict[str, str] = field(default_factory=dict)  # /sys/class/dmi/id/<name>
    acpi_oem: str | None = None  # OEM id of /sys/firmware/acpi/tables/DSDT
    cpu_flags: frozenset[str] = frozenset()  # /proc/cpuinfo "flags" (x86)
    hypervisor_type: str | None = None  # /sys/hypervisor/type (Xen)
    pid1_cgroup: str = ""  # /proc/1/cgroup
    root_fs: str | None = None  # "/"'s file system type and source, from /proc/self/mountinfo
    root_source: str | None = None
    dockerenv: bool = False  # /.dockerenv exists
    containerenv: bool = False  # /run/.containerenv exists (podman)
    container_env: str | None = None  # PID 1's $container, when readable (nspawn, lxc)


@dataclass(frozen=True)
class Virt:
    machine: str | None  # the hypervisor; None: bare metal as far as can be told
    container: str | None  # the container engine; None: not in a container
    evidence: tuple[str, ...]  # the facts that decided it, for the report's reader

    def text(self) -> str | None:
        """The host context's one line: "Firecracker microVM (KVM)", "docker container on
        KVM", "docker container"; None when neither layer was found."""
        if self.container and self.machine:
            return f"{self.container} container on {self.machine}"
        if self.container:
            return f"{self.container} container"
        return self.machine


def _machine(f: VirtFacts) -> tuple[str | None, str | None]:
    if f.acpi_oem and f.acpi_oem.strip().upper() in _ACPI_HYPERVISORS:
        return _ACPI_HYPERVISORS[f.acpi_oem.strip().upper()], f"ACPI OEM id {f.acpi_oem.strip()}"
    dmi = " ".join(f.dmi.get(k, "") for k in ("sys_vendor", "product_name", "bios_vendor",
                                              "board_vendor")).lower()
    for needle, name in _DMI_HYPERVISORS:
        if needle in dmi:
            return name, f"DMI {' '.join(dmi.split())!r}"
    if f.hypervisor_type:
        return f.hypervisor_type.strip().capitalize(), "/sys/hypervisor/type"
    if "hypervisor" in f.cpu_flags:
        return "an unidentified hypervisor", "CPU flag hypervisor"
    return None, None


def _container(f: VirtFacts) -> tuple[str | None, str | None]:
    for line in f.pid1_cgroup.splitlines():
        path = line.split(":", 2)[-1]
        for needle, name in _CGROUP_CONTAINERS:
            if needle in path:
                return name, f"PID 1's cgroup {path}"
    if f.container_env:
        return f.container_env, "PID 1's $container"
    if f.containerenv:
        return "podman", "/run/.containerenv"
    source = f.root_source or ""
    # docker's devicemapper driver mounts a device of its own: /dev/mapper/docker-...
    layered = f.root_fs in _LAYERED_FS or "docker" in source
    if f.dockerenv and (layered or not source.startswith("/dev/")):
        return "docker", f"/.dockerenv, root on {f.root_fs or 'an unknown file system'}"
    return None, None


def classify_virt(facts: VirtFacts) -> Virt:
    """Which hypervisor and which container engine these facts show, each from its own evidence.
    A /.dockerenv on a root file system that is a block device is a leftover of the image the
    root was made from, not a container."""
    machine, why_m = _machine(facts)
    container, why_c = _container(facts)
    evidence = tuple(w for w in (why_m, why_c) if w)
    if facts.dockerenv and container is None:
        evidence += (f"/.dockerenv ignored: root is {facts.root_fs} on {facts.root_source}",)
    return Virt(machine, container, evidence)


def _acpi_oem(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            header = fh.read(16)
    except OSError:
        return None  # no ACPI, or only root may read the tables
    oem = header[10:16].decode("ascii", "replace").strip("\0 ")
    return oem if len(header) == 16 and oem else None


def _root_mount(mountinfo: str) -> tuple[str | None, str | None]:
    """(file system type, source) of "/" in a mountinfo text; the last mount of "/" wins."""
    found: tuple[str | None, str | None] = (None, None)
    for line in mountinfo.splitlines():
        fields_, _, rest = line.partition(" - ")
        parts = fields_.split()
        if len(parts) >= 5 and parts[4] == "/":
            tail = rest.split()
            found = (tail[0] if tail else None, tail[1] if len(tail) > 1 else None)
    return found


def _cpu_flags(cpuinfo: str) -> frozenset[str]:
    m = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.M)
    return frozenset(m.group(1).split()) if m else frozenset()


def _pid1_container_env() -> str | None:
    try:
        env = Path("/proc/1/environ").read_bytes()
    except OSError:
        return None
    for item in env.split(b"\0"):
        if item.startswith(b"container="):
            return item[len(b"container="):].decode("utf-8", "replace") or None
    return None


def virt_facts(root: Path = Path("/")) -> VirtFacts:
    """This host's (or a captured tree's, under ``root``) virtualisation facts."""
    def read(rel: str) -> str | None:
        try:
            return (root / rel).read_text(errors="replace")
        except OSError:
            return None

    dmi = {name: v.strip() for name in ("sys_vendor", "product_name", "bios_vendor",
                                         "board_vendor")
           if (v := read(f"sys/class/dmi/id/{name}")) is not None}
    fs, source = _root_mount(read("proc/self/mountinfo") or "")
    return VirtFacts(
        dmi=dmi, acpi_oem=_acpi_oem(root / "sys/firmware/acpi/tables/DSDT"),
        cpu_flags=_cpu_flags(read("proc/cpuinfo") or ""),
        hypervisor_type=(read("sys/hypervisor/type") or "").strip() or None,
        pid1_cgroup=read("proc/1/cgroup") or "", root_fs=fs, root_source=source,
        dockerenv=(root / ".dockerenv").exists(),
        containerenv=(root / "run/.containerenv").exists(),
        container_env=_pid1_container_env() if root == Path("/") else None)


def virtualization() -> Virt:
    return classify_virt(virt_facts())


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
    virt = virtualization()
    extra: JSONDict = {**board_context(), "userspace": userspace_abi()}
    if virt.evidence:
        extra["virtualization_evidence"] = "; ".join(virt.evidence)
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
        virtualization=virt.text(),
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
        warnings.append(f"virtualised ({ctx.virtualization}): other guests or containers on "
                        "the same host can add noise")
    return warnings


def runtime_library(loader: str, cache_root: Path | None = None) -> str | None:
    """The Debian package (and version) that provides an ABI's C library on this host.

    Programs of different ABIs are linked against different libc builds (libc6:amd64 vs
    libc6-i386 here): when their versions differ, the comparison includes that difference.
    With `cache_root`, dpkg is asked once per state of its database (probe/dpkgowner.py).
    """
    return dpkgowner.owner(loader, cache_root)


def library_skew(libs: dict[str, str | None]) -> str | None:
    """A warning when targets run on C libraries of different versions."""
    versions = {abi: lib.split(" ", 1)[1] for abi, lib in libs.items() if lib and " " in lib}
    if len(set(versions.values())) > 1:
        shown = ", ".join(f"{abi}: {libs[abi]}" for abi in versions)
        return f"targets run on different C library versions ({shown}): part of any difference"
    return None
