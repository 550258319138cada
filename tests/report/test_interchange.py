"""`export --format hyperfine|pyperf`: read back by pyperf itself, and shaped as the installed
hyperfine writes its own `--export-json`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyperf
import pytest

from abibench.errors import UsageError
from abibench.records import RunDoc
from abibench.report import interchange
from tests.conftest import HOSTILE, synthetic_doc

Cli = Callable[..., subprocess.CompletedProcess[str]]


def _run(**kw: Any) -> RunDoc:
    d = synthetic_doc(workloads={"alpha": {"i386": 90.0, "x86_64": 100.0},
                                 "beta": {"i386": 120.0, "x86_64": 100.0}}, **kw)
    d["samples"][-1]["status"] = "failed"  # never exported: not counted
    return RunDoc.from_dict(json.loads(json.dumps(d)))


def _walls(doc: RunDoc, w: str, t: str) -> list[float]:
    return [s.wall_s for s in doc.counted(w, t)]


def test_pyperf_loads_the_export_and_compares_two_abis(tmp_path: Path) -> None:
    doc = _run(host=f"h{HOSTILE}")
    both = tmp_path / "both.json"
    both.write_text(interchange.render(doc, "pyperf"))
    suite = pyperf.BenchmarkSuite.load(str(both))
    names = sorted(b.get_name() for b in suite.get_benchmarks())
    assert names == ["alpha [i386]", "alpha [x86_64]", "beta [i386]", "beta [x86_64]"]
    bench = suite.get_benchmark("beta [x86_64]")
    assert bench.get_unit() == "second" and list(bench.get_values()) == _walls(doc, "beta", "x86_64")
    assert "\x1b" not in suite.get_metadata()["hostname"]  # cleaned
    # one target per file: benchmarks named by workload, so compare_to pairs them
    files = []
    for abi in ("i386", "x86_64"):
        f = tmp_path / f"{abi}.json"
        f.write_text(interchange.render(doc, "pyperf", abi=abi))
        files.append(str(f))
    a, b = (pyperf.BenchmarkSuite.load(f) for f in files)
    assert a.get_benchmark_names() == b.get_benchmark_names() == ["alpha", "beta"]
    assert a.get_benchmark("alpha").mean() > b.get_benchmark("alpha").mean()  # i386 slower
    shown = subprocess.run([sys.executable, "-m", "pyperf", "compare_to", *files],
                           capture_output=True, text=True, check=False)
    assert shown.returncode == 0 and "alpha" in shown.stdout, shown.stderr


@pytest.mark.needs_setup("hyperfine")
def test_hyperfine_export_has_the_keys_and_types_of_hyperfines_own(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    hyperfine = shutil.which("hyperfine")
    assert hyperfine is not None
    subprocess.run([hyperfine, "-N", "--runs", "3", "--export-json", str(real), "/bin/true"],
                   capture_output=True, check=True)
    theirs = json.loads(real.read_text())["results"][0]
    doc = _run()
    ours = json.loads(interchange.render(doc, "hyperfine"))
    assert set(ours) == {"results"} and len(ours["results"]) == 4
    for r in ours["results"]:
        assert set(r) == set(theirs)
        for key, value in theirs.items():
            assert isinstance(r[key], type(value)) or (key == "stddev" and r[key] is None), key
    alpha = ours["results"][0]
    assert alpha["command"] == "alpha [i386]" and alpha["times"] == _walls(doc, "alpha", "i386")
    assert alpha["min"] <= alpha["median"] <= alpha["max"] and alpha["exit_codes"][0] == 0


def test_a_selection_that_matches_nothing_is_one_error() -> None:
    doc = _run()
    with pytest.raises(UsageError, match="not in run"):
        interchange.render(doc, "pyperf", workload="gamma")
    with pytest.raises(UsageError, match="its targets: i386, x86_64"):
        interchange.render(doc, "hyperfine", abi="x32")


def test_export_command_writes_each_format(cli: Cli, make_doc: Any, tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_text(json.dumps(make_doc(run_id="20260103-000000-c1")))
    assert cli("import", str(f)).returncode == 0
    out = tmp_path / "hf.json"
    r = cli("export", "latest", "--format", "hyperfine", "--workload", "alpha", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert [x["command"] for x in json.loads(out.read_text())["results"]] == [
        "alpha [i386]", "alpha [x86_64]"]
    r = cli("export", "latest", "--format", "pyperf", "--abi", "x86_64")
    assert r.returncode == 0 and json.loads(r.stdout)["version"] == "1.0"
    r = cli("export", "latest", "--abi", "x86_64")
    assert r.returncode == 2 and "--format" in r.stderr
