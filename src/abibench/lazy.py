"""Modules imported on their first use, not at start-up.

scipy.stats costs about a second of CPU to import, more than the rest of abibench together, and
most invocations never compute a statistic: `export`, `runs`, `--help`, and every refusal of bad
input. Every module that uses scipy takes it from here (tests/invariants/test_lazy_imports.py
checks that none imports it at start-up), so such a command never pays for it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _OnFirstUse(ModuleType):
    """Stands for the module `name`; imports it at the first attribute asked for (the import
    system's own lock makes that once, whichever thread asks first)."""

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self.__name__), attr)


def lazy_module(name: str) -> ModuleType:
    """The module `name`, imported when one of its attributes is first used."""
    return _OnFirstUse(name)
