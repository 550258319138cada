"""The ABI table: what each ABI is, how to compile for it, and how to recognise its binaries."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .elf import ElfInfo, read_elf
from .errors import AbiMismatchError, UsageError

EF_ARM_ABI_FLOAT_HARD = 0x400  # e_flags: the hard-float procedure call standard (armhf)
EF_ARM_EABIMASK = 0xFF000000
EF_ARM_EABI_VER5 = 0x05000000


@dataclass(frozen=True)
class Abi:
    name: str
    family: str  # "x86" or "arm": which hosts can possibly run it
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

    def matches(self, info: ElfInfo) -> bool:
        if info.elf_class != self.elf_class or info.machine != self.elf_machine:
            return False
        return (info.flags & self.flags_mask) == self.flags_value

    def compiler_packages(self, machine: str) -> tuple[str, ...]:
        """What apt installs so that this host (`uname -m`) compiles for this ABI."""
        return self.multilib_packages if machine in self.native_on else self.cross_packages


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
            cross_packages=("gcc-i686-linux-gnu", "libc6-dev-i386-cross")),
        Abi(name="x86_64", family="x86", pointer_bits=64, data_model="LP64", cflags=("-m64",),
            cc_prefix="x86_64-linux-gnu-", debian_arch="amd64", gnu_triplet="x86_64-linux-gnu",
            autoconf_host="x86_64-linux-gnu", elf_class=64, elf_machine="EM_X86_64",
            loader="/lib64/ld-linux-x86-64.so.2", run_on=("x86_64",), multilib_packages=(),
            native_on=("x86_64",),
            cross_packages=("gcc-x86-64-linux-gnu", "libc6-dev-amd64-cross")),
        Abi(name="x32", family="x86", pointer_bits=32, data_model="ILP32", cflags=("-mx32",),
            cc_prefix="x86_64-linux-gnux32-", debian_arch="x32",
            gnu_triplet="x86_64-linux-gnux32", autoconf_host="x86_64-linux-gnux32",
            elf_class=32, elf_machine="EM_X86_64", loader="/libx32/ld-linux-x32.so.2",
            run_on=("x86_64",),
            multilib_packages=("gcc-12-multilib", "g++-12-multilib", "libc6-dev-x32"),
            native_on=("x86_64",),
            cross_packages=("gcc-x86-64-linux-gnux32", "libc6-dev-x32-cross")),
        Abi(name="armhf", family="arm", pointer_bits=32, data_model="ILP32",
            cflags=("-marm", "-mfloat-abi=hard"), cc_prefix="arm-linux-gnueabihf-",
            debian_arch="armhf", gnu_triplet="arm-linux-gnueabihf",
            autoconf_host="arm-linux-gnueabihf", elf_class=32, elf_machine="EM_ARM",
            loader="/lib/ld-linux-armhf.so.3", run_on=("armv7l", "armv8l", "aarch64"),
            multilib_packages=(), native_on=("armv7l", "armv8l"),
            cross_packages=("gcc-arm-linux-gnueabihf", "libc6-dev-armhf-cross"),
            emulator="qemu-arm", flags_mask=EF_ARM_EABIMASK | EF_ARM_ABI_FLOAT_HARD,
            flags_value=EF_ARM_EABI_VER5 | EF_ARM_ABI_FLOAT_HARD),
        Abi(name="aarch64", family="arm", pointer_bits=64, data_model="LP64", cflags=(),
            cc_prefix="aarch64-linux-gnu-", debian_arch="arm64", gnu_triplet="aarch64-linux-gnu",
            autoconf_host="aarch64-linux-gnu", elf_class=64, elf_machine="EM_AARCH64",
            loader="/lib/ld-linux-aarch64.so.1", run_on=("aarch64",),
            multilib_packages=(), native_on=("aarch64",),
            cross_packages=("gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"),
            emulator="qemu-aarch64"),
    )
}

HOST_FAMILY = {"x86_64": "x86", "i686": "x86", "i386": "x86", "aarch64": "arm", "armv7l": "arm",
               "armv8l": "arm"}


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
    return [get_abi(n) for n in names]


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
