"""The ABI table: what each ABI is, how to compile for it, and how to recognise its binaries."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .elf import ElfInfo, read_elf
from .errors import AbiMismatchError, UsageError

EF_ARM_ABI_FLOAT_HARD = 0x400


@dataclass(frozen=True)
class Abi:
    name: str
    family: str  # "x86" or "arm": which hosts can possibly run it
    pointer_bits: int
    data_model: str  # ILP32 or LP64
    cflags: tuple[str, ...]  # the only flags that differ between ABIs of one build
    cc_prefix: str  # cross-compiler prefix used when the host is not native for it
    debian_arch: str
    gnu_triplet: str  # multiarch directory and autoconf --host
    elf_class: int
    elf_machine: str
    loader: str
    run_on: tuple[str, ...]  # `uname -m` values whose kernel can execute it
    multilib_packages: tuple[str, ...]  # Debian packages that let this host's gcc target it

    def matches(self, info: ElfInfo) -> bool:
        if info.elf_class != self.elf_class or info.machine != self.elf_machine:
            return False
        if self.name == "armhf":
            return bool(info.flags & EF_ARM_ABI_FLOAT_HARD)
        return True


# x32 and i386 are both ELFCLASS32; only e_machine (EM_X86_64 vs EM_386) tells them apart.
ABIS: dict[str, Abi] = {
    a.name: a
    for a in (
        Abi("i386", "x86", 32, "ILP32", ("-m32",), "i686-linux-gnu-", "i386", "i386-linux-gnu",
            32, "EM_386", "/lib/ld-linux.so.2", ("x86_64", "i686", "i386"),
            ("gcc-multilib", "g++-multilib")),
        Abi("x86_64", "x86", 64, "LP64", ("-m64",), "x86_64-linux-gnu-", "amd64",
            "x86_64-linux-gnu", 64, "EM_X86_64", "/lib64/ld-linux-x86-64.so.2", ("x86_64",),
            ()),
        Abi("x32", "x86", 32, "ILP32", ("-mx32",), "x86_64-linux-gnux32-", "x32",
            "x86_64-linux-gnux32", 32, "EM_X86_64", "/libx32/ld-linux-x32.so.2", ("x86_64",),
            ("gcc-multilib", "g++-multilib", "libc6-dev-x32")),
        Abi("armhf", "arm", 32, "ILP32", ("-marm", "-mfloat-abi=hard"), "arm-linux-gnueabihf-",
            "armhf", "arm-linux-gnueabihf", 32, "EM_ARM", "/lib/ld-linux-armhf.so.3",
            ("armv7l", "armv8l", "aarch64"), ("gcc-arm-linux-gnueabihf",)),
        Abi("aarch64", "arm", 64, "LP64", (), "aarch64-linux-gnu-", "arm64", "aarch64-linux-gnu",
            64, "EM_AARCH64", "/lib/ld-linux-aarch64.so.1", ("aarch64",),
            ("gcc-aarch64-linux-gnu",)),
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
        raise AbiMismatchError(
            f"{path}: built for {abi.name} (ELFCLASS{abi.elf_class} {abi.elf_machine}) but the "
            f"file is {found}; check the build recipe passes the ABI flags ({' '.join(abi.cflags)})"
        )
    return info


def describe(info: ElfInfo) -> str:
    """Name the ABI an ELF header belongs to, or spell out the header when none matches."""
    for abi in ABIS.values():
        if abi.matches(info):
            return f"{abi.name} (ELFCLASS{info.elf_class} {info.machine})"
    return f"ELFCLASS{info.elf_class} {info.machine} flags={info.flags:#x}"
