"""abibench's own small C programs (native/): compiled once per source version, cached.

The sample launcher and the noise probe are C so that what they measure is not disturbed by a
Python interpreter: a parent's resident memory, or its own scheduling.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

from .errors import HostError
from .locks import made_once
from .paths import NATIVE_DIR


@cache
def native_tool(name: str, cache_root: Path, static: bool = False,
                flags: tuple[str, ...] = (), cc: str | None = None) -> Path:
    """The binary of native/<name>.c, built with the host compiler on first use; `static`: linked
    statically (a booted guest's init, run/vm.py, has no C library beside it); `flags`: the
    target ABI's own (-m32: a 32-bit guest's programs, obtain/sysimage.py); `cc`: another
    compiler (a cross gcc: an ARM guest's programs)."""
    src = NATIVE_DIR / f"{name}.c"
    link = (*flags, "-static") if static else tuple(flags)
    # The headers it includes (native/*.h) are part of what it is built from.
    headers = b"".join(h.read_bytes() for h in sorted(NATIVE_DIR.glob("*.h")))
    compiler = (Path(cc).name,) if cc else ()
    digest = hashlib.sha256(src.read_bytes() + headers + " ".join((*compiler, *link)).encode()
                            ).hexdigest()[:16]
    exe = cache_root / "tools" / digest / f"abibench-{name}"
    # One compiler per tool at a time (locks.py): a concurrent process waits, then finds it.
    return made_once(exe, lambda: exe if exe.is_file() else None,
                     lambda: _compile(src, link, exe, name, cc))


def _compile(src: Path, link: tuple[str, ...], exe: Path, name: str,
             compiler: str | None = None) -> Path:
    cc = compiler or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise HostError(f"no C compiler to build abibench's {name} tool: apt-get install "
                        "build-essential")
    exe.parent.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_suffix(f".tmp{os.getpid()}")
    proc = subprocess.run([cc, "-O2", "-Wall", "-pthread", *link, "-o", str(tmp), str(src)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise HostError(f"cannot build abibench's {name} tool: {proc.stderr.strip()[:300]}")
    os.replace(tmp, exe)
    return exe
