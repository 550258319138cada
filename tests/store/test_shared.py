"""The shared PostgreSQL store for real: a throw-away cluster (tests/servers.py), every command
on a URL, returning exactly what a SQLite file does. (Its faults: tests/hostile/
test_shared_store.py.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Main = Callable[..., tuple[int, str, str]]
ErrorLine = Callable[[int, str, int], str]


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own data directory (where the spool lives)."""
    monkeypatch.setenv("ABIBENCH_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


def test_the_cli_on_a_shared_database(pg_url: str, data: Path, main_in_process: Main,
                                      tmp_path: Path,
                                      make_doc: Callable[..., dict[str, Any]]) -> None:
    files = []
    for i, host in enumerate(("alpha-host", "beta-host")):
        f = tmp_path / f"{host}.json"
        f.write_text(json.dumps(make_doc(run_id=f"run{i}", host=host, seed=i)))
        files.append(str(f))
    code, out, err = main_in_process("--db", pg_url, "import", *files)
    assert code == 0, err
    code, out, err = main_in_process("--db", pg_url, "import", files[0])
    assert code == 0 and "already stored" in out, err
    code, out, err = main_in_process("--db", pg_url, "runs", "--json")
    assert code == 0 and [r["id"] for r in json.loads(out)] == ["run0", "run1"], err
    # The server returns exactly what a SQLite file does.
    sqlite = str(tmp_path / "same.sqlite")
    assert main_in_process("--db", sqlite, "import", *files)[0] == 0
    for run_id in ("run0", "run1"):
        code, out, err = main_in_process("--db", pg_url, "export", run_id)
        assert code == 0, err
        docs = [json.loads(out), json.loads(main_in_process("--db", sqlite, "export", run_id)[1])]
        for d in docs:  # the moment of the import is the one thing that differs
            del d["run"]["config"]["imported"]["imported_at"]
        assert docs[0] == docs[1]
    code, out, err = main_in_process("--db", pg_url, "compare", "run0", "run1")
    assert code == 0 and "alpha-host" in out and "beta-host" in out, err
    code, out, err = main_in_process("--db", pg_url, "report", "run0", "--json")
    assert code == 0 and json.loads(out), err
    for output in (out, err):
        assert pg_url.split(":")[2].split("@")[0] not in output  # the password
