"""The terminal shows names, units, reasons and host fields as text: never as rich markup, and
never as the escape sequences a program, a profile or an imported file may put into them."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from abibench.analyse import report as analysis
from abibench.analyse.merge import ResultSet
from abibench.records import RunDoc, RunWarning
from abibench.report import terminal
from abibench.store.exchange import document

MakeDoc = Callable[..., dict[str, Any]]
Cli = Callable[..., subprocess.CompletedProcess[str]]

# What a terminal would obey: C0 but tab and newline, DEL, C1, bidi overrides and isolates.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
SGR = re.compile(r"\x1b\[[0-9;]*m")  # colours: the only sequences abibench itself writes


def test_markup_in_result_strings_is_printed_literally(make_doc: MakeDoc) -> None:
    # Markup an identifier may hold (an import refuses the '/' of a closing tag, a profile or
    # a store need not): the report escapes it all the same.
    evil = "w[red]x[/red][link=file:///etc/passwd]y"
    doc = RunDoc.from_dict(make_doc(workloads={evil: {"i386": 90.0, "x86_64": 100.0}}))
    doc = type(doc)(doc.run, doc.host, doc.samples, doc.artifacts, doc.statuses,
                    (RunWarning("warn [blink]z"),), doc.outcomes)
    text = terminal.render(analysis.from_run(doc, heading="run [bold]h[/bold]"))
    assert evil in text
    assert "run [bold]h[/bold]" in text and "warn [blink]z" in text


def test_escape_helper_cleans_before_it_escapes() -> None:
    assert terminal.e("ops[/bold]") == "ops\\[/bold]"
    # Removing the sequence must not leave a backslash that unescapes the bracket after it.
    assert terminal.e("x\\\x1b[0m[bold]") == "x\\\\\\[bold]"
    assert terminal.e("a\nb\x1b]0;t\x07") == "a b"


def _check(text: str, shown: str, literals: tuple[str, ...]) -> None:
    assert not UNSAFE.search(text), repr(UNSAFE.search(text))
    for literal in literals:
        assert shown.format(literal) in text, literal


def test_hostile_strings_are_shown_and_not_obeyed(make_hostile_doc: Callable[[], dict[str, Any]],
                                                   hostile_shown: str) -> None:
    doc = document(make_hostile_doc(), "hostile.json")
    # Identifiers and timestamps stay as they are: an import refuses hostile ones.
    shared = ("ops/s", "run warning", "workload warning")
    for report, literals in (
            (analysis.from_run(doc), (*shared, "alpha workload",
                                      "exit code 2: stderr tail", "fixed rounds")),
            (analysis.from_sets([ResultSet(doc, "a"), ResultSet(doc, "b")]), shared)):
        plain = terminal.render(report, width=2000)
        _check(plain, hostile_shown, literals)
        coloured = terminal.render(report, color=True, width=2000)
        # abibench's own colours, and nothing else: no screen clear, no title, no hyperlink.
        assert not re.search(r"\x1b(?!\[[0-9;]*m)", coloured)
        _check(SGR.sub("", coloured), hostile_shown, ("ops/s", "run warning"))


def test_cli_shows_hostile_files_without_obeying_them(
        cli: Cli, tmp_path: Path, make_hostile_doc: Callable[[], dict[str, Any]],
        hostile_shown: str) -> None:
    path = tmp_path / "run\x1b]0;pwned\x07\x1b[2J\u202e.json"
    path.write_text(json.dumps(make_hostile_doc()))
    missing = tmp_path / "missing\x1b[2J.json"
    runs = [
        (("report", str(path)), 0, ("alpha workload", "run warning")),
        (("import", str(path)), 0, ("vm",)),
        (("runs",), 0, ("complete",)),
        (("report", "latest"), 0, ("alpha workload", "workload warning")),
        (("import", str(missing)), 2, ()),
    ]
    out = {}
    for args, code, literals in runs:
        r = cli(*args)
        assert r.returncode == code, (args, r.stderr)
        assert "Traceback" not in r.stderr
        _check(r.stdout, hostile_shown, literals)
        assert not UNSAFE.search(r.stderr), (args, r.stderr)
        out[args[0] if args[-1] != str(missing) else "missing"] = r
    assert out["import"].stdout.startswith(
        f"imported {tmp_path}/run\ufffd.json as run 20260101-000000-aaaa")
    assert out["missing"].stderr.startswith(
        f"abibench: error: {tmp_path}/missing.json: no such file")
