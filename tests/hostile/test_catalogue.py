"""docs/reliability.md cannot drift from the tests: every row names a hostile test that exists
(its file, function and parameter id, as pytest collects them), the rows are numbered, the exit
codes are abibench's, the catalogue covers everything issue 12 names, and the README links it."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from abibench import errors

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "docs" / "reliability.md"
MIN_ROWS = 70
TEST_ID = re.compile(r"`(tests/hostile/test_\w+\.py::test_\w+(?:\[[^\]`]*\])?)`")
# What issue 12 names: its numbered cases, the newcomer's findings and the principles.
REQUIRED = {*(str(n) for n in range(1, 11)), "relative paths", "host library",
            "per-sweep validate", "false message", "wasted time", "docs", "confinement",
            "built binary", "numbers", "text", "durable", "store", "preflight", "duplicate ids",
            "byo", "--binary"}
EXIT_CODES = {v for k, v in vars(errors).items() if k.startswith("EXIT_")}


@dataclass(frozen=True)
class Row:
    number: int
    covers: frozenset[str]
    case: str
    does: str
    exit: str
    test: str


def _rows() -> list[Row]:
    rows = []
    for line in CATALOGUE.read_text().splitlines():
        if not re.match(r"\|\s*\d+\s*\|", line):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        assert len(cells) == 6, f"a row needs six cells: {line}"
        number, covers, case, does, exit_, test = cells
        found = TEST_ID.fullmatch(test)
        assert found, f"row {number}: the test cell is not `tests/hostile/FILE.py::TEST`: {test}"
        rows.append(Row(int(number), frozenset(c.strip() for c in covers.split(",")), case, does,
                        exit_, found.group(1)))
    return rows


@cache
def _collected() -> frozenset[str]:
    """Every test id pytest collects in tests/hostile (parametrised ones with their ids)."""
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                        "-p", "no:cacheprovider", "tests/hostile"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return frozenset(ln for ln in r.stdout.splitlines() if "::" in ln)


def test_the_catalogue_has_enough_numbered_rows() -> None:
    rows = _rows()
    assert len(rows) >= MIN_ROWS, f"{len(rows)} rows, at least {MIN_ROWS} wanted"
    assert [r.number for r in rows] == list(range(1, len(rows) + 1))
    assert all(r.case and r.does for r in rows)


def test_every_row_names_a_test_that_exists() -> None:
    collected = _collected()
    for row in _rows():
        # A parametrised test named without an id stands for all its cases.
        exists = row.test in collected or any(c.startswith(f"{row.test}[") for c in collected)
        assert exists, f"row {row.number}: no test {row.test}"


def test_exit_codes_are_abibenchs_own() -> None:
    for row in _rows():
        assert row.exit, f"row {row.number}: no exit code (write — if no command exits)"
        codes = {int(n) for n in re.findall(r"\d+", row.exit)}
        assert codes <= EXIT_CODES, f"row {row.number}: {row.exit} is not an exit code of abibench"
        assert codes or row.exit in ("—", "killed"), f"row {row.number}: {row.exit}"


def test_the_catalogue_covers_everything_issue_12_names() -> None:
    covered = frozenset().union(*(r.covers for r in _rows()))
    assert REQUIRED - covered == set()
    assert covered - REQUIRED - {"files"} == set(), "an unknown Covers tag"


def test_every_hostile_module_appears_in_the_catalogue() -> None:
    named = {r.test.split("::")[0] for r in _rows()}
    modules = {f"tests/hostile/{p.name}" for p in (ROOT / "tests" / "hostile").glob("test_*.py")}
    assert modules - named == {"tests/hostile/test_catalogue.py"}


def test_the_readme_links_the_catalogue() -> None:
    assert "docs/reliability.md" in (ROOT / "README.md").read_text()
