"""What an ELF file is and whether its libraries resolve for its ABI: `abibench inspect`.

The library search follows the order of glibc's dynamic loader for each DT_NEEDED entry:

1. a name with a slash is a path;
2. DT_RPATH of the object and of the executable, unless the object has DT_RUNPATH;
3. LD_LIBRARY_PATH (and `--library-path`);
4. DT_RUNPATH of the object;
5. the directories of /etc/ld.so.conf, standing in for ld.so.cache;
6. the ABI's system directories (what `ld.so --help` lists, plus the multiarch ones).

ld.so skips a candidate of the wrong ELF class or machine and goes on searching; it only fails
with "wrong ELF class: ELFCLASS32" when nothing better turns up. A library of the wrong class
first in the path is still reported, because it is the trap seed 000 describes: a 32-bit
libcrypto in LD_LIBRARY_PATH breaking a 64-bit ssh. Candidates met through ld.so.conf are the
exception: the real cache is tagged per ABI and never offers them, so reporting them would
flag every i386 binary on a 64-bit host for /lib/x86_64-linux-gnu/libc.so.6.

Not modelled: glibc-hwcaps and legacy hwcap subdirectories (variants of a library the plain
directory also holds), `-z nodeflib`, and dlopen'ed libraries, which no header names.

With a sysroot every directory, ld.so.conf included, is read inside it, and absolute symlinks are
followed inside it too (Debian's amd64 lib64/ld-linux-x86-64.so.2 points at /lib/...; outside
the sysroot that would silently be the host's loader).
"""

from __future__ import annotations

import glob
import json
import os
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..abi import ABIS, Abi
from ..elf import ElfInfo, kept_facts, section_sizes, split_path_list
from ..errors import UsageError
from ..records import JSONDict

FALLBACK_DIRS = ("/lib", "/usr/lib")  # an ELF file of no ABI in the table

MAX_SYMLINKS = 40  # as the kernel's ELOOP limit


@dataclass(frozen=True)
class Diagnostic:
    level: str  # error | warning
    message: str


@dataclass(frozen=True)
class Rejected:
    path: str
    reason: str  # "ELFCLASS32 i386", "not an ELF file"


@dataclass(frozen=True)
class Library:
    name: str  # the DT_NEEDED entry
    needed_by: str
    path: str | None  # the file ld.so would load; None when nothing fits
    found_via: str | None  # path | RPATH | LD_LIBRARY_PATH | --library-path | RUNPATH | ld.so.conf | system
    rejected: tuple[Rejected, ...] = ()  # wrong candidates met before it, in search order


@dataclass(frozen=True)
class Inspection:
    path: str
    abi: str | None  # the ABI whose header this is, None for an ELF file of no known ABI
    description: str  # e.g. "x32 (ELFCLASS32 EM_X86_64)"
    elf_class: int
    machine: str
    flags: int
    elf_type: str  # ET_EXEC | ET_DYN | ...
    interpreter: str | None
    interpreter_path: str | None  # the interpreter as found (inside the sysroot), None if missing
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    sysroot: str | None
    search_path: tuple[str, ...]  # the directories tried for the file's own DT_NEEDED, in order
    sizes: dict[str, int | None] | None  # file/text/data/bss/stripped bytes, when asked for
    libraries: tuple[Library, ...]
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return not self.diagnostics

    def to_dict(self) -> JSONDict:
        # Through JSON: tuples become lists, as they are after the store gives them back.
        d: JSONDict = json.loads(json.dumps(asdict(self)))
        d["ok"] = self.ok
        return d


@dataclass(frozen=True)
class _Header:
    path: Path
    elf_class: int
    machine: str
    flags: int
    elf_type: str
    interpreter: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]


def _read_header(path: Path) -> _Header:
    """The header facts of an ELF file: kept under its content (elf.kept_facts), else read
    live; ValueError naming the problem when it is no ELF file."""
    if not path.is_file():  # a FIFO would block the read, a device never end it
        raise ValueError("not a regular file")
    facts = kept_facts(path)
    if facts is None:
        return _read_header_live(path)
    return _Header(path=path, elf_class=facts.elf_class, machine=facts.machine,
                   flags=facts.flags, elf_type=facts.elf_type, interpreter=facts.interpreter,
                   needed=facts.needed, rpath=facts.rpath, runpath=facts.runpath)


def _read_header_live(path: Path) -> _Header:
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    try:
        with path.open("rb") as fh:
            elf = ELFFile(fh)
            interp = None
            for seg in elf.iter_segments():
                if seg["p_type"] == "PT_INTERP":
                    interp = seg.get_interp_name()  # type: ignore[attr-defined]
            needed: list[str] = []
            rpath: tuple[str, ...] = ()
            runpath: tuple[str, ...] = ()
            for sec in elf.iter_sections():
                if not isinstance(sec, DynamicSection):
                    continue
                for tag in sec.iter_tags():
                    kind = tag.entry.d_tag
                    if kind == "DT_NEEDED":
                        needed.append(str(tag.needed))  # type: ignore[attr-defined]
                    elif kind == "DT_RPATH":
                        rpath = split_path_list(str(tag.rpath))  # type: ignore[attr-defined]
                    elif kind == "DT_RUNPATH":
                        runpath = split_path_list(str(tag.runpath))  # type: ignore[attr-defined]
            return _Header(path=path, elf_class=elf.elfclass, machine=str(elf["e_machine"]),
                           flags=int(elf["e_flags"]), elf_type=str(elf["e_type"]),
                           interpreter=interp, needed=tuple(needed), rpath=rpath,
                           runpath=runpath)
    except (ELFError, OSError, ValueError) as exc:
        raise ValueError(str(exc)) from None


def abi_of(elf_class: int, machine: str, flags: int) -> Abi | None:
    """The ABI an ELF header belongs to (armhf is told from soft-float ARM by a flag)."""
    info = ElfInfo(path="", elf_class=elf_class, machine=machine, flags=flags, interpreter=None,
                   needed=())
    return next((abi for abi in ABIS.values() if abi.matches(info)), None)


def _describe(h: _Header) -> str:
    abi = abi_of(h.elf_class, h.machine, h.flags)
    return f"ELFCLASS{h.elf_class} {abi.name if abi else h.machine}"


def in_root(root: Path | None, logical: str) -> Path:
    """The host path of `logical` as seen from inside `root`, following symlinks inside it."""
    if root is None:
        return Path(logical)
    parts = [p for p in logical.split("/") if p]
    resolved: list[str] = []
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        candidate = root.joinpath(*resolved, part)
        if candidate.is_symlink():
            hops += 1
            if hops > MAX_SYMLINKS:
                return candidate  # a loop: leave it to the caller's "not found"
            target = os.readlink(candidate)
            if target.startswith("/"):
                resolved = []
            parts = [p for p in target.split("/") if p] + parts
            continue
        resolved.append(part)
    return root.joinpath(*resolved)


def ld_so_conf_dirs(root: Path | None) -> list[str]:
    """Directories named by /etc/ld.so.conf and its includes, in file order."""
    out: list[str] = []
    seen: set[Path] = set()

    def read(conf: Path) -> None:
        if conf in seen or not conf.is_file():
            return
        seen.add(conf)
        try:
            lines = conf.read_text(errors="replace").splitlines()
        except OSError:
            return
        for raw in lines:
            line = raw.split("#", 1)[0].strip()
            if not line or line.startswith("hwcap "):
                continue
            if line.startswith("include "):
                for pattern in line.split()[1:]:
                    logical = pattern if pattern.startswith("/") else f"/etc/{pattern}"
                    for match in sorted(glob.glob(str(in_root(root, logical)))):
                        read(Path(match))
                continue
            for d in line.replace(",", " ").split():
                if d.startswith("/") and d not in out:
                    out.append(d)

    read(in_root(root, "/etc/ld.so.conf"))
    return out


@dataclass
class _Search:
    abi: Abi | None
    root: Path | None
    extra: list[tuple[str, str]]  # (dir, label) searched where LD_LIBRARY_PATH is
    conf: list[str]
    exe_rpath: tuple[str, ...]
    exe_origin: Path
    exe_has_runpath: bool
    seen_dirs: dict[str, Path] = field(default_factory=dict)

    def expand(self, entry: str, origin: Path) -> Path:
        """A DT_RPATH/DT_RUNPATH entry as a host directory; $ORIGIN is the object's directory."""
        lib = f"lib/{self.abi.gnu_triplet}" if self.abi else "lib"
        platform = self.abi.platform if self.abi else ""
        text = entry
        for token, value in (("ORIGIN", str(origin)), ("LIB", lib), ("PLATFORM", platform)):
            text = text.replace("${" + token + "}", value).replace("$" + token, value)
        if text.startswith(str(origin)):
            return Path(text)  # $ORIGIN is already a host path
        return in_root(self.root, text)

    def order(self, h: _Header) -> list[tuple[Path, str]]:
        origin = h.path.resolve().parent
        dirs: list[tuple[Path, str]] = []
        if not h.runpath:
            dirs += [(self.expand(d, origin), "RPATH") for d in h.rpath]
            if not self.exe_has_runpath:
                dirs += [(self.expand(d, self.exe_origin), "RPATH") for d in self.exe_rpath]
        dirs += [(in_root(self.root, d), label) for d, label in self.extra]
        dirs += [(self.expand(d, origin), "RUNPATH") for d in h.runpath]
        dirs += [(in_root(self.root, d), "ld.so.conf") for d in self.conf]
        system = self.abi.system_dirs() if self.abi else FALLBACK_DIRS
        dirs += [(in_root(self.root, d), "system") for d in system]
        return dirs


def _fits(h: _Header, want: _Header) -> bool:
    if h.elf_class != want.elf_class or h.machine != want.machine:
        return False
    abi = abi_of(want.elf_class, want.machine, want.flags)
    return abi is None or abi_of(h.elf_class, h.machine, h.flags) == abi


def _resolve(name: str, needer: _Header, want: _Header, search: _Search) -> tuple[
        Library, _Header | None]:
    rejected: list[Rejected] = []
    if "/" in name:
        # A path in DT_NEEDED is used as it stands (relative ones from the working directory).
        candidates = [(in_root(search.root, name) if name.startswith("/") else Path(name),
                       "path")]
    else:
        candidates = [(d / name, label) for d, label in search.order(needer)]
    for cand, label in candidates:
        if not cand.is_file():
            continue
        try:
            h = _read_header(cand)
        except ValueError:
            if label != "ld.so.conf":
                rejected.append(Rejected(str(cand), "not an ELF file"))
            continue
        if _fits(h, want):
            return Library(name, str(needer.path), str(cand), label, tuple(rejected)), h
        if label != "ld.so.conf":
            rejected.append(Rejected(str(cand), _describe(h)))
    return Library(name, str(needer.path), None, None, tuple(rejected)), None


def _diagnose(lib: Library, want: _Header, abi: Abi | None) -> list[Diagnostic]:
    need = abi.name if abi else f"ELFCLASS{want.elf_class} {want.machine}"
    arch = f"the {abi.debian_arch} package" if abi else "a build for that machine"
    out = []
    for r in lib.rejected:
        if r.reason == "not an ELF file":
            continue
        kind = "wrong ELF class" if not r.reason.startswith(f"ELFCLASS{want.elf_class} ") \
            else "wrong machine"
        tail = f" (ld.so skips it and loads {lib.path})" if lib.path else ""
        out.append(Diagnostic("warning" if lib.path else "error",
                              f"{kind}: {r.path} is {r.reason}, needs {need}; install {arch} "
                              f"or remove it from the path{tail}"))
    if lib.path is None and not any(d.level == "error" for d in out):
        pkg = f" (apt-get install PACKAGE:{abi.debian_arch})" if abi else ""
        out.append(Diagnostic("error", f"{lib.name} (needed by {lib.needed_by}) not found for "
                              f"{need}: install {arch} that ships it{pkg} or add its directory "
                              "with --library-path"))
    return out


def inspect_binary(path: Path, *, sysroot: Path | None = None,
                   library_path: tuple[str, ...] = (), use_env: bool = True,
                   sizes: bool = True) -> Inspection:
    """Identify an ELF file and resolve its DT_NEEDED closure for its own ABI.

    `library_path` directories are searched where LD_LIBRARY_PATH is (after the environment's
    own LD_LIBRARY_PATH when `use_env` and no sysroot: the host's variable means nothing there).
    """
    if not path.exists():
        raise UsageError(f"{path}: no such file: give the path of an ELF binary or library")
    try:
        exe = _read_header(path)
    except ValueError as exc:
        raise UsageError(f"{path}: not an ELF file ({exc}): give a binary or shared "
                         "library") from None
    root = sysroot.resolve() if sysroot is not None else None
    if root is not None and not root.is_dir():
        raise UsageError(f"--sysroot {sysroot}: not a directory: give the root of an unpacked "
                         "system")
    abi = abi_of(exe.elf_class, exe.machine, exe.flags)
    extra: list[tuple[str, str]] = []
    env = os.environ.get("LD_LIBRARY_PATH", "")
    if use_env and root is None:
        # An empty entry means the current directory to ld.so; nobody means that on purpose.
        extra += [(d, "LD_LIBRARY_PATH") for d in split_path_list(env)]
    extra += [(d, "--library-path") for item in library_path for d in split_path_list(item)]
    search = _Search(abi=abi, root=root, extra=extra, conf=ld_so_conf_dirs(root),
                     exe_rpath=exe.rpath, exe_origin=path.resolve().parent,
                     exe_has_runpath=bool(exe.runpath))

    diagnostics: list[Diagnostic] = []
    interp_path = None
    if exe.interpreter:
        found = in_root(root, exe.interpreter)
        if found.is_file():
            interp_path = str(found)
            try:
                ih = _read_header(found)
                if not _fits(ih, exe):
                    diagnostics.append(Diagnostic(
                        "error", f"interpreter {exe.interpreter} is {_describe(ih)}, needs "
                        f"{abi.name if abi else exe.machine}: install "
                        f"{abi.libc_package() if abi else 'its C library'}"))
            except ValueError:
                diagnostics.append(Diagnostic("error", f"interpreter {found} is not an ELF file"))
        else:
            pkg = abi.libc_package() if abi else "its C library"
            where = f" in {root}" if root else ""
            diagnostics.append(Diagnostic("error", f"interpreter {exe.interpreter} not found"
                                          f"{where}: install {pkg}"))

    libraries: list[Library] = []
    seen: set[str] = set()
    queue: deque[tuple[str, _Header]] = deque((n, exe) for n in exe.needed)
    while queue:
        name, needer = queue.popleft()
        if name in seen:
            continue
        seen.add(name)
        lib, header = _resolve(name, needer, exe, search)
        libraries.append(lib)
        diagnostics += _diagnose(lib, exe, abi)
        if header is not None:
            queue.extend((n, header) for n in header.needed)

    return Inspection(
        path=str(path), abi=abi.name if abi else None,
        description=f"{abi.name if abi else 'unknown ABI'} (ELFCLASS{exe.elf_class} {exe.machine}"
                    f"{f', flags {exe.flags:#x}' if exe.flags else ''})",
        elf_class=exe.elf_class, machine=exe.machine, flags=exe.flags, elf_type=exe.elf_type,
        interpreter=exe.interpreter, interpreter_path=interp_path, rpath=exe.rpath,
        runpath=exe.runpath, sysroot=str(root) if root else None,
        search_path=tuple(f"{d} ({label})" for d, label in search.order(exe)),
        sizes=asdict(section_sizes(path)) if sizes else None,
        libraries=tuple(libraries), diagnostics=tuple(diagnostics),
    )


def render(ins: Inspection) -> list[str]:
    """Plain lines for the terminal; the CLI adds nothing but colour."""
    lines = [f"{ins.path}: {ins.description}, {ins.elf_type}"]
    if ins.interpreter:
        state = ("(missing)" if ins.interpreter_path is None else "(found)"
                 if ins.interpreter_path == ins.interpreter else f"-> {ins.interpreter_path}")
        lines.append(f"  interpreter: {ins.interpreter} {state}")
    elif ins.elf_type == "ET_EXEC" and not ins.libraries:
        lines.append("  statically linked")
    if ins.rpath:
        lines.append(f"  RPATH: {':'.join(ins.rpath)}")
    if ins.runpath:
        lines.append(f"  RUNPATH: {':'.join(ins.runpath)}")
    if ins.sizes:
        s = ins.sizes
        stripped = f", stripped {s['stripped']}" if s.get("stripped") is not None else ""
        lines.append(f"  sizes: file {s['file']}, text {s['text']}, data {s['data']}, "
                     f"bss {s['bss']} bytes{stripped}")
    if ins.libraries:
        lines.append("  needed:")
        for lib in ins.libraries:
            where = f"{lib.path} ({lib.found_via})" if lib.path else "NOT FOUND"
            lines.append(f"    {lib.name} => {where}")
    for d in ins.diagnostics:
        lines.append(f"  {d.level}: {d.message}")
    if ins.ok:
        lines.append("  libraries: all resolved for " + (ins.abi or "its machine"))
    return lines


def inspect_artifacts(bin_dir: Path, files: Iterable[str], *,
                      sysroot: Path | None = None) -> JSONDict:
    """What a run stores with each artifact: its inspection as the sample would see the libraries
    (the environment's LD_LIBRARY_PATH included); sizes are already in the artifact record."""
    return {f: inspect_binary(bin_dir / f, sysroot=sysroot, sizes=False).to_dict() for f in files}
