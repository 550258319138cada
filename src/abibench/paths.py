"""Where abibench keeps results and caches (XDG directories, overridable for tests)."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
MICRO_DIR = PACKAGE_DIR / "micro"
NATIVE_DIR = PACKAGE_DIR / "native"
PROFILES_DIR = PACKAGE_DIR / "workloads" / "profiles"
PAGES_DIR = PACKAGE_DIR / "pages"  # abibench's own benchmark pages, served to a browser


def data_dir() -> Path:
    env = os.environ.get("ABIBENCH_DATA")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "abibench"


def cache_dir() -> Path:
    env = os.environ.get("ABIBENCH_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "abibench"


def default_db() -> Path:
    return data_dir() / "results.sqlite"
