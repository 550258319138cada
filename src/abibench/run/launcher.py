"""Execute one sample: spawn without a shell, enforce the timeout, measure the process alone.

Timing, rusage and peak RSS come from a small C launcher (native/launch.c) rather than from
Python's os.wait4: Linux carries a parent's resident high-water mark into the child at exec, so a
Python parent would inflate the peak memory of every small program it measures.

Nothing of a sample outlives it: the launcher kills whatever the program left behind (and counts
it: RawResult.escaped), and dies with abibench, even when abibench is killed with SIGKILL; the
sample's temporary directory is owned by this process (workspace.py), so a later run removes it
if this one could not.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import HostError, UsageError
from ..tools import native_tool
from ..workspace import owned_dir

STDOUT_PARSE_LIMIT = 16 * 1024 * 1024  # metrics are parsed from at most this much output
# The PID the launcher must find as its parent; it removes the variable before the program runs.
PARENT_ENV = "ABIBENCH_LAUNCH_PARENT"
GUARD_GRACE_S = 10.0  # a launcher that ignores SIGTERM this long is killed


@dataclass(frozen=True)
class RawResult:
    status: str  # exited | signaled | timeout | interrupted | execfail
    exit_code: int
    signal: int
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_kb: int
    minflt: int
    majflt: int
    errno: int
    stdout_digest: str
    stdout: str  # decoded (first STDOUT_PARSE_LIMIT bytes), for metric parsing
    stderr_tail: str
    escaped: int = 0  # processes the program left alive when it ended, killed by the launcher

    @property
    def ok(self) -> bool:
        return self.status == "exited" and self.exit_code == 0

    def describe_failure(self) -> str:
        if self.status == "timeout":
            return "timed out"
        if self.status == "interrupted":
            return "interrupted"
        if self.status == "execfail":
            return f"could not execute ({os.strerror(self.errno)})"
        if self.status == "signaled":
            name = signal.Signals(self.signal).name if self.signal in signal.valid_signals() \
                else str(self.signal)
            return f"killed by {name}"
        tail = self.stderr_tail.strip().splitlines()
        return f"exit code {self.exit_code}" + (f": {tail[-1]}" if tail else "")


@cache
def launcher(cache_root: Path) -> Path:
    """The launcher binary, compiled once per source version with the host compiler."""
    return native_tool("launch", cache_root)


def parse_result_line(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def _digest_file(path: Path) -> tuple[str, str]:
    h = hashlib.sha256()
    head = bytearray()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            if len(head) < STDOUT_PARSE_LIMIT:
                head += chunk[: STDOUT_PARSE_LIMIT - len(head)]
    return h.hexdigest(), head.decode("utf-8", errors="replace")


def _tail(path: Path, limit: int = 4000) -> str:
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - limit))
        return fh.read().decode("utf-8", errors="replace")


def resolve_program(program: str) -> str:
    if "/" in program:
        return program
    found = shutil.which(program)
    if found is None:
        raise UsageError(f"program '{program}' not found on PATH: install it or give its path")
    return found


def _guard(proc: subprocess.Popen[bytes]) -> None:
    """A launcher gone wrong: SIGTERM first (it kills its sample and everything it started)."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(GUARD_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()


def run_sample(argv: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float,
               launch: Path, stdin: Path | None = None) -> RawResult:
    """Run argv once. KeyboardInterrupt propagates after the child's process group is dead."""
    # Owned by this process (workspace.py): a later run removes it if this one is killed.
    with owned_dir("sample") as tmp:
        result = tmp / "result"
        out_path, err_path = tmp / "stdout", tmp / "stderr"
        cmd = [str(launch), str(result), str(int(timeout_s * 1000)),
               resolve_program(argv[0]), *argv[1:]]
        try:
            stdin_fh = stdin.open("rb") if stdin is not None else None
        except OSError as exc:
            raise UsageError(f"cannot open standard input {stdin}: {exc.strerror}; check [run] "
                             "stdin") from None
        with out_path.open("wb") as out, err_path.open("wb") as err:
            try:
                # The launcher checks it is still our child: if we died before it could ask the
                # kernel to tell it so (PR_SET_PDEATHSIG), it runs nothing.
                proc = subprocess.Popen(cmd, stdin=stdin_fh or subprocess.DEVNULL, stdout=out,
                                        stderr=err, cwd=cwd,
                                        env={**env, PARENT_ENV: str(os.getpid())})
            finally:
                if stdin_fh is not None:
                    stdin_fh.close()
            # The launcher enforces the timeout; this guard only catches a launcher gone wrong.
            # A blocking wait, not wait(timeout=...): that polls with sleeps of up to 50 ms,
            # which delays every sample and wakes the parent during the measurement.
            guard = threading.Timer(timeout_s + 60, _guard, (proc,))
            guard.start()
            try:
                proc.wait()
            except KeyboardInterrupt:
                # When Ctrl-C came from a terminal the launcher saw it too; otherwise tell it.
                proc.send_signal(signal.SIGTERM)
                proc.wait()
                raise
            finally:
                guard.cancel()
        if proc.returncode != 0 or not result.is_file():
            raise HostError(f"the sample launcher failed (exit {proc.returncode}): "
                            f"{_tail(err_path).strip()[-300:]}")
        r = parse_result_line(result.read_text())
        digest, text = _digest_file(out_path)
        return RawResult(
            status=r["status"], exit_code=int(r["code"]), signal=int(r["signal"]),
            wall_s=int(r["wall_ns"]) / 1e9, user_s=int(r["user_us"]) / 1e6,
            sys_s=int(r["sys_us"]) / 1e6, max_rss_kb=int(r["maxrss_kb"]),
            minflt=int(r["minflt"]), majflt=int(r["majflt"]), errno=int(r["errno"]),
            stdout_digest=digest, stdout=text, stderr_tail=_tail(err_path),
            escaped=int(r.get("escaped", "0")),
        )
