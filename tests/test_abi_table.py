"""Every ABI fact lives in the ABI table (src/abibench/abi.py), and a new row needs nothing else.

The first test reads every module's string constants: one that is an ABI's name, Debian
architecture, multiarch triplet or loader means a fact about that ABI was written outside the
table, where adding an ABI would miss it. The second adds a row (a copy of i386 under another
name) in a real abibench process and runs probe, build, run and report with it.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from abibench.abi import ABIS

SRC = Path(__file__).parent.parent / "src" / "abibench"


def _abi_words() -> set[str]:
    words = set(ABIS)
    for a in ABIS.values():
        words |= {a.gnu_triplet, a.loader, a.loader_name(), a.autoconf_host}
        if a.debian_arch:
            words.add(a.debian_arch)
    return words


def _named_abis(path: Path, words: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.relative_to(SRC.parent)}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in words]


def test_no_module_but_the_table_names_an_abi() -> None:
    words = _abi_words()
    found = [hit for path in sorted(SRC.rglob("*.py"))
             if path.name != "abi.py" and "profiles" not in path.parts
             for hit in _named_abis(path, words)]
    assert found == [], ("ABI facts outside the ABI table (put them in a column of "
                         "src/abibench/abi.py):\n" + "\n".join(found))


def test_the_scan_finds_an_abi_named_elsewhere(tmp_path: Path) -> None:
    # The rule above can fail: a module that keeps its own table of loaders is caught.
    bad = tmp_path / "bad.py"
    bad.write_text('LOADERS = {"i386": "ld-linux.so.2"}\n', encoding="utf-8")
    hits = [h.split(": ", 1)[1] for h in _named_abis_any(bad, _abi_words())]
    assert hits == ["'i386'", "'ld-linux.so.2'"]


def _named_abis_any(path: Path, words: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in words]


# A process whose ABI table has one more row, made before any other module reads the table:
# the row is i386's facts under a new name, so this host builds and runs it natively.
_WITH_ROW = """
import dataclasses, sys
import abibench.abi as table
table.ABIS["i686-new"] = dataclasses.replace(table.ABIS["i386"], name="i686-new")
from abibench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_new_row_is_probed_built_run_and_reported(cli_env: dict[str, str], fixtures: Path,
                                                   tmp_path: Path) -> None:
    def abibench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", _WITH_ROW, *args], capture_output=True,
                              text=True, env=cli_env, timeout=600, check=False,
                              cwd=tmp_path)

    probe = abibench("probe", "--json")
    assert probe.returncode == 0, probe.stderr
    rows = {a["abi"]: a for a in json.loads(probe.stdout)["abis"]}
    assert rows["i686-new"]["can_build"] and rows["i686-new"]["can_run"], rows["i686-new"]

    md = tmp_path / "report.md"
    # Beside i386, whose facts it has: the same pointer size, so the outputs must agree.
    run = abibench("run", str(fixtures / "ptrsize.toml"), "--abi", "i686-new,i386",
                   "--rounds", "2", "--warmup", "0", "--report", str(md), "--no-html")
    assert run.returncode == 0, run.stdout + run.stderr
    report = md.read_text(encoding="utf-8")
    assert "i686-new" in report and "MISCOMPARE" not in report
    assert os.path.getsize(md) > 0
