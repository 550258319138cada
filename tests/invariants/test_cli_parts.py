"""A command line built in parts answers as the whole one does (docs/reliability.md).

`abibench` builds, at each start, only the parser of the command being run
(abibench/cli/commands.py). The family: a parser built in parts that accepts, refuses, fills
or prints differently from the whole. Command lines are generated from the whole parser itself
(every command, nested command, option, its choices and values of every kind, words, other
commands' options, --help), and each is parsed by a fresh lazily built parser and by the whole
one: the same namespace, or the same exit code, and the same standard output and error.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.cli import _join_negative_values
from abibench.cli.commands import BY_NAME, COMMANDS, build_parser, handler_of, lazy_parser, subcommands
from tests.starts import as_fresh, fresh_answers

# bench/cli_parts.py runs these tests with more examples (a multiple of each test's own).
SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))
# Values of every kind an option may be given: numbers (negative, fractional), durations,
# percentages, sizes, NAME=VALUE, paths, URLs, ids, empty, and words that look like options.
VALUES = ("1", "0", "-1", "-5s", "2.5", ".5", "2m", "90s", "5%", "200%", "x", "latest", "a.json",
          "4GiB", "lua=3", "nodes=2", "", "insn", "cache", "postgresql://u@127.0.0.1:1/d",
          "../x", "-", "--", "é")


@functools.cache
def whole() -> argparse.ArgumentParser:
    return build_parser()


def _nested(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's own subcommands (fleet run, vm run, system run), by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings]


def _every_option_string() -> list[str]:
    seen: set[str] = set()
    for name in subcommands(whole()).choices:
        p = subcommands(whole()).built(name)
        for q in (p, *_nested(p).values()):
            seen.update(s for a in _options(q) for s in a.option_strings)
    return sorted(seen)


def _option_tokens(parser: argparse.ArgumentParser) -> st.SearchStrategy[list[str]]:
    """One of the parser's options, with a value of its choices or of any kind, separate or
    joined by '='."""
    actions = _options(parser)
    if not actions:
        return st.just([])

    @st.composite
    def draw(d: st.DrawFn) -> list[str]:
        a = d(st.sampled_from(actions))
        flag = d(st.sampled_from(a.option_strings))
        if a.nargs == 0:
            return [flag]
        pool = [str(c) for c in a.choices] if a.choices else []
        value = d(st.sampled_from(pool + list(VALUES)))
        return [f"{flag}={value}"] if d(st.booleans()) else [flag, value]

    return draw()


def _tokens(parser: argparse.ArgumentParser) -> st.SearchStrategy[list[str]]:
    others = _every_option_string()
    piece = st.one_of(
        _option_tokens(parser),
        _option_tokens(parser),
        st.sampled_from(VALUES).map(lambda v: [v]),                       # positionals
        st.sampled_from([*others, "--nope", "-h", "--help"]).map(lambda v: [v]))
    return st.lists(piece, max_size=5).map(lambda parts: [t for p in parts for t in p])


@st.composite
def command_lines(d: st.DrawFn) -> list[str]:
    argv: list[str] = []
    if d(st.booleans()):
        argv += ["--db", d(st.sampled_from(["x.db", "postgresql://u@127.0.0.1:1/d", "-1"]))]
    name = d(st.sampled_from([*BY_NAME, "nope", "", "--version", "-h", "RUN"]))
    argv.append(name)
    if name not in BY_NAME:
        return argv + d(_tokens(whole()))
    parser = subcommands(whole()).built(name)
    nested = _nested(parser)
    if nested and d(st.integers(0, 4)) > 0:
        sub = d(st.sampled_from(sorted(nested)))
        argv.append(sub)
        parser = nested[sub]
    return argv + d(_tokens(parser))


def answer(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[Any, str, str]:
    """What a parser makes of argv: the namespace or the exit code, and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result: Any = ("parsed", vars(parser.parse_args(_join_negative_values(argv))))
        except SystemExit as exc:
            result = ("exit", exc.code)
    return result, out.getvalue(), err.getvalue()


@settings(max_examples=150 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command_lines())
def test_the_parser_built_in_parts_answers_every_command_line_as_the_whole_one(
        argv: list[str]) -> None:
    assert answer(lazy_parser(), argv) == answer(whole(), argv), argv


def help_paths() -> list[list[str]]:
    """abibench, every command and every nested command (fleet run, ...): what has a --help."""
    paths: list[list[str]] = [[]]
    for c in COMMANDS:
        paths.append([c.name])
        paths += [[c.name, sub] for sub in _nested(subcommands(whole()).built(c.name))]
    return paths


def test_every_help_text_is_the_whole_parsers() -> None:
    for path in help_paths():
        lazy = answer(lazy_parser(), [*path, "--help"])
        assert lazy[0] == ("exit", 0) and lazy[1].startswith("usage: abibench"), path
        assert lazy == answer(whole(), [*path, "--help"]), path


def test_every_command_of_the_table_is_built_by_its_module_and_has_its_handler() -> None:
    parsers = subcommands(whole()).choices
    assert list(parsers) == [c.name for c in COMMANDS]  # the order --help lists them
    for c in COMMANDS:
        assert isinstance(parsers[c.name], argparse.ArgumentParser)
        assert callable(handler_of(c.name))
        assert c.takes in ("", "argv", "ref", "read", "write", "files")


def test_a_module_adds_only_its_own_commands_without_help_once() -> None:
    """The one place the invariant is enforced: the subcommands action of the lazy build."""
    sub = subcommands(lazy_parser())
    with pytest.raises(RuntimeError, match="not cli"):
        sub.add_parser("report")           # not while its module builds it
    sub._building = "report"
    with pytest.raises(RuntimeError, match="not cli"):
        sub.add_parser("runs")             # another module's command
    with pytest.raises(RuntimeError, match="not cli"):
        sub.add_parser("nope")             # not in the table
    with pytest.raises(RuntimeError, match="help is the table's"):
        sub.add_parser("report", help="other words")
    sub.add_parser("report")
    with pytest.raises(RuntimeError, match="twice"):
        sub.add_parser("report")


@settings(max_examples=2 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(command_lines(), min_size=10, max_size=30))
def test_a_fresh_start_answers_every_command_line_as_the_whole_parser(
        lines: list[list[str]]) -> None:
    """As above, each command's lines parsed by a fresh start (tests/starts.py): what another
    command's module imports or sets at its import is not there, as in a real start."""
    groups: dict[str, list[list[str]]] = {}
    for argv in lines:
        groups.setdefault(_command_of(argv), []).append(argv)
    fresh = fresh_answers(list(groups.values()))
    for group, got in zip(groups.values(), fresh, strict=True):
        for argv, one in zip(group, got["answers"], strict=True):
            assert one == as_fresh(answer(whole(), argv)), argv


def _command_of(argv: list[str]) -> str:
    """The command a line names (the one whose part a start builds), or '' for none."""
    rest = argv[2:] if argv[:1] == ["--db"] else argv
    return rest[0] if rest and rest[0] in BY_NAME else ""

