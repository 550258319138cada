"""Command line: parse, call the stages, print. No measurement logic lives here.

One module per command (or group of commands that share a handler), each with its own
`add_parser`; this module builds the parser from them, in the order `--help` lists them, and
dispatches. `abibench.cli:main` is the entry point.
"""

from __future__ import annotations

import argparse
import re
import sys

from .. import __version__
from ..errors import EXIT_INTERRUPTED, EXIT_USAGE, AbibenchError
from ..store.open import db_ref, open_store
from ..store.sources import is_file_ref
from ..toplevel import guarded
from . import (
    advise,
    calibrate,
    explain,
    export,
    fleet,
    history,
    importing,
    inspection,
    listing,
    probe,
    push,
    report,
    run,
    runs,
    system,
    vm,
)
from .advise import cmd_advise
from .argtypes import _Parser
from .calibrate import cmd_calibrate
from .explain import cmd_explain
from .export import cmd_export
from .fleet import cmd_fleet, fleet_run_args
from .history import cmd_history, cmd_site
from .importing import cmd_import
from .inspection import cmd_inspect
from .listing import cmd_list
from .options import _asked_abis, _db_option
from .printing import _say
from .probe import cmd_probe
from .push import cmd_push
from .report import _report_sources, cmd_report
from .run import _with_run_store
from .runs import cmd_runs
from .system import cmd_system
from .vm import cmd_vm

# Names tests and scripts import from `abibench.cli`.
__all__ = ["_asked_abis", "_join_negative_values", "build_parser", "fleet_run_args", "main"]

# Every command's parser, in the order `abibench --help` lists them (report.py adds `report`
# and `compare`).
COMMANDS = (probe, calibrate, listing, run, fleet, vm, system, runs, report, history, explain, advise,
            importing, export, push, inspection)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="abibench", description="Is the 32-bit or the 64-bit build faster here?")
    p.add_argument("--version", action="version", version=f"abibench {__version__}")
    _db_option(p, default=None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return p


_READ_COMMANDS = ("runs", "report", "compare", "export", "explain", "advise", "history",
                  "site")


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


def _command(argv: list[str] | None) -> int:
    own, program_args = _split_argv(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(_join_negative_values(own))
    args.program_args = program_args
    if program_args and args.command != "run":
        print("abibench: error: arguments after -- are a program's, for `run --binary`",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.command == "probe":
            return cmd_probe(args)
        if args.command == "inspect":
            return cmd_inspect(args)
        if args.command == "calibrate":
            return cmd_calibrate(args)
        if args.command == "list":
            return cmd_list(args)
        if args.command == "fleet":
            return cmd_fleet(args, _join_negative_values(own))
        if args.command == "vm":
            return cmd_vm(args)
        if args.command == "system":
            return cmd_system(args)
        ref = db_ref(args.db)
        readers = {"report": cmd_report, "compare": cmd_report, "explain": cmd_explain,
                   "advise": cmd_advise}
        sources = _report_sources(args) if args.command in readers else []
        if sources and all(is_file_ref(r) for r in sources):
            # Exported files only: no database is opened (a shared one may be out of reach).
            return readers[args.command](args, None)
        if args.command == "run":
            return _with_run_store(args, ref)
        if args.command == "push":
            return cmd_push(args, ref)
        # The commands that only read open it read-only: they work on a read-only file,
        # directory or mount (or a read-only role), and never migrate or write it.
        store = open_store(ref, readonly=args.command in _READ_COMMANDS)
        try:
            handler = {"runs": cmd_runs, "report": cmd_report, "compare": cmd_report,
                       "import": cmd_import, "export": cmd_export, "explain": cmd_explain,
                       "advise": cmd_advise, "history": cmd_history,
                       "site": cmd_site}[args.command]
            return handler(args, store)
        finally:
            store.close()
    except AbibenchError as exc:
        _say(f"abibench: error: {exc}", sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("abibench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


