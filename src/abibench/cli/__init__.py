"""Command line: parse, call the stages, print. No measurement logic lives here.

One module per command (or group of commands that share a handler), each with its own
`add_parser`; cli/commands.py lists them once and builds, on demand, the part of the parser
of the command being run; this module parses and dispatches to that command's module alone.
`abibench.cli:main` is the entry point.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any

from ..errors import EXIT_INTERRUPTED, EXIT_USAGE, AbibenchError
from ..toplevel import guarded
from .commands import BY_NAME, build_parser, handler_of, lazy_parser
from .printing import _say

# Names tests and scripts import from `abibench.cli`; those of one command's module are
# imported when asked for (`__getattr__`), so that a start does not import that command.
__all__ = ["_asked_abis", "_join_negative_values", "build_parser", "fleet_run_args", "main"]
_FROM_MODULES = {"_asked_abis": "options", "fleet_run_args": "fleet"}


def __getattr__(name: str) -> Any:
    if name in _FROM_MODULES:
        return getattr(importlib.import_module(f"{__name__}.{_FROM_MODULES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Options of `run` that take a value that may start with '-' (a mistake the parser must
# explain, not mistake for an option: `--max-time -5s`).
VALUE_OPTIONS = {"--rounds", "--min-rounds", "--max-rounds", "--precision", "--max-time",
                 "--warmup", "--seed", "--timeout", "--cflags"}


def _split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """The arguments abibench parses, and the program's own after `--` (with --binary)."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def _join_negative_values(argv: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--counters":
            # `--counters` alone means instructions; a following word is its value only when it
            # is one (`--counters nbody` counts nbody's instructions).
            given = argv[i + 1] if i + 1 < len(argv) and argv[i + 1] in ("insn", "cache") else None
            out.append(f"--counters={given or 'insn'}")
            i += 2 if given else 1
            continue
        if argv[i] in VALUE_OPTIONS and i + 1 < len(argv) and \
                re.match(r"^-(\d|\.\d)", argv[i + 1]):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    """The entry point: whatever fails ends as one line and a code (toplevel.py)."""
    return guarded(lambda: _command(argv))


def not_utf8(values: list[str]) -> str | None:
    """The first value that is not UTF-8 text, if any. Python gives a command-line value's bytes
    that are not UTF-8 as lone surrogates (U+DC80-U+DCFF); such a value works as a path, but
    everything abibench keeps or shows is text (a stored run, a profile, a report), and no
    UTF-8 writer can take it (reliability.md, "Text abibench writes is valid Unicode")."""
    for value in values:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value
    return None


def _command(argv: list[str] | None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    bad = not_utf8(given)
    if bad is not None:
        _say(f"abibench: error: command-line value '{bad}' is not UTF-8 text "
             "(a file or directory name in another encoding?): abibench keeps what it is given "
             "as text; rename it, or pass a link to it whose name is UTF-8", sys.stderr)
        return EXIT_USAGE
    own, program_args = _split_argv(given)
    args = lazy_parser().parse_args(_join_negative_values(own))
    args.program_args = program_args
    if program_args and args.command != "run":
        print("abibench: error: arguments after -- are a program's, for `run --binary`",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        return _dispatch(args, own)
    except AbibenchError as exc:
        _say(f"abibench: error: {exc}", sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("abibench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _dispatch(args: Any, own: list[str]) -> int:
    takes = BY_NAME[args.command].takes
    handler = handler_of(args.command)
    if takes == "":
        return int(handler(args))
    if takes == "argv":
        return int(handler(args, _join_negative_values(own)))
    # Imported here, not at the top: a command without a database (and --help, --version)
    # does not pay for the store's modules.
    from ..store.open import db_ref, open_store

    ref = db_ref(args.db)
    if takes == "files":
        from ..store.sources import is_file_ref
        from .sources import _report_sources

        sources = _report_sources(args)
        if sources and all(is_file_ref(r) for r in sources):
            # Exported files only: no database is opened (a shared one may be out of reach).
            return int(handler(args, None))
    if takes == "ref":
        return int(handler(args, ref))
    # The commands that only read open it read-only: they work on a read-only file,
    # directory or mount (or a read-only role), and never migrate or write it.
    store = open_store(ref, readonly=takes in ("read", "files"))
    try:
        return int(handler(args, store))
    finally:
        store.close()
