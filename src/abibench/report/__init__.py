"""Renderers: each turns one analysed Report into text, and does nothing else.

One module per format, all with ``render(report) -> str``, registered in RENDERERS. A module is
imported only when its format is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..analyse.report import Report
from ..outputs import check_output, write_output

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


# Formats written in pieces as they are made (a run of 10^6 samples is hundreds of MB of them):
# format -> (module, function giving the pieces whose join is the renderer's text).
STREAMED: dict[str, tuple[str, str]] = {
    "samples-csv": ("csvout", "samples_chunks"),
    "json": ("jsonout", "chunks"),
}


def pieces(report: Report, fmt: str) -> str | Iterable[str]:
    """The format's text, or its pieces when it is written as it is made."""
    if fmt in STREAMED:
        module, func = STREAMED[fmt]
        made: Iterable[str] = getattr(importlib.import_module(f"{__name__}.{module}"),
                                      func)(report)
        return made
    return render(report, fmt)


@dataclass(frozen=True)
class Output:
    fmt: str
    path: Path


# The option that asks for each format, named when its file is refused.
OPTIONS = {"html": "--html", "markdown": "--markdown", "csv": "--csv",
           "samples-csv": "--samples-csv", "json": "--json"}


def write_file(path: Path, text: str | Iterable[str], option: str = "the output file") -> None:
    """A file the user asked for: never over an input, written atomically (outputs.py)."""
    write_output(path, text, option)


def write(report: Report, outputs: list[Output]) -> list[tuple[str, Path]]:
    """Write every requested file; return (description, path) for each one written."""
    for out in outputs:  # all refused before any is written
        check_output(out.path, OPTIONS.get(out.fmt, out.fmt))
    done: list[tuple[str, Path]] = []
    for out in outputs:
        write_file(out.path, pieces(report, out.fmt), OPTIONS.get(out.fmt, out.fmt))
        done.append((DESCRIPTIONS.get(out.fmt, out.fmt), out.path))
    return done
