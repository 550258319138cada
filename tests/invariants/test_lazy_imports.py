"""scipy.stats is imported on first use (abibench.lazy), never at start-up: it costs about a
second of CPU, more than the rest of abibench, and a command that computes no statistic (export,
runs, --help, a refusal of bad input) must not pay it. The family: a module that imports a costly
library at its top. Every module of the package is checked, by its source and by importing it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import abibench

PACKAGE = Path(abibench.__file__).resolve().parent
# Costly to import and needed only to compute: taken through abibench.lazy.lazy_module.
ON_FIRST_USE = ("scipy",)


def _sources() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "profiles" not in p.parts]


def _top_level_imports(tree: ast.Module) -> list[str]:
    """Modules imported where the module's own code runs at import (not inside a function)."""
    out: list[str] = []

    def walk(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                out.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out.append(node.module)
            elif isinstance(node, ast.If | ast.Try | ast.With | ast.ClassDef):
                for field in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, field, []):
                        walk(child.body if isinstance(child, ast.ExceptHandler) else [child])

    walk(tree.body)
    return out


def test_no_module_imports_a_costly_library_at_its_top() -> None:
    bad = []
    for path in _sources():
        for name in _top_level_imports(ast.parse(path.read_text())):
            if name.split(".")[0] in ON_FIRST_USE:
                bad.append(f"{path.relative_to(PACKAGE)}: import {name} (use abibench.lazy)")
    assert bad == [], "\n".join(bad)


def test_importing_every_module_leaves_scipy_unloaded_until_a_statistic_is_computed() -> None:
    names = []
    for path in _sources():
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{ON_FIRST_USE!r})\n"
        "assert not loaded, loaded\n"
        "from abibench import stats\n"
        "from abibench import estimators\n"
        "assert 'scipy.stats' not in sys.modules\n"
        "q = estimators._sps.t.ppf(0.975, 10)\n"
        "assert 'scipy.stats' in sys.modules and abs(q - 2.228138851986274) < 1e-12, q\n")
    _in_a_fresh_python(code)
    assert len(names) > 100



# The default analysis computes its statistics itself (abibench.distributions): a report, a
# comparison, an explanation and advice import no scipy at all (scipy.special cost 0.3-0.4 CPU s
# a start); only the Wilcoxon and binomial tests of other estimators take scipy.stats. The family:
# a computing command that imports a library for a function it could evaluate itself.
def test_the_default_analysis_imports_no_scipy(tmp_path: Path) -> None:
    import json

    from tests.documents import synthetic_doc

    files = [tmp_path / "a.json", tmp_path / "b.json"]
    for i, path in enumerate(files):
        path.write_text(json.dumps(synthetic_doc(run_id=f"20260101-000000-aaa{i}", seed=i + 1,
                                                 rounds=12)))
    a, b = (str(f) for f in files)
    db = str(tmp_path / "r.db")
    lines = [["report", a], ["report", "--json", a], ["compare", a, b], ["explain", a],
             ["advise", "--memory", "4GiB", a], ["advise", "--memory", "4GiB", "--json", a]]
    code = (
        "import contextlib, io, sys\n"
        "from abibench.cli import main\n"
        f"for argv in {lines!r}:\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        f"        rc = main(['--db', {db!r}, *argv])\n"
        "    assert rc == 0 and out.getvalue(), (argv, rc)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'scipy')\n"
        "assert not loaded, loaded\n"
        "from abibench import stats\n"
        "assert stats.median_ci(list(range(100))) == (39.0, 60.0)\n"
        "assert 'scipy' not in sys.modules\n")
    _in_a_fresh_python(code)


# A start pays for the command it runs only (abibench/cli/commands.py). The family: a start that
# imports another command's module, or, to parse, what only computing needs.
COMPUTING = ("numpy", "scipy", "abibench.fleet", "abibench.run.vm", "abibench.system")


def _others(argv: list[str]) -> set[str]:
    """The modules of every command but the one argv names."""
    from abibench.cli.commands import BY_NAME, COMMANDS

    own = {BY_NAME[a].module for a in argv if a in BY_NAME}
    return {f"abibench.cli.{c.module}" for c in COMMANDS if c.module not in own}


def test_each_start_imports_its_own_commands_module_alone_and_prints_the_whole_help() -> None:
    """Every command's (and nested command's) `--help`, `--version` and `report RUN`, each a
    fresh start (tests/starts.py): no other command's module is imported, nor, to parse, what
    only computing needs (numpy, scipy, the fleet, the guests); and every help is the whole
    parser's, byte for byte (docs/reliability.md, "A command line built in parts")."""
    from tests.invariants.test_cli_parts import answer, help_paths, whole
    from tests.starts import as_fresh, fresh_answers

    helps = [[*p, "--help"] for p in help_paths()]
    lines = [*helps, ["--version"], ["report", "R"], ["--db", "x.db", "report", "R"]]
    fresh = fresh_answers([[argv] for argv in lines])
    for argv, got in zip(lines, fresh, strict=True):
        loaded = set(got["modules"])
        assert not loaded & _others(argv), (argv, sorted(loaded & _others(argv)))
        parsing_only = argv in helps or argv == ["--version"]
        costly = sorted(m for m in loaded if m.startswith(COMPUTING if parsing_only else
                                                           COMPUTING[2:]))
        assert costly == [], (argv, costly)
        if argv in helps:
            assert got["answers"] == [as_fresh(answer(whole(), argv))], argv


# The same family within a run: the browser's driver (websockets and the DevTools session,
# 50-150 ms of every run's start) is imported by the one branch that runs a [browser] sample.
BROWSER_ONLY = ("websockets", "abibench.run.browser", "abibench.run.cdp", "abibench.run.webserver")


def test_a_run_imports_the_browser_driver_only_for_a_browser_sample() -> None:
    code = (
        "import sys\n"
        "import abibench.cli.run, abibench.run.suite, abibench.run.schedule\n"
        f"loaded = sorted(m for m in sys.modules if m.startswith({BROWSER_ONLY!r}))\n"
        "assert not loaded, loaded\n"
        "from abibench.run.browser import run_browser_sample\n"
        "assert 'websockets' in sys.modules\n")
    _in_a_fresh_python(code)


def _in_a_fresh_python(code: str) -> None:
    """Run `code` in a new interpreter (nothing imported yet); it asserts what it checks."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
