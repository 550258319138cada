"""The shared libraries of a Debian program's own source package, which its size counts.

Debian splits a program from its libraries: /usr/bin/node is a launcher of a few KiB and V8
lives in libnode.so.108 (binary package libnode108, source package nodejs); flac's codec is
libFLAC.so.12 (libflac12, source flac). A size row of the program alone compares launchers.
The libraries counted are those the program loads (resolved in its sysroot as ld.so does,
obtain/libraries.py) that a binary package built from the program's own source package ships;
other packages' libraries (the C library, libssl for a program not built from openssl) are
the system's, as for a program built from source.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path

from elftools.common.exceptions import ELFError

from ..elf import section_sizes
from .libraries import inspect_binary
from .sysroot import Sysroot, pool_dir


def _dpkg_deb(*args: str) -> str | None:
    exe = shutil.which("dpkg-deb")
    if exe is None:
        return None
    proc = subprocess.run([exe, *args], capture_output=True, text=True, check=False)
    return proc.stdout if proc.returncode == 0 else None


def facts_dir(cache_root: Path) -> Path:
    """Where what a .deb of the pool says (its source package, its paths) is remembered."""
    return cache_root / "debian" / "debfacts"


def _remembered(deb: Path, kind: str, memo: Path | None,
                compute: Callable[[Path], list[str] | None]) -> list[str] | None:
    """compute(deb), remembered in `memo` under the .deb's name, size and time: a pool file is
    one Debian file name, never rewritten in place, so its answers never change; one fetched
    again (another time) is asked anew. Each answer costs dpkg-deb a decompression (a mariadb
    sysroot: 96 .debs, 12 CPU s for every run); what is remembered is the answer itself, and
    an unreadable memo is asked anew. Nothing is remembered when dpkg-deb failed."""
    if memo is None:
        return compute(deb)
    try:
        st = deb.stat()
    except OSError:
        return compute(deb)
    path = memo / f"{deb.name}.{st.st_size}-{st.st_mtime_ns}.{kind}.json"
    with contextlib.suppress(OSError, ValueError):
        doc = json.loads(path.read_text())
        if isinstance(doc, list) and all(isinstance(x, str) for x in doc):
            return doc
    answer = compute(deb)
    if answer is not None:
        with contextlib.suppress(OSError):
            memo.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".facts-", dir=memo)
            try:
                with os.fdopen(fd, "w") as fh:
                    json.dump(answer, fh)
                os.replace(tmp, path)  # whole or not at all, whoever writes it at the same time
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
    return answer


def source_of(deb: Path, memo: Path | None = None) -> str | None:
    """The source package a .deb was built from (its own name when it says none)."""
    answer = _remembered(deb, "source", memo, _source_of)
    return answer[0] if answer else None


def _source_of(deb: Path) -> list[str] | None:
    out = _dpkg_deb("-f", str(deb), "Source", "Package")
    if out is None:
        return None
    fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    # "Source: glibc (2.36-9)": a binary version that differs from the source's
    source = (fields.get("Source") or fields.get("Package") or "").split(" ", 1)[0]
    return [source] if source else []


def contents(deb: Path, memo: Path | None = None) -> set[str]:
    """Every path a .deb ships (files and links), as the sysroot sees it: /usr/lib/..."""
    return set(_remembered(deb, "contents", memo, _contents) or ())


def _contents(deb: Path) -> list[str] | None:
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


def _owner(program: str, debs: Iterable[tuple[str, Path]], memo: Path) -> Path | None:
    for _, deb in debs:
        if program in contents(deb, memo):
            return deb
    return None


def own_libraries(root: Sysroot, exe: Path, cache_root: Path,
                  asked: Iterable[str] = ()) -> dict[str, dict[str, int | None]]:
    """{soname: sizes} of the libraries ``exe`` (a program of ``root``) loads that a package of
    its own source package ships; {} when none does, or the packages are not at hand."""
    pool = pool_dir(cache_root)
    memo = facts_dir(cache_root)
    debs = [(p.name, pool / p.filename) for p in root.pins if (pool / p.filename).is_file()]
    program = inner_path(root.path, exe.resolve())
    first = set(asked)
    # the packages asked for first: the program is one of theirs, almost always
    found = _owner(program, sorted(debs, key=lambda nd: nd[0] not in first), memo)
    source = source_of(found, memo) if found is not None else None
    if found is None or source is None:
        return {}
    shipped: set[str] = set()
    for _, deb in debs:
        if deb != found and source_of(deb, memo) == source:
            shipped |= contents(deb, memo)
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
