"""Which shared libraries an artifact takes from the host instead of its own build.

A program built per ABI that loads, say, the host's libbz2 measures the host's libbz2 build
for each ABI, not the recipe's: the comparison silently includes whatever Debian compiled.
The C runtime of the ABI itself (glibc's libraries, the loader, the compiler's support
libraries) is expected; anything else found outside the artifact's own directory is named.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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


def warnings(art: Artifact, label: str) -> Iterable[str]:
    for file, path in host_libraries(art):
        yield (f"{label}: {file} loads the host's {path}, not a library the recipe built: the "
               "comparison measures the host's build of it; link it statically or build it in "
               "the recipe")
