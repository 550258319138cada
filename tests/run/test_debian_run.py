"""`abibench run --provenance debian` end to end: Debian's i386 and amd64 builds at one version,
refusals with exit code 5, and the MariaDB workload leaving nothing behind on any path."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from abibench.errors import EXIT_INTERRUPTED, EXIT_PACKAGE
from abibench.obtain.sysroot import WORK_DIR, prepare
from abibench.probe.memory import tree_accounting

Cli = Callable[..., subprocess.CompletedProcess[str]]

pytestmark = pytest.mark.needs_apt
ABIS = "i386,x86_64"


@pytest.fixture
def env(cli_env: dict[str, str], debian_cache: Path) -> dict[str, str]:
    # Sysroots are keyed by their content: reuse abibench's own cache rather than download.
    return {**cli_env, "ABIBENCH_CACHE": str(debian_cache)}


def _export(cli: Cli, env: dict[str, str]) -> dict[str, object]:
    r = cli("export", env=env)
    assert r.returncode == 0, r.stderr
    doc: dict[str, object] = json.loads(r.stdout)
    return doc


def test_deb_gzip_runs_both_arches_at_the_same_version(cli: Cli, env: dict[str, str]) -> None:
    r = cli("run", "deb-gzip", "--provenance", "debian", "--abi", ABIS, "--rounds", "1",
            "--warmup", "0", "--set", "mib=2", "--no-html", env=env)
    assert r.returncode == 0, r.stderr
    # short labels; the legend says where each one's program came from
    assert "i386 = Debian's own binary: gzip " in r.stdout, r.stdout
    assert "x86_64 = Debian's own binary: gzip " in r.stdout, r.stdout
    assert "Debian packages: gzip " in r.stdout
    assert "output check: identical" in r.stdout
    doc = _export(cli, env)
    arts = doc["artifacts"]
    assert isinstance(arts, list) and len(arts) == 2
    versions = {a["target"]: a["debian_packages"]["gzip"] for a in arts}
    assert len(set(versions.values())) == 1
    for a in arts:
        assert a["provenance"] == "debian" and Path(a["sysroot"]).is_dir()
        assert a["debian_closure"]["libc6"]  # each sysroot has its own libc


def test_unavailable_package_refuses_the_run(cli: Cli, env: dict[str, str],
                                             tmp_path: Path) -> None:
    prof = tmp_path / "nopkg.toml"
    prof.write_text('id = "nopkg"\ntitle = "t"\n[debian]\npackages = ["abibench-no-such-pkg"]\n'
                    '[run]\ncommand = ["{bin}/true"]\n')
    r = cli("run", str(prof), "--provenance", "debian", "--abi", ABIS, "--rounds", "1",
            "--no-html", env=env)
    assert r.returncode == EXIT_PACKAGE, r.stderr
    lines = r.stderr.strip().splitlines()
    assert "abibench-no-such-pkg" in lines[-1] and "no build for i386" in lines[-1]


def test_workload_without_debian_table_is_refused(cli: Cli, env: dict[str, str]) -> None:
    r = cli("run", "ptrtree", "--provenance", "debian", "--abi", ABIS, "--rounds", "1",
            "--no-html", env=env)
    assert r.returncode == EXIT_PACKAGE
    assert "[debian]" in r.stderr.strip().splitlines()[-1]


def test_a_selection_mixing_source_and_debian_workloads_measures_the_debian_ones(
        cli: Cli, env: dict[str, str]) -> None:
    # As a suite does (games-media: source-built encoders beside Debian's): the workload
    # without [debian] is "not built" with the reason, the others are measured.
    r = cli("run", "ptrtree", "deb-gzip", "--provenance", "debian", "--abi", ABIS, "--rounds",
            "1", "--warmup", "0", "--set", "mib=2", "--no-html", env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(cli("export", env=env).stdout)
    states = {(s["workload"], s["target"]): s for s in doc["target_status"]}
    for target in ("i386/debian", "x86_64/debian"):
        assert states[("ptrtree", target)]["state"] == "not built"
        assert "without --provenance debian" in states[("ptrtree", target)]["reason"]
    ran = {(s["workload"], s["target"]) for s in doc["samples"] if s["status"] == "ok"}
    assert ran == {("deb-gzip", "i386/debian"), ("deb-gzip", "x86_64/debian")}


# ---------------------------------------------------------------- MariaDB through the CLI

SMALL = ["--set", "test=oltp_point_select", "--set", "seconds=1", "--set", "warm=1",
         "--set", "tables=1", "--set", "table_size=500"]


@pytest.fixture(scope="module")
def mariadb_roots(debian_cache: Path) -> list[Path]:
    return [s.path for s in prepare(["mariadb-server"], ["i386", "amd64"],
                                    debian_cache).values()]


def _leftovers(roots: list[Path], pid: int) -> tuple[list[int], list[Path]]:
    """Processes (by their command line) and scratch directories of abibench process `pid`.

    The sysroots are shared with whatever else runs (other test sessions, benchmarks), so only
    what carries this run's PID in its scratch name counts.
    """
    mark = f"-p{pid}-"
    procs = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmdline = (d / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if mark in cmdline and "mariadbd" in cmdline:
                procs.append(int(d.name))
    dirs = [p for r in roots for p in (r / WORK_DIR.strip("/")).glob(f"*{mark}*")]
    return procs, dirs


def _settle(roots: list[Path], pid: int) -> tuple[list[int], list[Path]]:
    deadline = time.monotonic() + 15
    while any(_leftovers(roots, pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _leftovers(roots, pid)


def _start(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "abibench", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("case", ["ok", "client-fails"])
def test_mariadb_workload_leaves_nothing(cli: Cli, env: dict[str, str], mariadb_roots: list[Path],
                                         case: str) -> None:
    args = [*SMALL]
    if case == "client-fails":  # a failure in the middle: the server is up, the client errs
        args += ["--set", "threads=0"]
    proc = _start(env, "run", "mariadb-sysbench", "--provenance", "debian", "--abi", ABIS,
                  "--rounds", "1", "--warmup", "0", "--no-html", *args)
    out, err = proc.communicate(timeout=600)
    if case == "ok":
        assert proc.returncode == 0, err + out
        assert "Debian packages: mariadb-server" in out
        doc = _export(cli, env)
        samples = doc["samples"]
        assert isinstance(samples, list)
        # peak RSS is the server's (tens of MB), not sysbench's few MB
        assert all(s["max_rss_kb"] > 20_000 for s in samples)
        # [run] memory = "tree": the server's whole tree, measured the way this host can
        assert all(s["tree_memory"] == tree_accounting().kind for s in samples)
        assert all(s["tree_peak_rss_kb"] > 20_000 for s in samples)
        assert all(s["metrics"]["tps"] > 0 for s in samples)
    else:
        assert proc.returncode == 1, err + out
    assert _settle(mariadb_roots, proc.pid) == ([], [])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_mariadb_run_leaves_nothing(env: dict[str, str], mariadb_roots: list[Path],
                                                sig: int) -> None:
    proc = _start(env, "run", "mariadb-sysbench", "--provenance", "debian", "--abi", ABIS,
                  "--rounds", "3", "--no-html", *SMALL, "--set", "seconds=30")
    try:
        deadline = time.monotonic() + 180
        while not _leftovers(mariadb_roots, proc.pid)[0] and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
        assert _leftovers(mariadb_roots, proc.pid)[0], "no server started"
        proc.send_signal(sig)  # SIGINT: what Ctrl-C in a terminal delivers
        assert proc.wait(timeout=120) == EXIT_INTERRUPTED
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _settle(mariadb_roots, proc.pid) == ([], [])
