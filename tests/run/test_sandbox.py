"""Programs run inside a Debian sysroot see only the sysroot: same output on i386 and amd64,
their own peak memory, and no library of the host mapped."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from abibench.obtain.sysroot import Sysroot, prepare
from abibench.run.launcher import launcher, run_sample
from abibench.run.sandbox import Mode, SysrootRunner, foreign_mappings

pytestmark = pytest.mark.needs_apt


@pytest.fixture(scope="module")
def gzip_roots(debian_cache: Path) -> dict[str, Sysroot]:
    return prepare(["gzip"], ["i386", "amd64"], debian_cache)


@pytest.fixture(params=["default", "loader"])
def mode(request: pytest.FixtureRequest, isolation: str) -> Mode:
    """Every isolation this host has, and the loader-only fallback."""
    name = isolation if request.param == "default" else "loader"
    return "chroot" if name == "chroot" else "loader" if name == "loader" else "bwrap"


def test_runs_inside_the_sysroot_with_identical_output(gzip_roots: dict[str, Sysroot],
                                                       mode: Mode, tmp_path: Path) -> None:
    launch = launcher(tmp_path / "cache")
    data = tmp_path / "in.txt"
    data.write_bytes(b"abibench " * 20000)
    digests = []
    # The parent grows past 300 MB first: the sample's peak must still be gzip's own few MB.
    ballast = bytearray(300 * 1024 * 1024)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    for arch in ("i386", "amd64"):
        runner = SysrootRunner(gzip_roots[arch], mode)
        r = run_sample(runner.wrap(["/bin/gzip", "-n", "-6", "-c"]), cwd=tmp_path,
                       env=runner.env(), timeout_s=60, launch=launch, stdin=data)
        assert r.ok, r.stderr_tail
        assert r.max_rss_kb < 8 * 1024, f"{arch}/{mode}: {r.max_rss_kb} KiB is not gzip's own"
        digests.append(r.stdout_digest)
    del ballast
    assert digests[0] == digests[1]


def _program_pid(proc: subprocess.Popen[bytes], mode: str) -> int:
    if mode != "bwrap":
        return proc.pid
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        if kids:
            return int(kids[0])
        time.sleep(0.02)
    raise AssertionError("bwrap started no program")


def test_no_host_library_is_loaded(gzip_roots: dict[str, Sysroot], mode: Mode) -> None:
    for arch in ("i386", "amd64"):
        root = gzip_roots[arch]
        runner = SysrootRunner(root, mode)
        # gzip blocks reading its stdin: its mappings can be read while it is alive.
        proc = subprocess.Popen(runner.wrap(["/bin/gzip", "-c"]), stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, env=runner.env())
        try:
            pid = _program_pid(proc, mode)
            deadline = time.monotonic() + 10
            maps = ""
            # Until gzip itself is mapped with its libc: before its exec, chroot (a host
            # program) shows the host's libc in the same process.
            while not ("bin/gzip" in maps and "libc.so.6" in maps) and \
                    time.monotonic() < deadline:
                time.sleep(0.02)
                maps = Path(f"/proc/{pid}/maps").read_text()
            assert "bin/gzip" in maps and "libc.so.6" in maps
            assert foreign_mappings(pid, root.path) == []
            if mode != "bwrap":
                libc = [ln.split()[-1] for ln in maps.splitlines() if "libc.so.6" in ln]
                assert all(p.startswith(str(root.path)) for p in libc)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)
    # And the check does catch a host library: this Python process maps the host's libc.
    assert foreign_mappings(os.getpid(), gzip_roots["amd64"].path) != []
