"""abibench's own small programs built for a target ABI (native/): the empty program whose
peak memory under an emulator is the emulator's own, and the step clock preloaded into
instruction-counting runs. Built with the ABI's compiler and flags, cached by what went in.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..abi import Abi, check_artifact
from ..errors import AbibenchError
from ..paths import NATIVE_DIR
from .build import compiler_version

# name -> (extra flags, output suffix): the step clock is a library for LD_PRELOAD.
HELPERS = {"empty": ((), ""), "stepclock": (("-fPIC", "-shared"), ".so")}


@dataclass(frozen=True)
class AbiHelpers:
    """The helpers of one ABI, None where one could not be built (with the reason)."""

    empty: Path | None = None
    stepclock: Path | None = None
    problems: tuple[str, ...] = ()


def helper(name: str, abi: Abi, cc: str, cflags: tuple[str, ...], cache_root: Path) -> Path:
    """native/<name>.c built for `abi` with `cc` and the run's flags; raises AbibenchError."""
    extra, suffix = HELPERS[name]
    src = NATIVE_DIR / f"{name}.c"
    argv_flags = (*abi.cflags, *cflags, *extra)
    key = hashlib.sha256(b"\0".join([src.read_bytes(), cc.encode(), " ".join(argv_flags).encode(),
                                     compiler_version(cc).encode()])).hexdigest()[:16]
    out = cache_root / "helpers" / abi.name / f"{name}-{key}{suffix}"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}")
    proc = subprocess.run([cc, *argv_flags, "-o", str(tmp), str(src)], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        first = (proc.stderr.strip().splitlines() or ["no output"])[0]
        raise AbibenchError(f"abibench's {name} program does not build for {abi.name} with "
                            f"{cc}: {first[:200]}")
    try:
        check_artifact(tmp, abi)
    except AbibenchError:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, out)
    return out


def helpers_for(abi: Abi, cc: str | None, cflags: tuple[str, ...], cache_root: Path, *,
                empty: bool, stepclock: bool) -> AbiHelpers:
    """The helpers asked for; a failure is a reason, not an error (the run goes on without)."""
    built: dict[str, Path | None] = {"empty": None, "stepclock": None}
    problems = []
    for name, wanted in (("empty", empty), ("stepclock", stepclock)):
        if not wanted:
            continue
        if cc is None:
            problems.append(f"no {abi.name} compiler for abibench's {name} program")
            continue
        try:
            built[name] = helper(name, abi, cc, cflags, cache_root)
        except AbibenchError as exc:
            problems.append(str(exc))
    return AbiHelpers(built["empty"], built["stepclock"], tuple(problems))
