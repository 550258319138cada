"""Argument types: each turns one command-line value into what a command uses, or refuses it
as one line naming the value (argparse's ArgumentTypeError)."""

from __future__ import annotations

import argparse
from typing import Any, TypeAlias

from ..ids import check_id
from ..text import one_line


def _percent(text: str) -> float:
    t = text.strip().rstrip("%")
    try:
        value = float(t) / 100.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a percentage like 2%") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"precision {text} must be between 0% and 100%")
    return value


def _limit(text: str) -> float:
    """A slowdown limit: '5%' or '0%' (any significant slowdown)."""
    try:
        value = float(text.strip().rstrip("%")) / 100.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a percentage like 5%") from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"a slowdown limit of {text} must be 0% or more, "
                                         "below 1000%")
    return value


def _duration(text: str) -> float:
    # Imported when a duration is given, not when the parser is built: workloads.profile brings
    # the workload loader (and numpy), which parsing the other options does not need.
    from ..workloads.profile import parse_duration

    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds > 30 * 86400:
        raise argparse.ArgumentTypeError(f"{text} is more than 30 days: give a shorter time")
    return seconds


def _whole(text: str, least: int) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if n < least:
        raise argparse.ArgumentTypeError(f"{n} must be 0 or more" if least == 0 else
                                         f"{n} must be at least {least}")
    return n


def _count(text: str) -> int:
    return _whole(text, 0)


def _positive(text: str) -> int:
    return _whole(text, 1)


def _ident(kind: str) -> Any:
    """An argparse type: a value that names something (a run, a host, a set) is an identifier,
    never a path (ids.py), refused as one line before anything runs."""
    def check(text: str) -> str:
        try:
            return check_id(kind, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return check


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # One line naming the problem and where help is, exit code 2 as documented.
        self.exit(2, f"abibench: error: {one_line(message)} (see `{self.prog} --help`)\n")


# The subcommands' registry each command module's `add_parser` adds its parser to.
Commands: TypeAlias = "argparse._SubParsersAction[_Parser]"
