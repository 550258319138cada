"""Which shared libraries an artifact takes from the host instead of its own build.

A program built per ABI that loads, say, the host's libbz2 measures the host's libbz2 build
for each ABI, not the recipe's: the comparison silently includes whatever Debian compiled.
The C runtime of the ABI itself (glibc's libraries, the loader, the compiler's support
libraries) is expected; anything else found outside the artifact's own directory is named.
Such a target gets no verdict unless the run says it is intended (`--allow-host-libs`;
analyse/foreign.py decides), and its size counts the libraries it loads (`Artifact.libraries`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import asdict, replace
from pathlib import Path

from elftools.common.exceptions import ELFError

from ..elf import section_sizes
from ..records import Artifact

# The C and C++ runtime every program of an ABI loads from the system.
RUNTIME = re.compile(r"^(ld-linux[-\w.]*|libc|libm|libdl|libpthread|librt|libresolv|libutil|"
                     r"libcrypt|libanl|libnsl|libmvec|libgcc_s|libstdc\+\+|libatomic|"
                     r"libquadmath|libgomp)\.so(\.\d+)*$")


def host_libraries(art: Artifact) -> list[tuple[str, str]]:
    """(file, library path) for every library the artifact loads from the host that is not
    part of its ABI's C runtime. Debian sysroots are their own system: nothing is foreign."""
    if art.sysroot is not None or not art.inspection:
        return []
    found: list[tuple[str, str]] = []
    for file, ins in art.inspection.items():
        libs = ins.get("libraries") if isinstance(ins, dict) else None
        for lib in libs if isinstance(libs, list | tuple) else []:
            if not isinstance(lib, dict):
                continue
            name, path = lib.get("name"), lib.get("path")
            if not isinstance(name, str) or not isinstance(path, str):
                continue
            if RUNTIME.match(name) or path.startswith(art.bin_dir.rstrip("/") + "/"):
                continue
            found.append((file, path))
    return found


def library_names(art: Artifact) -> tuple[str, ...]:
    """The host libraries' file names, each once, in the order they are loaded."""
    return tuple(dict.fromkeys(os.path.basename(path) for _, path in host_libraries(art)))


def library_sizes(paths: Iterable[str]) -> dict[str, dict[str, int | None]]:
    """{file name: sizes} of libraries, as an artifact's own files are sized; one that cannot
    be read is left out (its size is unknown, and the size row says which it counts)."""
    out: dict[str, dict[str, int | None]] = {}
    for path in paths:
        try:
            out.setdefault(os.path.basename(path), asdict(section_sizes(Path(path))))
        except (OSError, ValueError, ELFError):
            continue
    return out


def with_host_library_sizes(art: Artifact) -> Artifact:
    """The artifact with the sizes of the host libraries it loads, which its size counts."""
    found = host_libraries(art)
    if not found:
        return art
    return replace(art, libraries={**art.libraries,
                                   **library_sizes(path for _, path in found)})


def advice(art: Artifact) -> str:
    """What to do about it, in the artifact's own mode: a prebuilt program has no recipe."""
    if art.provenance == "prebuilt":
        return ("give programs that carry their libraries (linked statically, or beside the "
                "program with an RPATH of $ORIGIN)")
    return "link it statically or build it in the recipe"


def warnings(art: Artifact, label: str, allowed: bool = False) -> Iterable[str]:
    """The fact, per library, as the run stores it; what follows from it (no verdict, and what
    to do) is the analysis's to say (analyse/foreign.py), so that a report agrees with it."""
    source = "not a library given with it" if art.provenance == "prebuilt" else \
        "not a library the recipe built"
    then = ": allowed (--allow-host-libs), the comparison measures the host's build of it" \
        if allowed else ""
    for file, path in host_libraries(art):
        yield f"{label}: {file} loads the host's {path}, {source}{then}"
