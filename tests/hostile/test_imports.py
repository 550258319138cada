"""`abibench import` of files that are not what they claim: each is refused with one line that
names the file and the fix, exit 2, and nothing of it is stored."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
MakeDoc = Callable[..., dict[str, Any]]
DbRows = Callable[..., list[tuple[Any, ...]]]


def _first_value(doc: dict[str, Any]) -> str:
    """The JSON text of the first sample's first metric, as `json.dumps` writes it."""
    (name, value), *_ = doc["samples"][0]["metrics"].items()
    return f'"{name}": {json.dumps(value)}'


def _with(doc: dict[str, Any], replacement: str) -> str:
    """The document's JSON with the first metric value replaced by a raw JSON token."""
    text = json.dumps(doc)
    name = _first_value(doc).split(":")[0]
    return text.replace(_first_value(doc), f"{name}: {replacement}", 1)


def _newer(doc: dict[str, Any]) -> str:
    return json.dumps({**doc, "version": 999})


def _negative_time(doc: dict[str, Any]) -> str:
    doc["samples"][0]["wall_s"] = -1.0
    return json.dumps(doc)


CASES: dict[str, tuple[Callable[[dict[str, Any]], str], tuple[str, ...]]] = {
    "not-json": (lambda d: "these are notes\n", ("not valid JSON",)),
    "empty": (lambda d: "", ("not valid JSON",)),
    "truncated": (lambda d: json.dumps(d)[:200], ("not valid JSON",)),
    "a-list": (lambda d: json.dumps([d]), ("not an abibench run document",)),
    "newer-version": (_newer, ("version 999", "upgrade abibench")),
    "nan-literal": (lambda d: _with(d, "NaN"), ("NaN is not a number JSON allows",)),
    "infinity-literal": (lambda d: _with(d, "-Infinity"), ("-Infinity is not a number",)),
    "number-beyond-float": (lambda d: _with(d, "1e999"), ("expected a finite number",)),
    "negative-time": (_negative_time, ("wall_s", "cannot be negative")),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_run_document_is_refused_and_nothing_stored(refused: Cli, make_doc: MakeDoc,
                                                          tmp_path: Path, db_ref: str,
                                                          db_rows: DbRows, case: str) -> None:
    make, words = CASES[case]
    f = tmp_path / f"{case}.json"
    f.write_text(make(make_doc()))
    r = refused("--db", db_ref, "import", str(f))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"abibench: error: {f}: "), r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
    assert db_rows(db_ref, "SELECT COUNT(*) FROM runs") in ([], [(0,)])


def test_a_directory_is_refused(refused: Cli, tmp_path: Path) -> None:
    d = tmp_path / "dir.json"
    d.mkdir()
    r = refused("import", str(d))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "is a directory" in r.stderr


def test_importing_the_same_run_twice_stores_it_once(cli: Cli, make_doc: MakeDoc,
                                                     tmp_path: Path, db_ref: str,
                                                     db_rows: DbRows) -> None:
    f = tmp_path / "run.json"
    f.write_text(json.dumps(make_doc()))
    assert cli("--db", db_ref, "import", str(f)).returncode == 0
    again = cli("--db", db_ref, "import", str(f))
    assert again.returncode == 0 and "already stored" in again.stdout, again.stdout
    assert db_rows(db_ref, "SELECT COUNT(*) FROM runs") == [(1,)]
