"""The shared libraries of a Debian program's own source package, which its size counts.

Debian splits a program from its libraries: /usr/bin/node is a launcher of a few KiB and V8
lives in libnode.so.108 (binary package libnode108, source package nodejs); flac's codec is
libFLAC.so.12 (libflac12, source flac). A size row of the program alone compares launchers.
The libraries counted are those the program loads (resolved in its sysroot as ld.so does,
obtain/libraries.py) that a binary package built from the program's own source package ships;
other packages' libraries (the C library, libssl for a program not built from openssl) are
the system's, as for a program built from source.

What a .deb says of itself (its source package, the paths it ships) is read once per pool file
and kept beside the pool (debian/debindex/), checked against the file's size and modification
time: listing chromium's .deb decompresses all of it (6 CPU s), and asking 239 packages for
their source runs dpkg-deb 239 times (2 CPU s), on every run of a Chromium workload otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path

from elftools.common.exceptions import ELFError

from .. import kept
from ..elf import section_sizes
from .libraries import inspect_binary
from .sysroot import Sysroot, pool_dir


def _dpkg_deb(*args: str) -> str | None:
    exe = shutil.which("dpkg-deb")
    if exe is None:
        return None
    proc = subprocess.run([exe, *args], capture_output=True, text=True, check=False)
    return proc.stdout if proc.returncode == 0 else None


INDEX_VERSION = 1  # bump when what is kept, or how it is read from the .deb, changes
_Fact = str | list[str] | None


_SHAPES: dict[str, Callable[[object], bool]] = {
    "source": lambda v: isinstance(v, str) and bool(v),
    "contents": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
}


def index_file(deb: Path, fact: str) -> Path:
    return deb.parent.parent / "debindex" / f"{deb.name}.{fact}.json"


def _fact(deb: Path, fact: str, read: Callable[[], _Fact]) -> _Fact:
    """What `read` says of the .deb, read once per pool file (kept.py: one maker at a time, a
    damaged or foreign entry read again); a failed read (no dpkg-deb, a damaged file) is not
    kept."""
    try:
        st = deb.stat()
    except OSError:
        return read()  # not a pool file at hand: nothing to key it by
    key = {"version": INDEX_VERSION, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    return kept.answer(index_file(deb, fact), key, _SHAPES[fact], read,
                       keep=lambda value: value is not None)


def source_of(deb: Path) -> str | None:
    """The source package a .deb was built from (its own name when it says none)."""
    found = _fact(deb, "source", lambda: _read_source(deb))
    return found if isinstance(found, str) else None


def contents(deb: Path) -> set[str]:
    """Every path a .deb ships (files and links), as the sysroot sees it: /usr/lib/..."""
    found = _fact(deb, "contents", lambda: _read_contents(deb))
    return set(found) if isinstance(found, list) else set()


def _read_source(deb: Path) -> str | None:
    out = _dpkg_deb("-f", str(deb), "Source", "Package")
    if out is None:
        return None
    fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    # "Source: glibc (2.36-9)": a binary version that differs from the source's
    return (fields.get("Source") or fields.get("Package") or "").split(" ", 1)[0] or None


def _read_contents(deb: Path) -> list[str] | None:
    listing = _dpkg_deb("-c", str(deb))
    if listing is None:
        return None
    paths = set()
    for line in listing.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and not parts[0].startswith("d"):
            name = parts[5].split(" -> ", 1)[0]
            paths.add("/" + name.removeprefix("./"))
    return sorted(paths)


def inner_path(root: Path, host: Path) -> str:
    """A sysroot file's path as the sysroot sees it."""
    return "/" + os.path.relpath(host, root)


def _owner(program: str, debs: Iterable[tuple[str, Path]]) -> Path | None:
    for _, deb in debs:
        if program in contents(deb):
            return deb
    return None


def own_libraries(root: Sysroot, exe: Path, cache_root: Path,
                  asked: Iterable[str] = ()) -> dict[str, dict[str, int | None]]:
    """{soname: sizes} of the libraries ``exe`` (a program of ``root``) loads that a package of
    its own source package ships; {} when none does, or the packages are not at hand."""
    pool = pool_dir(cache_root)
    debs = [(p.name, pool / p.filename) for p in root.pins if (pool / p.filename).is_file()]
    program = inner_path(root.path, exe.resolve())
    first = set(asked)
    # the packages asked for first: the program is one of theirs, almost always
    found = _owner(program, sorted(debs, key=lambda nd: nd[0] not in first))
    source = source_of(found) if found is not None else None
    if found is None or source is None:
        return {}
    shipped: set[str] = set()
    for _, deb in debs:
        if deb != found and source_of(deb) == source:
            shipped |= contents(deb)
    if not shipped:
        return {}
    out: dict[str, dict[str, int | None]] = {}
    for lib in inspect_binary(exe, sysroot=root.path, use_env=False, sizes=False).libraries:
        if lib.path is None:
            continue
        host = Path(lib.path)
        if inner_path(root.path, host) in shipped or \
                inner_path(root.path, host.resolve()) in shipped:
            try:
                out[lib.name] = asdict(section_sizes(host.resolve()))
            except (OSError, ValueError, ELFError):
                continue
    return out
