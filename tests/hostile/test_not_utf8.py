"""Text that no UTF-8 writer can take, from every way text enters: refused where it enters.

Python holds a command-line value's (or a file name's) bytes that are not UTF-8 as lone
surrogates (U+DC80-U+DCFF), and a JSON document's ``\\ud800`` escape as one. Such a string works
as a path, but nothing abibench keeps or shows can hold it: SQLite, PostgreSQL, a report file,
a digest of a profile's text all encode UTF-8 and failed with "surrogates not allowed" (an
internal error, exit 70, after the run had started). The family (reliability.md, "Text abibench
writes is valid Unicode") is closed where text enters: the command line in `cli._command`, an
imported document where its text is decoded (`store/exchange`), and anything else that reaches
a terminal or a report through the one sanitiser (`text.clean` shows a lone surrogate as
U+FFFD). These tests generate the members: any command, any argument position, any bytes that
are not UTF-8; any string of a run document, keys and values, head or samples.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.cli.commands import BY_NAME

from ..documents import strings_doc
from .conftest import Cli

# Bytes that are not UTF-8 somewhere: a stray continuation byte, a lead byte cut short, Latin-1.
NOT_UTF8 = st.builds(lambda head, bad, tail: head + bad + tail,
                     st.binary(max_size=8).map(lambda b: b.decode("ascii", "ignore").encode()),
                     st.sampled_from([b"\xff", b"\x80", b"\xc3", b"\xe9t\xe9", b"\xed\xa0\x80"]),
                     st.sampled_from([b"", b"/prog", b".json", b"=x"]))
ARGS = st.lists(st.sampled_from(["--json", "x.json", "--abi", "i386", "--budget", "1m", "--"]),
                max_size=4)
SLOW = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@SLOW
@given(command=st.sampled_from(sorted(BY_NAME)), args=ARGS, at=st.integers(0, 5),
       raw=NOT_UTF8, prefix=st.sampled_from(["", "--binary=i386=", "i386="]))
def test_a_command_line_value_that_is_not_utf8_is_refused_before_anything_runs(
        refused: Cli, command: str, args: list[str], at: int, raw: bytes, prefix: str) -> None:
    value = prefix + os.fsdecode(raw)
    argv = [command, *args]
    argv.insert(min(at, len(argv)), value)
    r = refused(*argv)
    assert r.returncode == 2, (argv, r.stderr)
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "is not UTF-8 text" in lines[0] and "rename it" in lines[0], lines
    lines[0].encode("utf-8")  # what is shown of the value is text (U+FFFD for each bad byte)


def _with_surrogate(at: int, lone: str) -> dict[str, object]:
    """A valid run document whose ``at``-th rewritable string (counted modulo their number, in
    the order strings_doc visits them) ends with a lone surrogate."""
    count = [0]

    def counting(s: str) -> str:
        count[0] += 1
        return s

    strings_doc(counting)
    target, seen = at % count[0], [-1]

    def wrap(s: str) -> str:
        seen[0] += 1
        return s + lone if seen[0] == target else s

    return strings_doc(wrap)


@SLOW
@given(at=st.integers(0, 10_000), lone=st.sampled_from(["\ud800", "\udfff", "\udcff", "\udbff"]),
       command=st.sampled_from([("import",), ("report",), ("compare", "{f}", "{f}"),
                                ("explain",)]))
def test_a_document_string_holding_a_lone_surrogate_is_refused_where_it_is_read(
        refused: Cli, tmp_path: Path, at: int, lone: str, command: tuple[str, ...]) -> None:
    doc = _with_surrogate(at, lone)
    path = tmp_path / "doc.json"
    # ensure_ascii (json's default): the surrogate is written as its escape, as any JSON writer
    # that escapes non-ASCII would write it.
    path.write_text(json.dumps(doc))
    assert "\\ud" in path.read_text()
    argv = [a.format(f=path) for a in command] if len(command) > 1 else [command[0], str(path)]
    r = refused(*argv)
    assert r.returncode == 2, (argv, r.stderr[-400:])
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "not text" in lines[0] and str(path) in lines[0], lines


@SLOW
@given(at=st.integers(0, 10_000), pair=st.sampled_from(["\U0001f600", "\U00010000", "\U0010fffd"]))
def test_a_character_spelt_as_a_surrogate_pair_is_text_and_imported(
        refused: Cli, tmp_path: Path, at: int, pair: str) -> None:
    # The other side of the rule: a character beyond U+FFFF is written by json as a pair of
    # escapes (`\ud83d\ude00`); the search that finds a lone one must let the pair through.
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(_with_surrogate(at, pair)))
    assert "\\ud" in path.read_text()
    r = refused("import", str(path))
    assert r.returncode == 0, r.stderr[-400:]
