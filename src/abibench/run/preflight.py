"""Everything that can be checked before build time is spent: a compiler that compiles,
programs that exist, a plan whose numbers make sense.

Each check raises one error naming the thing and the fix: bad input is exit 2 (UsageError),
something this host lacks exit 3 (HostError).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..abi import Abi
from ..errors import HostError, UsageError
from ..probe.abis import AbiStatus
from ..text import one_line
from ..workloads.profile import Workload, substitute

_PROBE = "int main(void) { return 0; }\n"
LATER = ("bin", "work", "out", "src", "port", "host", "program")  # filled by the run, not now


def check_compiler(cc: str, abis: Sequence[Abi], cflags: Sequence[str]) -> None:
    """The compiler given with --cc compiles a test program for every ABI asked for."""
    found = shutil.which(cc)
    if found is None:
        raise HostError(f"compiler '{cc}' not found: install it (apt-get install "
                        "build-essential) or choose another with --cc")
    cc = found
    with tempfile.TemporaryDirectory(prefix="abibench-cc-") as tmp:
        src = Path(tmp) / "t.c"
        src.write_text(_PROBE)
        for abi in abis:
            try:
                proc = subprocess.run([cc, *abi.cflags, *cflags, "-o", str(Path(tmp) / "t"),
                                       str(src)], capture_output=True, text=True, timeout=120,
                                      check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise HostError(f"compiler {cc} does not run ({one_line(str(exc))}): choose "
                                "another with --cc") from None
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
                raise HostError(f"compiler {cc} cannot compile a test program for {abi.name} "
                                f"(exit {proc.returncode}: {one_line(tail[0])[:200]}): choose "
                                "another with --cc, or install the ABI's multilib packages")


def _program(template: str, wl: Workload) -> str | None:
    """The host program a command template starts, or None when it is one of the run's own
    files (the artifact, the work directory, an input), which exist only later."""
    if any(f"{{{n}}}" in template for n in (*LATER, *wl.inputs)):
        return None
    try:
        return substitute(template, {**wl.params, "profile_dir": str(wl.path.parent)})
    except Exception:  # a placeholder only the run fills: nothing to check now
        return None


def check_commands(workloads: Sequence[Workload], provenance: str) -> None:
    """Every host program a workload starts exists: the run command (unless it is the built
    program), the setup step and the server's client steps."""
    for wl in workloads:
        commands: list[tuple[str, tuple[str, ...]]] = [("setup", wl.setup)]
        if wl.server is not None:
            commands += [("command", wl.command), ("prepare", wl.server.prepare),
                         ("warmup", wl.server.warmup)]
        elif provenance != "debian" and not wl.binaries:
            commands += [("command", wl.command), ("after", wl.after)]
        for what, argv in commands:
            if not argv:
                continue
            program = _program(argv[0], wl)
            if program is None:
                continue
            found = shutil.which(program) if "/" not in program else (
                program if Path(program).is_file() else None)
            if found is None:
                raise HostError(f"{wl.path}: [run] {what} starts '{program}', which is not "
                                f"installed here: install it, or give its full path")


def check_plan_numbers(warmup: int, min_rounds: int, max_rounds: int | None) -> None:
    if warmup < 0:
        raise UsageError(f"--warmup {warmup}: give 0 or more warm-up runs per target")
    if max_rounds is not None and max_rounds < min_rounds:
        raise UsageError(f"--max-rounds {max_rounds} is below --min-rounds {min_rounds}: "
                         "raise it or lower --min-rounds")


def check_asked_abis(abis: Sequence[Abi], probes: dict[str, AbiStatus], needs_build: bool) -> None:
    """Every ABI named with --abi can be built (when something is built) and, where only an
    emulator could run it, run: else one error with the package that fixes it (exit 3)."""
    for abi in abis:
        st = probes[abi.name]
        if needs_build and not st.can_build:
            raise HostError(f"--abi {abi.name}: {st.reason}: {st.fix}")
        if abi.emulator and not st.can_run:
            raise HostError(f"--abi {abi.name}: {st.reason}: {st.fix}")
