"""A file a user names (a profile, an exported run) is read only when it is a regular file of
sensible size: a FIFO, a device or a huge file is refused with one line, never waited on."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]

# A FIFO with no writer would block a plain read forever; the CLI must answer well before this.
NO_HANG_S = 60


def _error(r: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert r.returncode == code, (r.returncode, r.stdout[-1500:], r.stderr[-1500:])
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("abibench: error: "), r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def _fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def test_a_profile_that_is_a_fifo_is_refused_not_waited_on(cli: Cli, tmp_path: Path) -> None:
    fifo = _fifo(tmp_path, "p.toml")
    r = cli("run", str(fifo), "--rounds", "1", "--no-html", timeout=NO_HANG_S)
    _error(r, 2, "p.toml", "a FIFO")


def test_an_import_from_a_fifo_is_refused_not_waited_on(cli: Cli, tmp_path: Path) -> None:
    fifo = _fifo(tmp_path, "run.json")
    r = cli("import", str(fifo), timeout=NO_HANG_S)
    _error(r, 2, "run.json", "a FIFO", "abibench export")


@pytest.mark.parametrize("command", ["import", "run"])
def test_a_character_device_is_refused_not_read_forever(cli: Cli, command: str) -> None:
    # /dev/zero never ends: a read without a limit would fill the memory.
    r = cli(command, "/dev/zero", timeout=NO_HANG_S)
    _error(r, 2, "/dev/zero", "character device")


def test_a_huge_profile_is_refused_by_its_size(cli: Cli, tmp_path: Path) -> None:
    prof = tmp_path / "huge.toml"
    with prof.open("wb") as fh:
        fh.truncate(64 << 20)  # sparse: no disk spent
    r = cli("run", str(prof), "--rounds", "1", "--no-html", timeout=NO_HANG_S)
    _error(r, 2, "huge.toml", "too large")


def test_a_profile_that_is_not_utf8_is_one_line(cli: Cli, tmp_path: Path) -> None:
    prof = tmp_path / "latin1.toml"
    prof.write_bytes(b'id = "caf\xe9"\n')
    r = cli("run", str(prof), "--rounds", "1", "--no-html", timeout=NO_HANG_S)
    _error(r, 2, "latin1.toml", "not UTF-8")


def test_a_profile_nested_too_deeply_is_one_line(cli: Cli, tmp_path: Path) -> None:
    prof = tmp_path / "deep.toml"
    prof.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    r = cli("run", str(prof), "--rounds", "1", "--no-html", timeout=NO_HANG_S)
    _error(r, 2, "deep.toml", "not valid TOML")
