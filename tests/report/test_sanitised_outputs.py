"""Every untrusted string reaches every output through the one sanitiser (issue 26).

Hypothesis writes hostile strings (escape sequences, C1 controls, bidi controls, NUL, line
breaks, zero-width characters, Markdown, HTML and CSV metacharacters, very long runs) into every
string of a run document (the conftest's ``make_strings_doc``: ids, titles, units, metric names,
reasons, warnings, host fields, a tag), renders every format the renderers know and the terminal
views, and checks each output against its own syntax: nothing a terminal obeys, HTML with no
tag or attribute the report does not write itself, Markdown tables that keep their columns, CSV
that parses back with no cell a spreadsheet would run, JSON that parses to safe strings.

The same checks, run for minutes rather than seconds, are bench/sanitise.py.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.analyse import report as analysis
from abibench.analyse.advise import Deployment
from abibench.analyse.merge import ResultSet
from abibench.report import RENDERERS, render, terminal
from abibench.store.exchange import document

Doc = dict[str, Any]
MakeStringsDoc = Callable[[Callable[[str], str]], Doc]
Cli = Callable[..., subprocess.CompletedProcess[str]]

# What no output may hold, the format's own newlines and tabs aside: C0, DEL, C1, bidi
# embeddings, overrides, isolates and marks, and the invisible characters text.py marks.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"
                    "\u200b\u00ad\u2060-\u2064\u206a-\u206f\u180e\ufeff\U000e0000-\U000e007f]")

# The pieces hostile strings are made of: each one attacks a terminal or a format's syntax.
PIECES = (
    "\x1b[2J", "\x1b[31;1m", "\x1b]0;title\x07", "\x1b]8;;https://x.invalid/\x1b\\", "\x1b\\",
    "\x9b31m", "\x9d0;t\x9c", "\x1bP1$r\x1b\\", "\x1bc", "\x1b", "\x1b[", "\x07", "\x00", "\x08",
    "\x7f", "\x85", "\x8d", "\x9f", "\u202e", "\u202d", "\u2066", "\u2069", "\u200e", "\u200f",
    "\u061c", "\u200b", "\ufeff", "\U000e0041", "\u00ad", "\u2028", "\u2029", "\r\n", "\r", "\n",
    "\t", "\x0b", "\x0c", "|", "`", "``", "*", "_", "[", "]", "(x)", "<", ">", "&", "&amp;", "#",
    "\\", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "\" onmouseover=\"x",
    "' onfocus='x", "</td></tr></table>", "<!--", "]]>", "=HYPERLINK(\"x\")", "+1", "-2+3",
    "@SUM(A1)", "=", ",", "\"", "[bold]", "[/]", ":smile:", "ü", "中文", "🙂", "\u200d", "x" * 3000,
)
hostile = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=8)),
                   max_size=8).map("".join)
# A document's strings get a hostile prefix and suffix; the original stays in the middle so that
# ids and keys stay distinct and consistent. A prefix starting = + - @ tests the CSV guard.
wraps = st.tuples(hostile, hostile)

# Tags and attributes an HTML report may hold: those of the report of the same document with
# plain strings (see _html_names), never more.
_BENIGN_HTML: _Names | None = None


class _Names(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attrs: set[str] = set()
        self.hrefs: list[str] = []
        self.shapes: set[tuple[str, frozenset[str]]] = set()  # each tag with its attributes

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.shapes.add((tag, frozenset(name for name, _ in attrs)))
        for name, value in attrs:
            self.attrs.add(name)
            if name in ("href", "xlink:href") and value is not None:
                self.hrefs.append(value)


def _html_names(html: str) -> _Names:
    parser = _Names()
    parser.feed(html)
    parser.close()
    return parser


def _reports(doc: Doc, tags: tuple[str, str]) -> list[analysis.Report]:
    run = document(doc, "hostile.json")
    other = document({**doc, "run": {**doc["run"], "id": doc["run"]["id"] + "-b"}}, "b.json")
    advice = Deployment(4 << 30, mix={w: 1.0 for w in run.workloads})
    return [analysis.from_run(run, heading=f"run {tags[0]}", deployment=advice),
            analysis.from_sets([ResultSet(run, "a"), ResultSet(other, "b")], tags=list(tags))]


def _cells(row: str) -> int:
    """How many cells a Markdown table row has: pipes not escaped by a backslash, as GitHub's
    tables split them (even inside code spans)."""
    count, i = 0, 0
    while i < len(row):
        if row[i] == "\\":
            i += 2
            continue
        count += row[i] == "|"
        i += 1
    return count - 1


def _check_markdown(text: str) -> None:
    table: int | None = None
    for line in text.split("\n"):
        if not line.startswith("|"):
            table = None
            continue
        n = _cells(line)
        table = n if table is None else table
        assert n == table, f"a Markdown row has {n} cells, its table {table}: {line[:300]!r}"


def _check_csv(text: str) -> None:
    rows = list(csv.reader(io.StringIO(text)))
    width = len(rows[0])
    for row in rows:
        assert len(row) == width, row
        for cell in row:
            if cell.startswith(("=", "+", "-", "@")):
                float(cell)  # only a number may start so; anything else is guarded with '


def _check_json(value: object) -> None:
    if isinstance(value, str):
        assert not UNSAFE.search(value), value
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_json(k)
            _check_json(v)
    elif isinstance(value, list):
        for v in value:
            _check_json(v)


def _check_html(text: str, benign: _Names) -> None:
    found = _html_names(text)
    assert found.tags <= benign.tags, found.tags - benign.tags
    assert found.attrs <= benign.attrs, found.attrs - benign.attrs
    # An attribute injected into a tag that has that attribute elsewhere is a new shape.
    assert found.shapes <= benign.shapes, found.shapes - benign.shapes
    assert all(h.startswith(("#", "data:text/csv;")) for h in found.hrefs), found.hrefs


TEXT_FORMATS = tuple(f for f in RENDERERS if f != "html")


def check_clean(text: str, where: str = "") -> None:
    found = UNSAFE.search(text)
    assert found is None, (where, text[max(0, found.start() - 40):found.end() + 40])


def check_report_strings(reports: list[analysis.Report]) -> int:
    """The Reports hold no string the sanitiser would change; how many strings they hold."""
    strings = [s for report in reports for s in _strings(report)]
    assert not [s for s in strings if UNSAFE.search(s)][:3]
    return len(strings)


def _outputs(report: analysis.Report, formats: tuple[str, ...]) -> dict[str, str]:
    out = {fmt: render(report, fmt) for fmt in formats}
    if "terminal" in formats:
        out["explain"] = terminal.render_explanations(report)
        out["advise"] = terminal.render_advice(report)
    return out


def check_outputs(reports: list[analysis.Report], formats: tuple[str, ...],
                  benign: _Names | None = None) -> int:
    """Every check on every output of the reports; the number of outputs checked."""
    checked = 0
    for report in reports:
        for fmt, text in _outputs(report, formats).items():
            check_clean(text, fmt)
            if fmt == "html":
                assert benign is not None
                _check_html(text, benign)
            elif fmt == "markdown":
                _check_markdown(text)
            elif fmt in ("csv", "samples-csv"):
                _check_csv(text)
            elif fmt == "json":
                _check_json(json.loads(text))
            checked += 1
    return checked


def benign_names(make_strings_doc: MakeStringsDoc) -> _Names:
    """The tags and attributes of the HTML report of the same document with plain strings."""
    return _html_names(render(_reports(make_strings_doc(lambda s: s), ("k64", "k32"))[0],
                              "html"))


def hostile_doc(make_strings_doc: MakeStringsDoc, wrap: tuple[str, str]) -> Doc:
    return make_strings_doc(lambda s: f"{wrap[0]}{s}{wrap[1]}")


# Two result sets may not share a tag; hostile ones that differ only in what the sanitiser
# removes are told apart by a suffix.
_tags = st.tuples(hostile.map(lambda t: t + "a"), hostile.map(lambda t: t + "b"))
_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=10, deadline=None, suppress_health_check=_SLOW)
@given(wrap=wraps, tags=_tags)
def test_hostile_strings_reach_every_text_format_cleaned_and_escaped(
        make_strings_doc: MakeStringsDoc, wrap: tuple[str, str], tags: tuple[str, str]) -> None:
    """A single run's report and a comparison's, in every format but HTML, and the terminal's
    explain and advise views."""
    reports = _reports(hostile_doc(make_strings_doc, wrap), tags)
    assert check_outputs(reports, TEXT_FORMATS) == 2 * (len(TEXT_FORMATS) + 2)


@settings(max_examples=3, deadline=None, suppress_health_check=_SLOW)
@given(wrap=wraps, tags=_tags)
def test_hostile_strings_reach_html_and_its_charts_only_as_text(
        make_strings_doc: MakeStringsDoc, wrap: tuple[str, str], tags: tuple[str, str]) -> None:
    """The HTML report (its SVG charts inside), fewer examples."""
    global _BENIGN_HTML
    if _BENIGN_HTML is None:
        _BENIGN_HTML = benign_names(make_strings_doc)
    report = _reports(hostile_doc(make_strings_doc, wrap), tags)[0]
    assert check_outputs([report], ("html",), _BENIGN_HTML) == 1


def test_the_report_holds_only_cleaned_strings(make_strings_doc: MakeStringsDoc) -> None:
    """The Report itself (what every renderer reads) holds no string the sanitiser would change,
    whatever field it sits in: walked here without the renderers' own escaping."""
    doc = hostile_doc(make_strings_doc, ("\x1b]0;t\x07\u202e\x00", "\x9b2J\u2066"))
    assert check_report_strings(_reports(doc, ("a\x1b[2J", "b\u202e"))) > 1000


def _strings(value: object) -> Iterator[str]:
    """Every string in a structure of dataclasses and containers, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list | tuple | set | frozenset):
        for v in value:
            yield from _strings(v)
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _strings(getattr(value, f.name))


def _toml(text: str) -> str:
    """A TOML basic string holding exactly ``text``: every character but letters, digits and
    spaces written as a \\U escape, so that TOML's own rules cannot refuse a control."""
    return '"' + "".join(c if c.isascii() and (c.isalnum() or c == " ") else f"\\U{ord(c):08x}"
                         for c in text) + '"'


def test_label_and_profile_title_through_the_cli(cli: Cli, fixtures: Path, tmp_path: Path) -> None:
    """A real run: a profile whose title and unit attack into the terminal, the Markdown and
    HTML reports, and `abibench report`'s CSV and JSON; a hostile --label refused at the door."""
    evil = "\x1b]0;pwned\x07\u202eevil\x1b[2J\x9b1m|<b onclick=x>`*_=1"
    profile = (fixtures / "quiet.toml").read_text().replace(
        'title = "A metric with 0% spread"', f"title = {_toml(evil)}"
    ).replace('unit = "units"', "unit = " + _toml("u\u202e|<i>"))
    (tmp_path / "metric.c").write_text((fixtures / "metric.c").read_text())
    path = tmp_path / "quiet.toml"
    path.write_text(profile)
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    # A label is an identifier (ids.py): the hostile one is refused in one line before anything
    # runs, and never reaches a report; the title and unit, free text, are cleaned instead.
    refused = cli("run", str(path), "--abi", "i386,x86_64", "--rounds", "2", "--label", evil)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    check_clean(refused.stderr, "refused label")
    r = cli("run", str(path), "--abi", "i386,x86_64", "--rounds", "2", "--label", "v1.2+evil",
            "--report", str(md), "--html", str(html))
    assert r.returncode == 0, r.stderr
    csv_path = tmp_path / "r.csv"
    shown = cli("report", "latest", "--csv", str(csv_path))
    printed = cli("report", "latest", "--json")  # JSON printed to a terminal
    assert shown.returncode == 0 and printed.returncode == 0, shown.stderr + printed.stderr
    for name, text in (("run stdout", r.stdout), ("run stderr", r.stderr),
                       ("report stdout", shown.stdout), ("markdown", md.read_text()),
                       ("html", html.read_text()), ("csv", csv_path.read_text()),
                       ("json", printed.stdout)):
        check_clean(text, name)
    assert "evil" in md.read_text() and "evil" in html.read_text()
    _check_markdown(md.read_text())
    _check_csv(csv_path.read_text())
    _check_json(json.loads(printed.stdout))
    assert "<b onclick" not in html.read_text()
