"""Untimed helper commands around the measured ones: a profile's setup, a server's client steps."""

from __future__ import annotations

import subprocess
from pathlib import Path


def untimed_step(argv: list[str], cwd: Path, env: dict[str, str] | None, timeout_s: float,
                 what: str) -> str | None:
    """Run one helper command to completion; None when it worked, else why not, in one line."""
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return f"{what} timed out after {timeout_s:g}s"
    except OSError as exc:
        return f"{what} could not start ({argv[0]}): {exc.strerror}"
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        return f"{what} failed (exit {proc.returncode}): {tail[0]}"
    return None
