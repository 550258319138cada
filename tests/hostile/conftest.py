"""Hostile tests: each does the bad thing for real, in a temporary directory, with a canary
file outside every directory abibench may touch. The canary must survive every test."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def canary(tmp_path: Path) -> Iterator[Path]:
    """A file abibench must never touch; checked after the test, whatever it did."""
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "canary.txt"
    body = os.urandom(64).hex().encode()
    path.write_bytes(body)
    stat = path.stat()
    yield path
    assert path.is_file() and not path.is_symlink(), "the canary was removed or replaced"
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(body).digest(), \
        "the canary was written to"
    assert path.stat().st_mtime_ns == stat.st_mtime_ns, "the canary was touched"


@pytest.fixture
def profile_dir(tmp_path: Path, fixtures: Path) -> Path:
    """A project directory holding the test programs' sources, next to the canary."""
    proj = tmp_path / "proj"
    proj.mkdir()
    for name in ("metric.c", "crash.c", "spin.c", "hang.c"):
        (proj / name).write_bytes((fixtures / name).read_bytes())
    return proj


ProfileWriter = Callable[..., Path]


@pytest.fixture
def write_profile(profile_dir: Path) -> ProfileWriter:
    """write_profile(name, extra_toml, id=..., command=..., source=...) -> the profile's path."""

    def write(name: str, extra: str = "", *, wid: str | None = None,
              command: str = '["{bin}/metric", "0"]',
              source: str = '[source]\nfiles = ["metric.c"]\nartifacts = ["metric"]\n') -> Path:
        text = (f'id = "{wid or name}"\ntitle = "hostile {name}"\nprimary = "value"\n'
                f"{source}\n[run]\ncommand = {command}\ntimeout = \"30s\"\n{extra}\n"
                '[[metric]]\nname = "value"\nparse = { regex = \'(?m)^value: ([0-9.]+)$\' }\n'
                'unit = "units"\nbetter = "higher"\n')
        path = profile_dir / f"{name}.toml"
        path.write_text(text)
        return path

    return write


Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def refused(cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> Cli:
    """`abibench ARGS...` run in this process, for a command line the test expects refused: what
    `cli` returns (the exit code, stdout, stderr), without a Python start per call (0.2-0.3 CPU
    s). The process's exit code is main()'s (`python -m abibench` is `sys.exit(main())`), and
    main's environment is the one `cli` gives its process (cli_env, read at each call). Tests of
    what a real process does (signals, its exit after a run) keep `cli`."""
    from abibench.cli import main

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        want = env or cli_env
        for key in (set(want) | set(os.environ)) - {"PYTEST_CURRENT_TEST"}:
            if key not in want:
                monkeypatch.delenv(key)
            elif os.environ.get(key) != want[key]:
                monkeypatch.setenv(key, want[key])
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["abibench", *args], code, out, err)

    return run
