"""The ABI table: what each ABI is, how to compile for it, and how to recognise its binaries."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .elf import ElfInfo, read_elf
from .errors import AbiMismatchError, UsageError

EF_ARM_ABI_FLOAT_HARD = 0x400  # e_flags: the hard-float procedure call standard (armhf)
EF_ARM_EABIMASK = 0xFF000000
EF_ARM_EABI_VER5 = 0x05000000
# MIPS: n32 is ELFCLASS32 EM_MIPS like o32; only e_flags tell them apart (as only e_machine
# tells x32 from i386): EF_MIPS_ABI2 marks n32, the EF_MIPS_ABI field says O32.
EF_MIPS_ABI2 = 0x20
EF_MIPS_ABI = 0x0000F000
EF_MIPS_ABI_O32 = 0x00001000
EF_PPC64_ABI = 0x3  # 1: ELFv1 (big-endian ppc64's function descriptors), 2: ELFv2 (ppc64el)

# Per family: the CPU its emulated times are not measurements of, in the reports' words.
FAMILY_CPU = {"x86": "an x86", "arm": "an ARM", "sparc": "a SPARC", "mips": "a MIPS",
              "ppc": "a POWER", "s390": "an IBM Z"}


@dataclass(frozen=True)
class Abi:
    name: str
    family: str  # the machine (a key of FAMILY_CPU): which hosts can possibly run it
    pointer_bits: int
    data_model: str  # ILP32 or LP64
    cflags: tuple[str, ...]  # the only flags that differ between ABIs of one build
    cc_prefix: str  # cross-compiler prefix used when the host is not native for it
    debian_arch: str
    gnu_triplet: str  # multiarch directory
    autoconf_host: str  # what autoconf's --host wants for a build of this ABI
    elf_class: int
    elf_machine: str
    loader: str
    run_on: tuple[str, ...]  # `uname -m` values whose kernel can execute it
    multilib_packages: tuple[str, ...]  # Debian packages that let this host's gcc target it
    # `uname -m` values whose own gcc targets this ABI with `cflags`; elsewhere the cross
    # compiler `cc_prefix`gcc from `cross_packages` does.
    native_on: tuple[str, ...] = ()
    cross_packages: tuple[str, ...] = ()
    # qemu-user's emulator for this ABI (Debian package qemu-user), used where the kernel
    # cannot run it; empty when abibench does not emulate it.
    emulator: str = ""
    # e_flags bits that must hold: (flags & mask) == value. ARM state and Thumb-2 are not
    # visible there; the float ABI and the EABI version are.
    flags_mask: int = 0
    flags_value: int = 0
    # The emulator's guest library directories: (guest dir, host dir of the cross C library).
    # Empty: ("lib", /usr/<gnu_triplet>/lib), where Debian's libc6-<arch>-cross puts them; a
    # multilib half's libraries are in a directory of its 64-bit toolchain's tree instead.
    guest_dirs: tuple[tuple[str, str], ...] = ()
    # Why this ABI cannot be emulated here when `emulator` is empty on a foreign host.
    no_emulator: str = ""
    big_endian: bool = False
    # The segment alignment of Debian's linker for it (LOAD p_align): a small program's file is
    # mostly padding where it is large.
    max_page_size: int = 4096
    # ld.so's system directories, what `ld.so --help` lists under "Shared library search path"
    # plus the multiarch ones; empty: derived by `system_dirs()` from the triplet and the guest
    # library directories.
    lib_dirs: tuple[str, ...] = ()
    # $PLATFORM in DT_RPATH/DT_RUNPATH as this ABI's loader expands it; "" where not known.
    platform: str = ""
    # The Debian package that brings this ABI's loader and C library; empty: libc6:<arch>.
    libc: str = ""
    # Debian's binary packages of this arch can be unpacked into a sysroot (--provenance debian).
    sysroot: bool = False
    # The kernel option a kernel of `run_on` needs to run this ABI's programs, the boot
    # parameter that switches it on or off, and the fix to print when it is missing.
    kernel_option: str = ""
    kernel_param: str = ""
    kernel_fix: str = ""
    # exec's ENOEXEC on a kernel of `run_on`: what it means for this ABI (armhf on an AArch64
    # CPU without AArch32).
    enoexec_reason: str = ""
    # An ABI of the same data layout (pointer and long sizes, the same C library) whose measured
    # peak memory, plus the difference of static sizes, estimates this one's where it cannot run.
    rss_proxy: str = ""
    # A whole system of this machine booted under full-system emulation (`abibench vm`):
    # Debian's kernel metapackage of this arch, and the QEMU that emulates the machine with
    # its Debian package; empty where abibench boots none. The kernel runs every ABI whose
    # run_on names a machine this ABI is native on (the x86_64 kernel: i386, x32, x86_64).
    vm_kernel: str = ""
    vm_emulator: str = ""
    vm_emulator_package: str = ""
    # The flavour of Debian's linux-image built for this ABI itself (abibench system boots it
    # under its family's emulator, with this ABI's userspace or another of the family's).
    system_kernel: str = ""
    # The machine that kernel boots on (run/qemuargs.py): QEMU's system emulator and its Debian
    # package, the options choosing the board and CPU (none: the emulator's default PC), the
    # kernel's console device, and where the guest's report goes: "serial" (a second UART) or
    # "virtio" (a virtio serial port, /dev/vport0p1: ARM's virt board has one UART, the console).
    system_emulator: str = ""
    system_emulator_package: str = ""
    system_machine: tuple[str, ...] = ()
    system_console: str = "ttyS0"
    system_report: str = "serial"

    def system_dirs(self) -> tuple[str, ...]:
        if self.lib_dirs:
            return self.lib_dirs
        guest = tuple(d for g, _ in self.guest_dirs for d in (f"/{g}", f"/usr/{g}")
                      if g != "lib")
        return (f"/lib/{self.gnu_triplet}", f"/usr/lib/{self.gnu_triplet}", *guest, "/lib",
                "/usr/lib")

    def libc_package(self) -> str:
        if self.libc:
            return self.libc
        if self.debian_arch:
            return f"libc6:{self.debian_arch}"
        return next((p for p in self.cross_packages if p.startswith("libc6-dev")), "its C library")

    def loader_name(self) -> str:
        return self.loader.rsplit("/", 1)[-1]

    def guest_libs(self) -> tuple[tuple[str, str], ...]:
        return self.guest_dirs or (("lib", f"/usr/{self.gnu_triplet}/lib"),)

    def matches(self, info: ElfInfo) -> bool:
        if info.elf_class != self.elf_class or info.machine != self.elf_machine:
            return False
        return (info.flags & self.flags_mask) == self.flags_value

    def compiler_packages(self, machine: str) -> tuple[str, ...]:
        """What apt installs so that this host (`uname -m`) compiles for this ABI."""
        return self.multilib_packages if machine in self.native_on else self.cross_packages

    def cxx_packages(self, machine: str) -> tuple[str, ...]:
        """What apt installs so that this host also compiles C++ for this ABI: Debian's g++
        package beside each gcc package of `compiler_packages` (gcc-12-multilib ->
        g++-12-multilib, gcc-arm-linux-gnueabihf -> g++-arm-linux-gnueabihf); plain g++ where
        the host's own compiler needs no extra package."""
        gcc = [p for p in self.compiler_packages(machine) if p.startswith("gcc-")]
        return tuple(dict.fromkeys("g++-" + p[len("gcc-"):] for p in gcc)) or ("g++",)


# x32 and i386 are both ELFCLASS32; only e_machine (EM_X86_64 vs EM_386) tells them apart.
ABIS: dict[str, Abi] = {
    a.name: a
    for a in (
        Abi(name="i386", family="x86", pointer_bits=32, data_model="ILP32", cflags=("-m32",),
            cc_prefix="i686-linux-gnu-", debian_arch="i386", gnu_triplet="i386-linux-gnu",
            autoconf_host="i686-linux-gnu", elf_class=32, elf_machine="EM_386",
            loader="/lib/ld-linux.so.2", run_on=("x86_64", "i686", "i386"),
            multilib_packages=("gcc-12-multilib", "g++-12-multilib", "libc6-dev-i386"),
            native_on=("x86_64", "i686", "i386"),
            cross_packages=("gcc-i686-linux-gnu", "libc6-dev-i386-cross"),
            lib_dirs=("/lib/i386-linux-gnu", "/usr/lib/i386-linux-gnu", "/lib32", "/usr/lib32",
                      "/lib", "/usr/lib"),
            platform="i686", libc="libc6:i386 (or libc6-i386)", sysroot=True,
            kernel_option="CONFIG_IA32_EMULATION", kernel_param="ia32_emulation=1",
            kernel_fix="boot a kernel with CONFIG_IA32_EMULATION=y", system_kernel="686-pae",
            system_emulator="qemu-system-x86_64", system_emulator_package="qemu-system-x86"),
        Abi(name="x86_64", family="x86", pointer_bits=64, data_model="LP64", cflags=("-m64",),
            cc_prefix="x86_64-linux-gnu-", debian_arch="amd64", gnu_triplet="x86_64-linux-gnu",
            autoconf_host="x86_64-linux-gnu", elf_class=64, elf_machine="EM_X86_64",
            loader="/lib64/ld-linux-x86-64.so.2", run_on=("x86_64",), multilib_packages=(),
            native_on=("x86_64",),
            cross_packages=("gcc-x86-64-linux-gnu", "libc6-dev-amd64-cross"),
            lib_dirs=("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                      "/usr/lib64", "/lib", "/usr/lib"),
            platform="x86_64", sysroot=True, vm_kernel="linux-image-amd64",
            vm_emulator="qemu-system-x86_64", vm_emulator_package="qemu-system-x86",
            system_kernel="amd64", system_emulator="qemu-system-x86_64",
            system_emulator_package="qemu-system-x86"),
        Abi(name="x32", family="x86", pointer_bits=32, data_model="ILP32", cflags=("-mx32",),
            cc_prefix="x86_64-linux-gnux32-", debian_arch="x32",
            gnu_triplet="x86_64-linux-gnux32", autoconf_host="x86_64-linux-gnux32",
            elf_class=32, elf_machine="EM_X86_64", loader="/libx32/ld-linux-x32.so.2",
            run_on=("x86_64",),
            multilib_packages=("gcc-12-multilib", "g++-12-multilib", "libc6-dev-x32"),
            native_on=("x86_64",),
            cross_packages=("gcc-x86-64-linux-gnux32", "libc6-dev-x32-cross"),
            lib_dirs=("/libx32", "/usr/libx32", "/lib/x86_64-linux-gnux32",
                      "/usr/lib/x86_64-linux-gnux32"),
            platform="x86_64", libc="libc6-x32", kernel_option="CONFIG_X86_X32_ABI",
            kernel_param="syscall.x32=y",
            kernel_fix="run a kernel built with CONFIG_X86_X32_ABI=y; Debian's kernels also need "
                       "the boot parameter syscall.x32=y",
            rss_proxy="i386"),
        Abi(name="armhf", family="arm", pointer_bits=32, data_model="ILP32",
            cflags=("-marm", "-mfloat-abi=hard"), cc_prefix="arm-linux-gnueabihf-",
            debian_arch="armhf", gnu_triplet="arm-linux-gnueabihf",
            autoconf_host="arm-linux-gnueabihf", elf_class=32, elf_machine="EM_ARM",
            loader="/lib/ld-linux-armhf.so.3", run_on=("armv7l", "armv8l", "aarch64"),
            multilib_packages=(), native_on=("armv7l", "armv8l"),
            cross_packages=("gcc-arm-linux-gnueabihf", "libc6-dev-armhf-cross"),
            emulator="qemu-arm", flags_mask=EF_ARM_EABIMASK | EF_ARM_ABI_FLOAT_HARD,
            flags_value=EF_ARM_EABI_VER5 | EF_ARM_ABI_FLOAT_HARD,
            lib_dirs=("/lib/arm-linux-gnueabihf", "/usr/lib/arm-linux-gnueabihf", "/lib",
                      "/usr/lib"),
            platform="v7l", sysroot=True,
            # LPAE: the 32-bit kernel for a Cortex-A15 with more than 4 GiB of address space;
            # highmem=off keeps virt's devices below 4 GiB, where the armmp kernels look.
            system_kernel="armmp-lpae", system_emulator="qemu-system-arm",
            system_emulator_package="qemu-system-arm",
            system_machine=("-M", "virt,highmem=off", "-cpu", "cortex-a15"),
            system_console="ttyAMA0", system_report="virtio",
            enoexec_reason="this CPU (or kernel) has no AArch32 mode: it cannot execute armhf "
                           "programs"),
        Abi(name="aarch64", family="arm", pointer_bits=64, data_model="LP64", cflags=(),
            cc_prefix="aarch64-linux-gnu-", debian_arch="arm64", gnu_triplet="aarch64-linux-gnu",
            autoconf_host="aarch64-linux-gnu", elf_class=64, elf_machine="EM_AARCH64",
            loader="/lib/ld-linux-aarch64.so.1", run_on=("aarch64",),
            multilib_packages=(), native_on=("aarch64",),
            cross_packages=("gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"),
            emulator="qemu-aarch64", max_page_size=0x10000,
            lib_dirs=("/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64",
                      "/usr/lib64", "/lib", "/usr/lib"),
            platform="aarch64", sysroot=True,
            # A Cortex-A72 runs AArch32 at EL0, so the arm64 kernel (CONFIG_COMPAT) runs armhf.
            system_kernel="arm64", system_emulator="qemu-system-aarch64",
            system_emulator_package="qemu-system-arm",
            system_machine=("-M", "virt", "-cpu", "cortex-a72"),
            system_console="ttyAMA0", system_report="virtio"),
        # seed 000's pair: v8plus is 32-bit code using the 64-bit registers of an UltraSPARC,
        # its own e_machine (EM_SPARC32PLUS) as x32 has EM_X86_64.
        Abi(name="sparc32plus", family="sparc", pointer_bits=32, data_model="ILP32",
            cflags=("-m32",), cc_prefix="sparc64-linux-gnu-", debian_arch="",
            gnu_triplet="sparc-linux-gnu", autoconf_host="sparc-linux-gnu", elf_class=32,
            elf_machine="EM_SPARC32PLUS", loader="/lib/ld-linux.so.2", run_on=("sparc64",),
            multilib_packages=(),
            cross_packages=("gcc-sparc64-linux-gnu", "libc6-dev-sparc-sparc64-cross",
                            "lib32gcc-12-dev-sparc64-cross"),
            emulator="qemu-sparc32plus", big_endian=True,
            guest_dirs=(("lib", "/usr/sparc64-linux-gnu/lib32"),), max_page_size=0x10000),
        Abi(name="sparc64", family="sparc", pointer_bits=64, data_model="LP64",
            cflags=("-m64",), cc_prefix="sparc64-linux-gnu-", debian_arch="sparc64",
            gnu_triplet="sparc64-linux-gnu", autoconf_host="sparc64-linux-gnu", elf_class=64,
            elf_machine="EM_SPARCV9", loader="/lib64/ld-linux.so.2", run_on=("sparc64",),
            multilib_packages=(), native_on=("sparc64",),
            cross_packages=("gcc-sparc64-linux-gnu", "libc6-dev-sparc64-cross"),
            emulator="qemu-sparc64", big_endian=True,
            guest_dirs=(("lib64", "/usr/sparc64-linux-gnu/lib64"),
                        ("lib", "/usr/sparc64-linux-gnu/lib")), max_page_size=0x100000),
        # MIPS64's three ABIs from one toolchain: n32 (ILP32 with 64-bit registers, the x32 of
        # MIPS), n64, and o32 (the 32-bit ISA's ABI, the i386 of MIPS).
        Abi(name="mips64el-n32", family="mips", pointer_bits=32, data_model="ILP32",
            cflags=("-mabi=n32",), cc_prefix="mips64el-linux-gnuabi64-", debian_arch="",
            gnu_triplet="mips64el-linux-gnuabin32", autoconf_host="mips64el-linux-gnuabin32",
            elf_class=32, elf_machine="EM_MIPS", loader="/lib32/ld.so.1", run_on=("mips64",),
            multilib_packages=(),
            cross_packages=("gcc-mips64el-linux-gnuabi64", "libc6-dev-mipsn32-mips64el-cross",
                            "libn32gcc-12-dev-mips64el-cross"),
            emulator="qemu-mipsn32el", flags_mask=EF_MIPS_ABI2 | EF_MIPS_ABI,
            flags_value=EF_MIPS_ABI2,
            guest_dirs=(("lib32", "/usr/mips64el-linux-gnuabi64/lib32"),), max_page_size=0x10000,
            rss_proxy="mips64el-o32"),
        Abi(name="mips64el-n64", family="mips", pointer_bits=64, data_model="LP64",
            cflags=("-mabi=64",), cc_prefix="mips64el-linux-gnuabi64-", debian_arch="mips64el",
            gnu_triplet="mips64el-linux-gnuabi64", autoconf_host="mips64el-linux-gnuabi64",
            elf_class=64, elf_machine="EM_MIPS", loader="/lib64/ld.so.1", run_on=("mips64",),
            multilib_packages=(), native_on=("mips64",),
            cross_packages=("gcc-mips64el-linux-gnuabi64", "libc6-dev-mips64el-cross"),
            emulator="qemu-mips64el",
            guest_dirs=(("lib64", "/usr/mips64el-linux-gnuabi64/lib64"),
                        ("lib", "/usr/mips64el-linux-gnuabi64/lib")), max_page_size=0x10000),
        Abi(name="mips64el-o32", family="mips", pointer_bits=32, data_model="ILP32",
            cflags=("-mabi=32",), cc_prefix="mips64el-linux-gnuabi64-", debian_arch="mipsel",
            gnu_triplet="mipsel-linux-gnu", autoconf_host="mipsel-linux-gnu", elf_class=32,
            elf_machine="EM_MIPS", loader="/lib/ld.so.1", run_on=("mips64", "mips"),
            multilib_packages=(),
            cross_packages=("gcc-mips64el-linux-gnuabi64", "libc6-dev-mips32-mips64el-cross",
                            "lib32gcc-12-dev-mips64el-cross"),
            emulator="qemu-mipsel", flags_mask=EF_MIPS_ABI2 | EF_MIPS_ABI,
            flags_value=EF_MIPS_ABI_O32,
            guest_dirs=(("lib", "/usr/mips64el-linux-gnuabi64/libo32"),), max_page_size=0x10000),
        # PowerPC: two toolchains (Debian's powerpc and ppc64 ports), big-endian both; ppc64
        # is ELFv1 (ppc64el, ELFv2 and little-endian, is another ABI).
        Abi(name="ppc", family="ppc", pointer_bits=32, data_model="ILP32", cflags=("-m32",),
            cc_prefix="powerpc-linux-gnu-", debian_arch="powerpc",
            gnu_triplet="powerpc-linux-gnu", autoconf_host="powerpc-linux-gnu", elf_class=32,
            elf_machine="EM_PPC", loader="/lib/ld.so.1", run_on=("ppc", "ppc64"),
            multilib_packages=(), native_on=("ppc",),
            cross_packages=("gcc-powerpc-linux-gnu", "libc6-dev-powerpc-cross"),
            emulator="qemu-ppc", big_endian=True, max_page_size=0x10000),
        Abi(name="ppc64", family="ppc", pointer_bits=64, data_model="LP64", cflags=("-m64",),
            cc_prefix="powerpc64-linux-gnu-", debian_arch="ppc64",
            gnu_triplet="powerpc64-linux-gnu", autoconf_host="powerpc64-linux-gnu",
            elf_class=64, elf_machine="EM_PPC64", loader="/lib64/ld64.so.1", run_on=("ppc64",),
            multilib_packages=(), native_on=("ppc64",),
            cross_packages=("gcc-powerpc64-linux-gnu", "libc6-dev-ppc64-cross"),
            emulator="qemu-ppc64", big_endian=True, flags_mask=EF_PPC64_ABI, flags_value=1,
            guest_dirs=(("lib64", "/usr/powerpc64-linux-gnu/lib64"),
                        ("lib", "/usr/powerpc64-linux-gnu/lib")), max_page_size=0x10000),
        # IBM Z: -m31 still builds (Debian's s390x toolchain ships the 31-bit C library), but
        # qemu-user has only qemu-s390x, which refuses ELFCLASS32 programs.
        Abi(name="s390", family="s390", pointer_bits=32, data_model="ILP32", cflags=("-m31",),
            cc_prefix="s390x-linux-gnu-", debian_arch="", gnu_triplet="s390-linux-gnu",
            autoconf_host="s390-linux-gnu", elf_class=32, elf_machine="EM_S390",
            loader="/lib/ld.so.1", run_on=("s390x",), multilib_packages=(),
            cross_packages=("gcc-s390x-linux-gnu", "libc6-dev-s390-s390x-cross",
                            "lib32gcc-12-dev-s390x-cross"),
            big_endian=True, guest_dirs=(("lib", "/usr/s390x-linux-gnu/lib32"),),
            no_emulator="qemu-user has no 31-bit s390 emulator (qemu-s390x refuses ELFCLASS32 "
                        "programs)"),
        Abi(name="s390x", family="s390", pointer_bits=64, data_model="LP64", cflags=("-m64",),
            cc_prefix="s390x-linux-gnu-", debian_arch="s390x", gnu_triplet="s390x-linux-gnu",
            autoconf_host="s390x-linux-gnu", elf_class=64, elf_machine="EM_S390",
            loader="/lib/ld64.so.1", run_on=("s390x",), multilib_packages=(),
            native_on=("s390x",),
            cross_packages=("gcc-s390x-linux-gnu", "libc6-dev-s390x-cross"),
            emulator="qemu-s390x", big_endian=True),
    )
}

HOST_FAMILY = {"x86_64": "x86", "i686": "x86", "i386": "x86", "aarch64": "arm", "armv7l": "arm",
               "armv8l": "arm", "sparc64": "sparc", "mips64": "mips", "mips": "mips",
               "ppc64": "ppc", "ppc": "ppc", "s390x": "s390"}

# The reference of every comparison within a family: its LP64 ABI (x86_64 first, so a run of
# several families compares each with its own and x86_64 is the overall one).
REFERENCE_ABIS = tuple(a.name for a in ABIS.values() if a.data_model == "LP64")


def by_debian_arch(arch: str) -> Abi:
    """The ABI whose Debian architecture is `arch` (amd64 -> x86_64)."""
    found = next((a for a in ABIS.values() if a.debian_arch == arch), None)
    if found is None:
        raise UsageError(f"unknown Debian architecture '{arch}': choose one of "
                         f"{', '.join(a.debian_arch for a in ABIS.values() if a.debian_arch)}")
    return found


def sysroot_arches() -> tuple[str, ...]:
    """The Debian architectures abibench can put into a sysroot."""
    return tuple(a.debian_arch for a in ABIS.values() if a.sysroot)


def machine_bits(machine: str) -> int:
    """A kernel's bitness from `uname -m`: the widest ABI native on that machine."""
    return max((a.pointer_bits for a in ABIS.values() if machine in a.native_on), default=32)


def host_abi(machine: str) -> Abi | None:
    """The widest ABI native on this `uname -m`: the host's own (x86_64 on x86_64)."""
    native = [a for a in ABIS.values() if machine in a.native_on]
    return max(native, key=lambda a: a.pointer_bits) if native else None


def reference_abi() -> str:
    """The overall reference of a comparison: the first LP64 ABI of the table (x86_64)."""
    return REFERENCE_ABIS[0]


def family_abis(family: str) -> list[Abi]:
    """The ABIs of one family, or of every family for "all"."""
    if family != "all" and family not in FAMILY_CPU:
        raise UsageError(f"unknown --family '{family}': choose all or one of "
                         f"{', '.join(FAMILY_CPU)}")
    return [a for a in ABIS.values() if family in ("all", a.family)]


def vm_kernel_abi(abi: Abi) -> Abi | None:
    """The ABI of the emulated kernel that runs `abi`'s programs (x86_64's for x32), if any."""
    return next((k for k in ABIS.values() if k.vm_kernel and k.family == abi.family
                 and any(m in abi.run_on for m in k.native_on)), None)


def get_abi(name: str) -> Abi:
    try:
        return ABIS[name]
    except KeyError:
        known = ", ".join(ABIS)
        raise UsageError(f"unknown ABI '{name}': choose one of {known}") from None


def parse_abi_list(text: str) -> list[Abi]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError("empty --abi list: give names like i386,x86_64")
    abis = [get_abi(n) for n in names]
    # Measured twice, an ABI would be compared with itself, and the same name given twice is
    # never what was meant: say which, rather than keeping one silently.
    seen: set[str] = set()
    for abi in abis:
        if abi.name in seen:
            raise UsageError(f"--abi names {abi.name} twice: give each ABI once, e.g. "
                             f"--abi {','.join(dict.fromkeys(a.name for a in abis))}")
        seen.add(abi.name)
    return abis


def check_artifact(path: Path, abi: Abi) -> ElfInfo:
    """Refuse an artifact whose ELF header says another ABI: never compare the wrong binaries."""
    try:
        info = read_elf(path)
    except ValueError as exc:
        raise AbiMismatchError(f"{path}: built for {abi.name} but {exc}") from exc
    if not abi.matches(info):
        found = describe(info)
        want = f"ELFCLASS{abi.elf_class} {abi.elf_machine}" + (
            f" e_flags&{abi.flags_mask:#x}={abi.flags_value:#x}" if abi.flags_mask else "")
        raise AbiMismatchError(
            f"{path}: built for {abi.name} ({want}) but the "
            f"file is {found}; check the build recipe passes the ABI flags ({' '.join(abi.cflags)})"
        )
    return info


def abi_of_elf(info: ElfInfo) -> str | None:
    """The name of the ABI an ELF header belongs to, None when it is none of the table's."""
    return next((abi.name for abi in ABIS.values() if abi.matches(info)), None)


def describe(info: ElfInfo) -> str:
    """Name the ABI an ELF header belongs to, or spell out the header when none matches."""
    for abi in ABIS.values():
        if abi.matches(info):
            return f"{abi.name} (ELFCLASS{info.elf_class} {info.machine})"
    return f"ELFCLASS{info.elf_class} {info.machine} flags={info.flags:#x}"
