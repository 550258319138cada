"""docs/architecture.md's module map cannot drift from the tree.

Every module of the package is named in the map ("Where things live"), and every module the map
names exists; a renamed, added or removed module fails here until the map says so.
"""

from __future__ import annotations

import re
from pathlib import Path

import abibench

PACKAGE = Path(abibench.__file__).resolve().parent
MAP = PACKAGE.parent.parent / "docs" / "architecture.md"


def _expand(entry: str) -> list[str]:
    """`report/{terminal,html}.py` -> report/terminal.py, report/html.py."""
    m = re.fullmatch(r"(.*)\{([^}]*)\}(.*)", entry)
    if m is None:
        return [entry]
    return [f"{m[1]}{part}{m[3]}" for part in m[2].split(",")]


def map_entries(text: str) -> set[str]:
    section = text.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    out: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("|"):
            continue
        cells = line.split("|")
        if len(cells) < 3:
            continue
        for code in re.findall(r"`([^`]+\.py)`", cells[2]):
            out.update(_expand(code))
    return out


def package_modules() -> set[str]:
    return {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
            if "profiles" not in p.parts and "callback_plugins" not in p.parts
            and p.name not in ("__init__.py", "__main__.py")}


def test_every_module_is_in_the_map_and_every_entry_exists() -> None:
    entries = map_entries(MAP.read_text(encoding="utf-8"))
    modules = package_modules()
    assert sorted(modules - entries) == [], "modules missing from docs/architecture.md's map"
    assert sorted(entries - modules) == [], "the map names modules that do not exist"


def test_the_map_reader_expands_braces() -> None:
    text = "## Where things live\n| a | `report/{x,y}.py`, `z.py` | job |\n## Next\n"
    assert map_entries(text) == {"report/x.py", "report/y.py", "z.py"}
