"""Why a build failed, in a few lines of its own log.

A failed build's exit status says nothing; the reason (a syntax error, a missing library,
Rust's "can't find crate for `std`") is in the log. The lines that name it are usually the ones
saying "error" (compilers, linkers, make, cargo all do), else the last ones written. Logs are
the output of programs abibench did not write: every line goes through text.one_line before it
is part of a message, and the whole is bounded.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..text import one_line

CAUSE_LINES = 5  # at most this many lines of a log in a message
LINE_CHARS = 200  # each cut to this many characters
TAIL_BYTES = 65536  # only the end of a long log is read
COMMAND_MARK = "$ "  # what starts the line buildbox.run writes for each command it runs

# What the tools that fail builds write on the line that says why: gcc/clang "error:", ld's
# "cannot find -lfoo" and "undefined reference", make's "***", cargo's "error[E0463]".
_MEANINGFUL = re.compile(r"error|cannot find|undefined reference|not found|No such file|\*\*\*"
                         r"|(?:^|\W)(?:help|hint):", re.IGNORECASE)
# The last two alternatives are the tool's own fix, which an error line alone does not give:
# rustc's "= help: consider downloading the target with `rustup target add i686-...`" below
# "error[E0463]: can't find crate for `std`", a linker's or meson's "hint:".


def cause(text: str, limit: int = CAUSE_LINES) -> list[str]:
    """The lines of a build log that say why it failed: the last `limit` that name an error or
    the tool's fix for it (a "help:" or "hint:" line), or
    the last `limit` non-blank lines when none does; each one line, sanitised and bounded."""
    lines = [one_line(line).strip() for line in text.splitlines()]
    # abibench's own record of each command (COMMAND_MARK) is no tool's output: a recipe that
    # mentions "error" (an `echo 'error: ...'` branch) would otherwise be its own cause.
    lines = [line for line in lines if line and not line.startswith(COMMAND_MARK)]
    chosen = [line for line in lines if _MEANINGFUL.search(line)] or lines
    return [_cut(line) for line in chosen[-limit:]] if limit > 0 else []


CONTEXT = 60  # characters kept before the word that makes a long line meaningful


def cause_of(log: Path, limit: int = CAUSE_LINES) -> list[str]:
    """:func:`cause` of the end of a log file; nothing when it cannot be read."""
    try:
        with log.open("rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - TAIL_BYTES))
            data = f.read()
    except OSError:
        return []
    return cause(data.decode("utf-8", errors="replace"), limit)


def _cut(line: str) -> str:
    """At most LINE_CHARS characters of a line, keeping the part that names the error (a
    compiler's line starts with a long path; the "error:" can be far along)."""
    if len(line) <= LINE_CHARS:
        return line
    m = _MEANINGFUL.search(line)
    start = max(0, m.start() - CONTEXT) if m and m.end() > LINE_CHARS - 1 else 0
    head = "…" if start else ""
    body = line[start: start + LINE_CHARS - len(head)]
    if start + len(body) < len(line):
        body = body[:-1] + "…"
    return head + body
