"""`compare --against`, `--fail-on-slowdown` and `history` on imported synthetic runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from abibench.errors import EXIT_OK, EXIT_SLOWDOWN, EXIT_USAGE, UsageError
from tests.conftest import synthetic_doc


def _write(tmp: Path, run: int, x86_64: float, tag: str) -> Path:
    d: dict[str, Any] = synthetic_doc(
        run_id=f"2026010{run}-000000-aaaa", workloads={"alpha": {"i386": 90.0, "x86_64": x86_64}},
        started=f"2026-01-0{run}T00:00:00+00:00", seed=run)
    d["host"]["label"] = tag
    path = tmp / f"run{run}.json"
    path.write_text(json.dumps(d))
    return path


def test_the_gate_fails_a_planted_slowdown_and_passes_an_unchanged_rerun(
        cli: Any, tmp_path: Path) -> None:
    files = [_write(tmp_path, 1, 100.0, "v1"), _write(tmp_path, 2, 100.0, "v1"),
             _write(tmp_path, 3, 90.0, "v2"), _write(tmp_path, 4, 90.0, "v2")]
    assert cli("import", *map(str, files)).returncode == EXIT_OK

    same = cli("compare", "20260102", "--against", "20260101", "--fail-on-slowdown", "5%")
    assert same.returncode == EXIT_OK, same.stderr
    assert "not significant" in same.stdout and same.stderr == ""

    slow = cli("compare", "20260103", "--against", "v1", "--fail-on-slowdown", "5%")
    assert slow.returncode == EXIT_SLOWDOWN
    assert "baseline 20260102-000000-aaaa" in slow.stdout  # the tag's newest run
    assert "x86_64 11." in slow.stdout and "% slower than baseline [+" in slow.stdout
    assert "i386/x86_64 gap 0.90" in slow.stdout
    (line,) = slow.stderr.splitlines()
    assert line.startswith("abibench: slowdown: alpha x86_64")

    hist = cli("history", "alpha")
    assert hist.returncode == EXIT_OK, hist.stderr
    assert "version v1 -> v2" in hist.stdout
    assert hist.stdout.count("change in ") == 2  # the ratio and x86_64's rate, not i386's

    # A tag no run has: one line, exit 2 (each abibench process costs seconds: one case here;
    # the library's refusals are tested in tests/analyse/test_baseline_history.py).
    bad = cli("compare", "20260103", "--against", "v9", "--fail-on-slowdown", "5%")
    assert bad.returncode == EXIT_USAGE and len(bad.stderr.splitlines()) == 1, bad.stderr


def test_the_html_report_states_the_change_against_the_baseline(cli: Any, tmp_path: Path) -> None:
    files = [_write(tmp_path, 1, 100.0, "v1"), _write(tmp_path, 3, 90.0, "<b>v2</b>")]
    assert cli("import", *map(str, files)).returncode == EXIT_OK
    page = tmp_path / "r.html"
    r = cli("compare", "20260103", "--against", "v1", "--fail-on-slowdown", "5%",
            "--html", str(page))
    assert r.returncode == EXIT_SLOWDOWN, r.stderr
    text = page.read_text()
    section = text[text.index('<section id="against">'):]
    section = section[:section.index("</section>")]
    assert "run 20260103-000000-aaaa against baseline 20260101-000000-aaaa" in section
    assert "% slower than baseline [+" in section and "i386/x86_64 gap 0.9" in section
    assert "(exit 13)" in section and "<b>" not in text and "&lt;b&gt;v2" in section
    # the report is whole: the summary before, the workloads after
    assert text.index('id="summary"') < text.index('id="against"') < text.index('id="workloads"')


def test_fleet_against_names_each_hosts_run_of_an_earlier_fleet(cli: Any, tmp_path: Path) -> None:
    from abibench.cli import fleet_run_args
    from abibench.store.history import fleet_baselines
    from abibench.store.sqlite import Store

    files = []
    for run, (host, fleet) in enumerate((("hostA", "F1"), ("hostB", "F1"), ("hostA", "F2")), 1):
        path = _write(tmp_path, run, 100.0, host)
        d = json.loads(path.read_text())
        d["run"]["config"]["fleet"] = fleet
        path.write_text(json.dumps(d))
        files.append(str(path))
    db = tmp_path / "fleet.sqlite"
    assert cli("--db", str(db), "import", *files).returncode == EXIT_OK
    store = Store(db, readonly=True)
    try:
        found = fleet_baselines(store, "F1")
        assert {k: v.id for k, v in found.items()} == {"hostA": "20260101-000000-aaaa",
                                                       "hostB": "20260102-000000-aaaa"}
        for bad in ("F9", "F%", "F1\" OR"):
            with pytest.raises(UsageError):
                fleet_baselines(store, bad)
    finally:
        store.close()
    # the fleet's own options: never passed on to each host's `abibench run`
    assert fleet_run_args(["inv", "--against", "F1", "--fail-on-slowdown=5%", "--rounds", "3"]) \
        == ["--rounds", "3"]
    r = cli("--db", str(db), "fleet", "run", str(tmp_path / "none.ini"), "--against", "F9")
    assert r.returncode == EXIT_USAGE and "--against F9" in r.stderr, r.stderr
