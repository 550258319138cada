from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build cache for the whole session: tests that need a cold cache make their own."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def cli_env(tmp_path: Path, shared_cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ABIBENCH_DATA"] = str(tmp_path / "data")
    env["ABIBENCH_CACHE"] = str(shared_cache)
    env["CI"] = "true"
    return env


@pytest.fixture
def cli(cli_env: dict[str, str]) -> Cli:
    def run(*args: str, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "abibench", *args], capture_output=True,
                              text=True, env=env or cli_env, timeout=timeout, check=False)

    return run


def db_path(env: dict[str, str]) -> Path:
    return Path(env["ABIBENCH_DATA"]) / "results.sqlite"
