"""How commands print: plain lines through text.one_line, JSON, rich consoles, the terminal report."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from ..text import one_line

if TYPE_CHECKING:
    from rich.console import Console

    from ..analyse import report as analysis


def _say(line: str, file: Any = None) -> None:
    """Print one line of plain text (no rich markup) that may hold text abibench did not write:
    paths, run ids, imported fields, a program's output. Control and escape sequences never
    reach the terminal (text.one_line)."""
    print(one_line(line), file=file or sys.stdout)


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


def _console(stream: Any = None) -> Console:
    # rich is imported here, not at the top: a command that prints plain lines (or JSON, or
    # only refuses its input) does not pay for it.
    from rich.console import Console

    out = stream or sys.stdout
    tty = out.isatty()
    # Not a terminal (CI, a pipe): fixed width, no colour codes in logs.
    # emoji=False: a ":name:" in a profile's title is text, not a picture.
    return Console(file=out, width=None if tty else 140, no_color=not tty, highlight=False,
                   soft_wrap=False, emoji=False)


def _print_terminal(rep: analysis.Report) -> None:
    from ..report import terminal

    con = _console()
    sys.stdout.write(terminal.render(rep, color=sys.stdout.isatty(), width=con.width))
