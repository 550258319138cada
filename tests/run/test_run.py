"""End to end: real builds and real runs of the built-in workloads on i386 and x86_64."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

Cli = Callable[..., subprocess.CompletedProcess[str]]
DbRows = Callable[..., list[tuple[Any, ...]]]


SMALL = ["--set", "nodes=200000", "--set", "steps=20000", "--set", "elements=200000",
         "--set", "times=3"]


def test_default_workloads_run_and_compare(cli: Cli, cli_env: dict[str, str],
                                           stored: DbRows) -> None:
    r = cli("run", "ptrtree", "nbody", "stream", "--rounds", "5", *SMALL)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    for wid in ("ptrtree", "nbody", "stream"):
        assert wid in out
    assert "x32 (not run)" in out and "kernel lacks x32 support" in out
    assert "MISCOMPARE" not in out
    assert out.count("output check: identical on i386, x86_64") == 3
    # The one run of this module that writes its HTML report where a run does by default (the
    # others leave it out: they read the build cache and the store): it is there, whole.
    page = re.search(r"^report: (\S+\.html) \(open it in a browser", out, re.M)
    assert page is not None, out[-2000:]
    html = Path(page.group(1)).read_text()
    assert html.rstrip().endswith("</html>") and all(w in html for w in ("ptrtree", "nbody", "stream"))

    ((run_id,),) = stored("SELECT id FROM runs")
    rows = stored("SELECT workload, target, round, position, warmup, status, max_rss_kb "
                  "FROM samples ORDER BY id")
    # 3 workloads x 2 runnable ABIs x (1 warm-up + 5 rounds)
    assert len(rows) == 36
    assert all(r[5] == "ok" for r in rows)
    assert sum(r[4] for r in rows) == 6  # one warm-up per target per workload
    # Interleaved: the order flips every round.
    ptr = [(r[2], r[1]) for r in rows if r[0] == "ptrtree"]
    assert ptr[:4] == [(0, "i386"), (0, "x86_64"), (1, "x86_64"), (1, "i386")]
    # The pointer-heavy workload needs more memory as LP64: measured, not assumed.
    rss = {t: [m for w, tt, _, _, warm, _, m in rows if w == "ptrtree" and tt == t and not warm]
           for t in ("i386", "x86_64")}
    assert min(rss["x86_64"]) > max(rss["i386"])

    exported = cli("export", run_id, "--json")
    doc = json.loads(exported.stdout)
    assert doc["format"] == "abibench-run" and doc["version"] == 1
    assert len(doc["samples"]) == 36
    art = {(a["workload"], a["target"]): a for a in doc["artifacts"]}
    assert ("ptrtree", "x32") in art  # built and sized even though it cannot run
    i386 = art[("ptrtree", "i386")]
    assert i386["effective"]["-mfpmath"] == "387" and i386["abi_flags"] == ["-m32"]
    assert art[("ptrtree", "x86_64")]["cflags"] == i386["cflags"] == ["-O2"]
    assert i386["sizes"]["ptrtree"]["text"] > 0


def test_second_run_rebuilds_nothing(cli: Cli, cli_env: dict[str, str], tmp_path: Path) -> None:
    env = dict(cli_env, ABIBENCH_CACHE=str(tmp_path / "cold-cache"))
    # The build cache is the property: the runs' HTML reports are left out (--no-html spares
    # each its charts); the default report is checked in test_default_workloads_run_and_compare.
    first = cli("run", "nbody", "--rounds", "1", "--min-rounds", "1", "--set", "steps=1000",
                "--no-html", env=env)
    assert first.returncode == 0, first.stderr
    assert "builds: 3 new, 0 reused" in first.stdout
    second = cli("run", "nbody", "--rounds", "1", "--min-rounds", "1", "--set", "steps=1000",
                 "--no-html", env=env)
    assert "builds: 0 new, 3 reused" in second.stdout
    # A different flag set is a different build.
    third = cli("run", "nbody", "--rounds", "1", "--cflags=-O1", "--set", "steps=1000",
                "--no-html", env=env)
    assert "builds: 3 new, 0 reused" in third.stdout


def test_report_of_a_stored_run(cli: Cli, tmp_path: object) -> None:
    # `report` reads the store; the run's own HTML is not read here (--no-html).
    assert cli("run", "nbody", "--abi", "i386,x86_64", "--rounds", "2", "--set",
               "steps=1000", "--no-html").returncode == 0
    r = cli("report")
    assert r.returncode == 0 and "nbody" in r.stdout and "i386/x86_64" in r.stdout
    runs = cli("runs", "--json")
    assert len(json.loads(runs.stdout)) == 1
