"""Untimed helper commands around the measured ones: a profile's setup, a server's client steps."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import IO

# What is read back of a step's output: a known answer or a checksum is a few lines; a step
# that prints without end fills a file, never abibench's memory.
STEP_OUTPUT_LIMIT = 1 << 20


def _head(f: IO[bytes]) -> str:
    f.seek(0)
    return f.read(STEP_OUTPUT_LIMIT).decode("utf-8", "replace")


def untimed_output(argv: list[str], cwd: Path, env: dict[str, str] | None, timeout_s: float,
                   what: str) -> tuple[str | None, str]:
    """Run one helper command to completion: (None, or why it failed in one line; the first
    STEP_OUTPUT_LIMIT bytes of its standard output)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=err, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return f"{what} timed out after {timeout_s:g}s", ""
        except OSError as exc:
            return f"{what} could not start ({argv[0]}): {exc.strerror}", ""
        stdout = _head(out)
        if proc.returncode != 0:
            tail = (_head(err) or stdout).strip().splitlines()[-1:] or [""]
            return f"{what} failed (exit {proc.returncode}): {tail[0]}", stdout
        return None, stdout


def untimed_step(argv: list[str], cwd: Path, env: dict[str, str] | None, timeout_s: float,
                 what: str) -> str | None:
    """Run one helper command to completion; None when it worked, else why not, in one line."""
    return untimed_output(argv, cwd, env, timeout_s, what)[0]
