"""abibench system: real boots (Debian's amd64 kernel, the minimal system, QEMU TCG).

Slow by nature (a TCG boot of systemd takes one to two minutes here), so CI boots the smallest
system once per userspace, with the shortest settling, and checks the numbers are sane and that
nothing is left: no qemu (by PID), no overlay, no owned directory. Those two boots are also the
fault injection's: Ctrl-C during the second, the resume stopped by SIGTERM during its boot, and
resumed again to exactly the run's boots (one run, two whole boots; docs/method.md §10, Round 5).
And qemu stopped by the deadline at generated points of a boot.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.abi import ABIS
from abibench.obtain.sysimage import SystemImage, build_image
from abibench.obtain.syskernel import SystemKernel, system_kernel
from abibench.run import sysboot
from abibench.workloads.system import load_system, parse_system

from .processes import alive, interrupt_when, ours
from .storetools import query_rows
from .test_sysreport_parse import guest_agrees

NEEDS = pytest.mark.needs_setup("qemu-system-x86", "mmdebstrap", "arch-test", root=True)
CI_SYSTEM = """[system]
description = "minimal, measured at once (CI)"
packages = ["systemd-sysv"]
settle = 2
memory_mb = 1024
"""


def _env(cli_env: dict[str, str], debian_cache: Path, tmp: Path) -> dict[str, str]:
    # Disks and kernels are keyed by what they hold: abibench's own cache keeps them.
    (tmp / "t").mkdir()
    return {**cli_env, "ABIBENCH_CACHE": str(debian_cache), "TMPDIR": str(tmp / "t")}


def _left(tmp: Path) -> list[str]:
    """What a boot may leave: owned directories (qemu's files, its overlay) under TMPDIR."""
    return [str(p) for p in (tmp / "t").rglob("*") if "sys" in p.name or "qemu" in p.name]


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abibench", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


@pytest.fixture(scope="module")
def parts(debian_cache: Path) -> tuple[SystemKernel, SystemImage]:
    profile = parse_system("ci", {"packages": ["systemd-sysv"], "settle": 2}, "ci")
    kernel = system_kernel("amd64", debian_cache, version=sysboot.kernel_version())
    return kernel, build_image(profile, ABIS["x86_64"],
                                                             debian_cache)


@NEEDS
@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.floats(0.0, 25.0))
def test_a_boot_stopped_anywhere_or_never_reporting_leaves_nothing(
        parts: tuple[SystemKernel, SystemImage],
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        deadline: float) -> None:
    # The family: qemu ended by a deadline wherever the guest is (firmware, kernel, initramfs,
    # systemd), which is also a guest that never reports.
    kernel, image = parts
    tmp = tmp_path_factory.mktemp("sysdeadline")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    started: list[int] = []
    combo = sysboot.Combination("amd64", "x86_64")
    done = sysboot.boot_once(combo, kernel, image, load_system("minimal"), deadline,
                             started.append)
    assert done.ended.startswith("deadline") and not done.ok
    assert started and not alive(started[0])
    assert [p.name for p in (tmp / f"abibench-{os.getuid()}").iterdir()] == []


def _sane(doc: dict[str, Any]) -> None:
    """Both userspaces' figures, one boot each: a systemd system in 1 GiB uses tens of MiB, the
    kernel some, userspace some."""
    by = {r["userspace"]: r for r in doc["results"]}
    assert set(by) == {"i386", "x86_64"}, doc["problems"]
    for r in by.values():
        assert r["boots_reported"] == 1, doc["problems"]
        f = {k: v["median"] for k, v in r["figures"].items()}
        assert 10 < f["used"] < 900 and 1 < f["kernel"] < f["used"]
        assert 1 < f["userspace"] < 900 and 1 < f["image"] < 200 and f["cache"] > 1
        assert "init.scope" in r["units"]


@NEEDS
def test_interrupted_runs_keep_their_boots_and_resume_boots_the_rest(
        cli_env: dict[str, str], debian_cache: Path, tmp_path: Path) -> None:
    # One run of both userspaces, one boot each (what CI must boot), interrupted by Ctrl-C
    # during its second boot, its resume stopped by SIGTERM during that boot, and resumed again
    # to exactly the run's boots. Two whole boots in all, each userspace's once: an
    # uninterrupted run boots the same two through the same code (run/sysboot.measure), and its
    # storing, reporting and numbers are checked on the run completed here (docs/method.md §10).
    env = _env(cli_env, debian_cache, tmp_path)
    profile, out, db = tmp_path / "ci.toml", tmp_path / "sys.json", tmp_path / "r.sqlite"
    profile.write_text(CI_SYSTEM)
    run = [sys.executable, "-m", "abibench", "--db", str(db), "system", "run", str(profile)]
    kept = tmp_path / "kept"
    proc = subprocess.Popen([*run, "--combo", "amd64:i386,amd64:x86_64", "--boots", "1",
                             "--keep-reports", str(kept)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    qemu: list[int] = []

    def second_boot() -> bool:  # one boot stored, the next one's qemu running
        if query_rows(db, "SELECT COUNT(*) FROM system_boots") != [(1,)]:
            return False
        qemu[:] = ours(str(tmp_path / "t"), "qemu-system")
        return bool(qemu)
    err = interrupt_when(proc, second_boot, signal.SIGINT, "the second boot", deadline_s=900)
    assert proc.returncode == 130, err
    assert not any(alive(p) for p in qemu)
    assert ours(str(tmp_path)) == [] and _left(tmp_path) == []
    listed = _cli(env, "--db", str(db), "runs").stdout
    assert "interrupted system run, 1 boots" in listed, listed
    first = err.split("boot 1/2: ", 1)[1].split(" (", 1)[0]  # the combination booted first
    shown = _cli(env, "--db", str(db), "report")
    assert f"{first} (idle; 1/1 boots reported)" in shown.stdout, shown.stdout
    assert shown.stdout.count("1/1 boots reported") == 1, shown.stdout
    assert "1 of the run's 2 boots were not done" in shown.stdout
    # Resumed, and the resume stopped by a polite kill (a service manager's, a timeout's) once
    # its boot's qemu runs: nothing left, nothing stored, the run interrupted again.
    run_id = query_rows(db, "SELECT id FROM runs")[0][0]
    proc = subprocess.Popen([*run, "--resume", run_id], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)

    def booting() -> bool:
        qemu[:] = ours(str(tmp_path / "t"), "qemu-system")
        return bool(qemu)
    err = interrupt_when(proc, booting, signal.SIGTERM, "the resumed boot", deadline_s=900)
    assert proc.returncode == 130, err
    assert not any(alive(p) for p in qemu)
    assert ours(str(tmp_path)) == [] and _left(tmp_path) == []
    assert query_rows(db, "SELECT seq FROM system_boots") == [(0,)]
    assert "interrupted system run, 1 boots" in _cli(env, "--db", str(db), "runs").stdout
    # Resumed again: the one boot not done, and only it; the run complete with its 2 boots.
    done = subprocess.run([*run, "--resume", run_id, "--json", str(out), "--keep-reports",
                           str(kept)], capture_output=True, text=True, env=env, timeout=1800,
                          check=False)
    assert done.returncode in (0, 1), done.stderr  # 1: a unit failed (problems listed)
    assert "boot 2/2" in done.stderr and "boot 1/2" not in done.stderr, done.stderr
    assert query_rows(db, "SELECT seq FROM system_boots ORDER BY seq") == [(0,), (1,)]
    assert "emulation time" in done.stdout
    assert ours(str(tmp_path)) == [] and _left(tmp_path) == []
    doc = json.loads(out.read_text())
    _sane(doc)
    # Each boot's raw report was kept, and the guest's parsers read its /proc texts as this
    # host's build of them does (tests/test_sysreport_parse.py).
    reports = sorted(kept.glob("boot*.report"))
    assert len(reports) == 2 and all(guest_agrees(r.read_bytes()) for r in reports), reports
    # Stored as each boot ended: listed, and its report from the store is the run's own.
    listed = _cli(env, "--db", str(db), "runs").stdout
    assert "complete    system run, 2 boots" in listed, listed
    shown = _cli(env, "--db", str(db), "report", run_id)
    assert shown.stdout.count("(idle; 1/1 boots reported)") == 2, shown.stdout
    assert "were not done" not in shown.stdout
    page = tmp_path / "sys.html"
    assert _cli(env, "--db", str(db), "report", "latest", "--html", str(page)).returncode == 0
    assert "<svg" in page.read_text() and "amd64 kernel + i386" in page.read_text()
    again = json.loads(_cli(env, "--db", str(db), "report", "--json").stdout)
    assert again["results"] == doc["results"]
