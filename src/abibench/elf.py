"""Reading ELF files: identity (class, machine, flags, interpreter) and section sizes.

What a file's headers say is kept under its content (`kept_facts`: the file's SHA-256 and the
reader's version, kept.py): every run reads the same programs and libraries (each artifact's
header three to five times, and every library its search resolves), and pyelftools costs
milliseconds a file and 50 ms to import, where reading the kept facts costs a digest and a small
JSON file. Only facts read from the file itself are kept; what depends on the host (where a
library is found, what strip says) is read live. A file the kept reading cannot answer for (not
a regular file, over `KEEP_MAX` bytes, any error of the parse) is read live as before, so a
damaged or hostile file gets the very error it got before.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import elftools

from . import kept
from .files import open_regular
from .paths import cache_dir

FACTS_VERSION = 1  # bump when what is read into ElfFacts, or how, changes
READER = f"abibench-elf-{FACTS_VERSION} pyelftools-{elftools.__version__}"
# Above this the digest costs more than the parse it saves (1.3 GB/s of SHA-256 here against
# 3-10 ms a header): such a file (chromium's 283 MiB) is read live.
KEEP_MAX = 8 << 20


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


@dataclass(frozen=True)
class ElfFacts:
    """What one parse of a file's headers says, every reader's view of it."""

    elf_class: int
    machine: str
    flags: int
    elf_type: str  # ET_EXEC | ET_DYN | ...
    interpreter: str | None  # the last PT_INTERP
    needed: tuple[str, ...]  # DT_NEEDED of every dynamic section, in order (libraries.py)
    dynamic_needed: tuple[str, ...]  # DT_NEEDED of the section named .dynamic (ElfInfo.needed)
    rpath: tuple[str, ...]  # the last DT_RPATH, split at ':' (empty entries dropped)
    runpath: tuple[str, ...]
    text: int  # Sizes' text, data and bss
    data: int
    bss: int


def split_path_list(value: str) -> tuple[str, ...]:
    return tuple(p for p in value.split(":") if p)


def _parse_facts(fh: IO[bytes]) -> ElfFacts:
    """Every fact read_elf, section_sizes and libraries._read_header read, in one parse that
    does all each of them does (so it fails wherever any of them would)."""
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(fh)
    interp = None
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_INTERP":
            interp = seg.get_interp_name()  # type: ignore[attr-defined]
    dyn = elf.get_section_by_name(".dynamic")
    dynamic_needed = [t.needed for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED"] \
        if dyn is not None and hasattr(dyn, "iter_tags") else []
    needed: list[str] = []
    paths: dict[str, tuple[str, ...]] = {"DT_RPATH": (), "DT_RUNPATH": ()}
    sizes = {"text": 0, "data": 0, "bss": 0}
    for sec in elf.iter_sections():
        if isinstance(sec, DynamicSection):
            for tag in sec.iter_tags():
                kind = tag.entry.d_tag
                if kind == "DT_NEEDED":
                    needed.append(str(tag.needed))  # type: ignore[attr-defined]
                elif kind in paths:
                    paths[kind] = split_path_list(str(getattr(tag, kind[3:].lower())))
        flags = sec["sh_flags"]
        if flags & SH_FLAGS.SHF_ALLOC:
            part = "bss" if sec["sh_type"] == "SHT_NOBITS" else \
                "data" if flags & SH_FLAGS.SHF_WRITE else "text"
            sizes[part] += int(sec["sh_size"])
    return ElfFacts(elf_class=elf.elfclass, machine=str(elf["e_machine"]),
                    flags=int(elf["e_flags"]), elf_type=str(elf["e_type"]), interpreter=interp,
                    needed=tuple(needed), dynamic_needed=tuple(dynamic_needed),
                    rpath=paths["DT_RPATH"], runpath=paths["DT_RUNPATH"], **sizes)


def _strings(v: object) -> bool:
    return isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v)


def _count(v: object) -> bool:
    return type(v) is int and v >= 0


_SHAPE: dict[str, Callable[[object], bool]] = {
    "elf_class": lambda v: v in (32, 64) and type(v) is int,
    "machine": lambda v: isinstance(v, str), "flags": _count,
    "elf_type": lambda v: isinstance(v, str),
    "interpreter": lambda v: v is None or isinstance(v, str),
    "needed": _strings, "dynamic_needed": _strings, "rpath": _strings, "runpath": _strings,
    "text": _count, "data": _count, "bss": _count,
}


def _facts_shape(value: object) -> bool:
    return isinstance(value, dict) and set(value) == set(_SHAPE) and \
        all(check(value[name]) for name, check in _SHAPE.items())


def _stamp(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def kept_facts(path: Path) -> ElfFacts | None:
    """The facts of the file at `path`, kept under its SHA-256 and READER; None when they cannot
    be had that way (not a regular file, over KEEP_MAX, an error of any kind in the parse, a
    file written while it was read): the caller then reads it live, as it always did."""
    try:
        fd = open_regular(path, KEEP_MAX)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        before = _stamp(os.fstat(fh.fileno()))
        digest = hashlib.sha256(fh.read(KEEP_MAX + 1)).hexdigest()

        def read() -> dict[str, Any] | None:
            fh.seek(0)
            try:
                facts = _parse_facts(fh)
            except Exception:  # the live reader raises what it always raised, itself
                return None
            # written meanwhile: the facts may not be the digest's
            return asdict(facts) if _stamp(os.fstat(fh.fileno())) == before else None

        try:
            doc = kept.answer(cache_dir() / "elf" / f"{digest}.json",
                              {"sha256": digest, "reader": READER}, _facts_shape, read,
                              keep=lambda found: found is not None)
        except OSError:  # the file vanished under the read: live reading says what it says
            return None
    if doc is None:
        return None
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in doc.items()}
    return ElfFacts(**fields)


def read_elf(path: Path) -> ElfInfo:
    facts = kept_facts(path)
    if facts is None:
        return _read_elf_live(path)
    return ElfInfo(path=str(path), elf_class=facts.elf_class, machine=facts.machine,
                   flags=facts.flags, interpreter=facts.interpreter,
                   needed=facts.dynamic_needed)


def _read_elf_live(path: Path) -> ElfInfo:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

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
    facts = kept_facts(path)
    if facts is None:
        return _section_sizes_live(path, stripped)
    return Sizes(file=path.stat().st_size, text=facts.text, data=facts.data, bss=facts.bss,
                 stripped=(stripped or stripped_size)(path, facts.machine))


def _section_sizes_live(path: Path,
                        stripped: Callable[[Path, str], int | None] | None = None) -> Sizes:
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile

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
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

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
