"""The commands, written once: each one's name, one-line help, the module that adds its parser
and holds its handler, and what the handler takes; and the parser built from this table on
demand.

A start pays only for the command it runs: `abibench --help` and `--version` import no
command's module, `abibench report RUN` imports report's alone (its modules import what they
compute with). Each command's parser is built the moment the parse reaches its name, by its
own module's `add_parser`, into the same subcommands action the whole parser has; nothing else
may add to that action (`Subcommands` refuses a command the table does not list, one another
module owns, or a help text the table does not hold), so the parser built in parts is the whole
one's, piece by piece (docs/reliability.md, "A command line built in parts").
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .. import __version__
from .argtypes import _Parser


@dataclass(frozen=True)
class Command:
    name: str
    module: str   # in abibench.cli: its `add_parser(sub)` adds this command, `handler` runs it
    handler: str
    # What the handler takes besides the parsed arguments: "" nothing; "argv" the command line
    # as parsed; "ref" the database's reference; "read"/"write" the opened store; "files" the
    # store opened to read, or None when every source named is an exported file.
    takes: str
    help: str


# In the order `abibench --help` lists them.
COMMANDS: tuple[Command, ...] = (
    Command("probe", "probe", "cmd_probe", "",
            "what this host can build and run for each ABI"),
    Command("calibrate", "calibrate", "cmd_calibrate", "",
            "measure this machine's noise: how steadily each CPU runs, how long it stays at one "
            "speed, and what each sampling design would make of it (kept for an hour, used by "
            "adaptive runs)"),
    Command("list", "listing", "cmd_list", "",
            "the built-in workloads and their suites"),
    Command("run", "run", "_with_run_store", "ref",
            "build and measure workloads per ABI"),
    Command("fleet", "fleet", "cmd_fleet", "argv",
            "the same run on every host of an Ansible inventory, then one comparison of them all"),
    Command("vm", "vm", "cmd_vm", "",
            "programs run in a booted guest (Debian's kernel under full-system emulation): "
            "outputs compared, peak memory; no speed"),
    Command("system", "system", "cmd_system", "",
            "whole Debian systems booted per kernel/userspace combination (QEMU TCG): what each "
            "costs in memory; no speed"),
    Command("runs", "runs", "cmd_runs", "read",
            "list stored runs"),
    Command("report", "report", "cmd_report", "files",
            "show stored runs or result files; write HTML, Markdown, CSV or JSON"),
    Command("compare", "report", "cmd_report", "files",
            "merge result sets from different machines, kernels or days into one N-way "
            "comparison"),
    Command("history", "history", "cmd_history", "read",
            "one workload over the stored runs: the ABI ratio and each ABI's metric per run, and "
            "where they changed"),
    Command("site", "history", "cmd_site", "read",
            "the store as static pages (no server, no scripts): an index of hosts and runs, each "
            "workload's trend, each host, every run's report"),
    Command("explain", "explain", "cmd_explain", "files",
            "why one ABI wins: each comparison's time ratio as instructions x time per "
            "instruction, with the evidence (needs a run with --counters, or --counters=cache)"),
    Command("advise", "advise", "cmd_advise", "files",
            "for a memory budget: instances that fit per ABI, and the throughput each gives"),
    Command("import", "importing", "cmd_import", "write",
            "store others' exported results (validated, never run)"),
    Command("export", "export", "cmd_export", "read",
            "write a run as a versioned JSON document"),
    Command("push", "push", "cmd_push", "ref",
            "upload what runs kept in the local spool while the shared PostgreSQL database "
            "(--db postgresql://...) could not be reached"),
    Command("inspect", "inspection", "cmd_inspect", "",
            "ELF class, machine, interpreter, sizes and libraries of binaries, resolved for their "
            "own ABI"),
)
BY_NAME = {c.name: c for c in COMMANDS}


def command_module(command: Command) -> ModuleType:
    return importlib.import_module(f"{__package__}.{command.module}")


def handler_of(name: str) -> Any:
    """The function that runs command `name` (its module imported now, not at start-up)."""
    command = BY_NAME[name]
    return getattr(command_module(command), command.handler)


class _Unbuilt:
    """A command whose parser is not built yet: its name is a choice, its module not imported."""


_UNBUILT = _Unbuilt()


class _OnDemand(dict[str, Any]):
    """The subcommands' name -> parser map: every name from the start (argparse checks a choice
    and lists them from its keys, in this order), each parser built when first looked up."""

    def __init__(self, build: Any) -> None:
        super().__init__((c.name, _UNBUILT) for c in COMMANDS)
        self._build = build

    def __getitem__(self, name: str) -> Any:
        if super().__getitem__(name) is _UNBUILT:
            self._build(BY_NAME[name])
        return super().__getitem__(name)


class Subcommands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The top-level subcommands action: the table's names and helps, each command's parser
    built on demand by its module, which may add only the commands the table gives it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._name_parser_map = self.choices = _OnDemand(self._build)
        self._building: str | None = None
        for c in COMMANDS:
            self._choices_actions.append(self._ChoicesPseudoAction(c.name, (), c.help))

    def _build(self, command: Command) -> None:
        self._building = command.module
        try:
            command_module(command).add_parser(self)
        finally:
            self._building = None
        missing = [c.name for c in COMMANDS if c.module == command.module
                   and dict.__getitem__(self._name_parser_map, c.name) is _UNBUILT]
        if missing:
            raise RuntimeError(f"cli.{command.module}.add_parser did not add {missing}")

    def built(self, name: str) -> argparse.ArgumentParser:
        """Command `name`'s parser, built now if it was not."""
        parser: argparse.ArgumentParser = self._name_parser_map[name]
        return parser

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        command = BY_NAME.get(name)
        if command is None or command.module != self._building:
            raise RuntimeError(f"command {name!r} is not cli.{self._building}'s in the table "
                               "of cli/commands.py")
        if "help" in kwargs or "aliases" in kwargs:
            raise RuntimeError(f"command {name!r}: its help is the table's (cli/commands.py)")
        if dict.__getitem__(self._name_parser_map, name) is not _UNBUILT:
            raise RuntimeError(f"command {name!r} added twice")
        kwargs.setdefault("prog", f"{self._prog_prefix} {name}")
        parser = self._parser_class(**kwargs)
        dict.__setitem__(self._name_parser_map, name, parser)
        return parser


def lazy_parser() -> argparse.ArgumentParser:
    """The whole command line's parser, each command's part built when the parse reaches it."""
    from .options import _db_option

    p = _Parser(prog="abibench", description="Is the 32-bit or the 64-bit build faster here?")
    p.add_argument("--version", action="version", version=f"abibench {__version__}")
    _db_option(p, default=None)
    p.add_subparsers(dest="command", required=True, parser_class=_Parser, action=Subcommands)
    return p


def build_parser() -> argparse.ArgumentParser:
    """The whole parser with every command's part built (each command module imported)."""
    p = lazy_parser()
    sub = subcommands(p)
    for c in COMMANDS:
        sub.built(c.name)
    return p


def subcommands(parser: argparse.ArgumentParser) -> Subcommands:
    return next(a for a in parser._actions if isinstance(a, Subcommands))
