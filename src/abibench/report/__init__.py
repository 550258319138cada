"""Renderers: each turns one analysed Report into text, and does nothing else.

One module per format, all with ``render(report) -> str``, registered in RENDERERS. A module is
imported only when its format is asked for (the HTML renderer loads matplotlib, which takes a
second).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..analyse.report import Report
from ..errors import UsageError

Renderer = Callable[[Report], str]

# format -> (module in this package, function)
RENDERERS: dict[str, tuple[str, str]] = {
    "terminal": ("terminal", "render"),
    "html": ("html", "render"),
    "markdown": ("markdown", "render"),
    "csv": ("csvout", "render"),
    "samples-csv": ("csvout", "render_samples"),
    "json": ("jsonout", "render"),
}

DESCRIPTIONS = {"html": "HTML report", "markdown": "Markdown report", "csv": "results CSV",
                "samples-csv": "samples CSV", "json": "JSON report"}


def renderer(fmt: str) -> Renderer:
    module, func = RENDERERS[fmt]
    found: Renderer = getattr(importlib.import_module(f"{__name__}.{module}"), func)
    return found


def render(report: Report, fmt: str) -> str:
    return renderer(fmt)(report)


@dataclass(frozen=True)
class Output:
    fmt: str
    path: Path


def write_file(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}; choose another path") from None


def write(report: Report, outputs: list[Output]) -> list[tuple[str, Path]]:
    """Write every requested file; return (description, path) for each one written."""
    done: list[tuple[str, Path]] = []
    for out in outputs:
        write_file(out.path, render(report, out.fmt))
        done.append((DESCRIPTIONS.get(out.fmt, out.fmt), out.path))
    return done
