"""Reading ELF files: identity (class, machine, flags, interpreter) and section sizes."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile


@dataclass(frozen=True)
class ElfInfo:
    path: str
    elf_class: int  # 32 or 64
    machine: str  # pyelftools' e_machine name, e.g. EM_386, EM_X86_64
    flags: int  # e_flags (ARM float ABI lives here)
    interpreter: str | None
    needed: tuple[str, ...]


@dataclass(frozen=True)
class Sizes:
    """Berkeley `size` semantics: text = read-only allocated, data = writable, bss = NOBITS."""

    file: int
    text: int
    data: int
    bss: int
    stripped: int | None  # file size after `strip`, None when strip is unavailable


def read_elf(path: Path) -> ElfInfo:
    try:
        with path.open("rb") as fh:
            elf = ELFFile(fh)
            interp = None
            needed: list[str] = []
            for seg in elf.iter_segments():
                if seg["p_type"] == "PT_INTERP":
                    interp = seg.get_interp_name()  # type: ignore[attr-defined]
            dyn = elf.get_section_by_name(".dynamic")
            if dyn is not None and hasattr(dyn, "iter_tags"):
                needed = [t.needed for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
            return ElfInfo(
                path=str(path),
                elf_class=elf.elfclass,
                machine=str(elf["e_machine"]),
                flags=int(elf["e_flags"]),
                interpreter=interp,
                needed=tuple(needed),
            )
    except (ELFError, OSError) as exc:
        raise ValueError(f"{path}: not a readable ELF file ({exc})") from exc


# The host's `strip` knows only the host's own machine: a cross build is stripped by the
# binutils of its target (Debian's binutils-<triplet>, installed with the cross gcc).
_CROSS_STRIP = {
    "EM_ARM": ("arm-linux-gnueabihf-strip",),
    "EM_AARCH64": ("aarch64-linux-gnu-strip",),
    "EM_386": ("i686-linux-gnu-strip", "x86_64-linux-gnu-strip"),
    "EM_X86_64": ("x86_64-linux-gnu-strip",),
    "EM_SPARC32PLUS": ("sparc64-linux-gnu-strip",),
    "EM_SPARCV9": ("sparc64-linux-gnu-strip",),
    "EM_MIPS": ("mips64el-linux-gnuabi64-strip",),
    "EM_PPC": ("powerpc-linux-gnu-strip", "powerpc64-linux-gnu-strip"),
    "EM_PPC64": ("powerpc64-linux-gnu-strip",),
    "EM_S390": ("s390x-linux-gnu-strip",),
}


def section_sizes(path: Path,
                  stripped: Callable[[Path, str], int | None] | None = None) -> Sizes:
    text = data = bss = 0
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        machine = str(elf["e_machine"])
        for sec in elf.iter_sections():
            flags = sec["sh_flags"]
            if not flags & SH_FLAGS.SHF_ALLOC:
                continue
            size = int(sec["sh_size"])
            if sec["sh_type"] == "SHT_NOBITS":
                bss += size
            elif flags & SH_FLAGS.SHF_WRITE:
                data += size
            else:
                text += size
    return Sizes(file=path.stat().st_size, text=text, data=data, bss=bss,
                 stripped=(stripped or stripped_size)(path, machine))


def strip_tools(machine: str = "") -> tuple[str, ...]:
    """The strips stripped_size tries, in order: the host's, then the binutils of `machine`."""
    return ("strip", *_CROSS_STRIP.get(machine, ()))


def stripped_size(path: Path, machine: str = "") -> int | None:
    """The file's size after `strip`: the host's, else the binutils of its machine; None when
    no strip here knows the file's format."""
    for name in strip_tools(machine):
        strip = shutil.which(name)
        if strip is None:
            continue
        with tempfile.TemporaryDirectory(prefix="abibench-strip-") as tmp:
            out = Path(tmp) / path.name
            proc = subprocess.run([strip, "-o", str(out), str(path)], capture_output=True,
                                  check=False)
            if proc.returncode == 0:
                return os.path.getsize(out)
    return None


def function_entries(path: Path) -> dict[int, str]:
    """Every function symbol's address and name in an ELF file's symbol tables (``.symtab``,
    then ``.dynsym``), zero-sized ones included: crt's ``frame_dummy`` and gcc's
    ``__x86.get_pc_thunk.*`` have no size, and valgrind, which needs one, leaves them unnamed.
    Empty when the file is not a readable ELF file."""
    found: dict[int, str] = {}
    try:
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            for table in (".symtab", ".dynsym"):
                sec = elf.get_section_by_name(table)
                if sec is None or not hasattr(sec, "iter_symbols"):
                    continue
                for sym in sec.iter_symbols():
                    if sym["st_info"]["type"] == "STT_FUNC" and sym["st_value"] and sym.name:
                        found.setdefault(int(sym["st_value"]), sym.name)
    except (OSError, ELFError, ValueError):
        return {}
    return found
