"""GL workloads end to end: Debian's glmark2 of each arch on its own llvmpipe in a virtual X
server, and nothing left behind (X server, program, socket, lock file, scratch) after a normal
run, a failing sample and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from abibench.errors import EXIT_INTERRUPTED, EXIT_TIMEOUT, ProfileError
from abibench.paths import PROFILES_DIR
from abibench.workloads.profile import load_profile
from abibench.workspace import SYSROOT_WORK_DIR
from tests.processes import interrupt_when, settle

ABIS = "i386,x86_64"
# One short scene: the CI run of the GL workload.
TINY = ["--rounds", "1", "--warmup", "0", "--no-html", "--set", "benchmark=build",
        "--set", "duration=1", "--set", "size=320x240"]
MARK = "ABIBENCH_TEST_MARK"

needs_xvfb = pytest.mark.needs_setup("xvfb")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def leftovers(pid: int, mark: str, cache: Path) -> list[str]:
    """What a run by process `pid` could leave: its X servers and helpers (they carry the
    test's mark in their environment), the X clients in their sysroot namespaces (their mounts
    name the run's X socket directory, named for `pid`), X sockets or lock files, and its
    scratch directories in the sysroots."""
    found: list[str] = []
    tag, marked = f"-p{pid}-".encode(), f"{MARK}={mark}".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) in (os.getpid(), pid):
            continue
        if marked in _read(d / "environ") or tag in _read(d / "mountinfo"):
            found.append(f"process {d.name} {_read(d / 'comm').decode().strip()}")
    for root in (cache / "debian" / "sysroots").glob("*"):
        scratch = root / SYSROOT_WORK_DIR.strip("/")
        found += [f"scratch {p}" for p in scratch.glob(f"*-p{pid}-*")]
    return found


def settled(pid: int, mark: str, cache: Path) -> list[str]:
    """Leftovers after giving exiting processes a moment to be reaped."""
    return settle(lambda: leftovers(pid, mark, cache))


def host_x_files() -> set[str]:
    """X sockets and lock files in the host's /tmp (ours must never appear there)."""
    tmp = Path("/tmp")
    return ({p.name for p in tmp.glob(".X*-lock")}
            | {p.name for p in (tmp / ".X11-unix").glob("X*")})


@pytest.fixture
def env(cli_env: dict[str, str], debian_cache: Path) -> dict[str, str]:
    return {**cli_env, "ABIBENCH_CACHE": str(debian_cache), MARK: uuid.uuid4().hex}


def _run(env: dict[str, str], *args: str, timeout: float = 900) -> tuple[int, int, str, str]:
    proc = subprocess.Popen([sys.executable, "-m", "abibench", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=timeout)
    return proc.pid, proc.returncode, out, err


def test_display_needs_a_sysroot_and_a_screen(tmp_path: Path) -> None:
    prof = tmp_path / "g.toml"
    prof.write_text('id = "g"\ntitle = "t"\n[source]\nfiles = ["x.c"]\nartifacts = ["x"]\n'
                    '[display]\n[run]\ncommand = ["{bin}/x"]\n')
    with pytest.raises(ProfileError, match=r"g.toml:\d+: \[display\] runs an X client"):
        load_profile(prof)
    prof.write_text('id = "g"\ntitle = "t"\n[debian]\npackages = ["glmark2-x11"]\n'
                    '[display]\nscreen = "huge"\n[run]\ncommand = ["{bin}/glmark2"]\n')
    with pytest.raises(ProfileError, match=r"g.toml:\d+: \[display\] screen 'huge' must be"):
        load_profile(prof)
    prof.write_text('id = "g"\ntitle = "t"\n[debian]\npackages = ["glmark2-x11"]\n'
                    '[display]\nrenderer = "nvidia"\n[run]\ncommand = ["{bin}/glmark2"]\n')
    with pytest.raises(ProfileError, match=r"renderer 'nvidia' is not known"):
        load_profile(prof)


@pytest.mark.needs_apt
@needs_xvfb
def test_glmark2_one_scene_on_both_arches_leaves_nothing(env: dict[str, str],
                                                         debian_cache: Path,
                                                         isolation: str) -> None:
    """The CI run: one scene, 1 s, i386 against x86_64, each on its own arch's llvmpipe; in
    every isolation this host has (chroot's namespace and bwrap bind the socket differently)."""
    env = {**env, "ABIBENCH_ISOLATION": isolation}
    before = host_x_files()
    pid, code, out, err = _run(env, "run", "glmark2", "--provenance", "debian", "--abi", ABIS,
                               *TINY)
    assert code == 0, err + out
    assert "libgl1-mesa-dri 22.3.6" in out
    assert "output check: identical on i386, x86_64" in out
    r = subprocess.run([sys.executable, "-m", "abibench", "export"], env=env,
                       capture_output=True, text=True, check=False)
    samples = json.loads(r.stdout)["samples"]
    assert len(samples) == 2
    for s in samples:
        assert s["status"] == "ok", s["error"]
        assert set(s["metrics"]) == {"score"}  # one scene: the default set's are absent
        assert s["metrics"]["score"] > 0
        assert s["tree_peak_rss_kb"] and s["tree_peak_rss_kb"] > 10 * 1024
        assert s["check"] == "llvmpipe (LLVM 15.0.6"
    assert settled(pid, env[MARK], debian_cache) == []
    assert host_x_files() <= before


@pytest.mark.needs_apt
@needs_xvfb
def test_a_failing_sample_leaves_nothing(env: dict[str, str], debian_cache: Path,
                                         tmp_path: Path) -> None:
    # A sample that runs past its time limit: the launcher kills it mid-frame.
    profile = tmp_path / "slow-glmark2.toml"
    text = (PROFILES_DIR / "glmark2.toml").read_text()
    profile.write_text(text.replace('id = "glmark2"', 'id = "slow-glmark2"')
                       .replace('timeout = "1200s"', 'timeout = "6s"'))
    before = host_x_files()
    pid, code, out, err = _run(env, "run", str(profile), "--provenance", "debian", "--abi",
                               "i386", *TINY, "--set", "duration=60")
    assert code == EXIT_TIMEOUT and "timed out after 6s" in out, err + out
    assert settled(pid, env[MARK], debian_cache) == []
    assert host_x_files() <= before


@pytest.mark.needs_apt
@needs_xvfb
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_mid_sample_leaves_nothing(env: dict[str, str], debian_cache: Path,
                                          sig: int) -> None:
    before = host_x_files()
    proc = subprocess.Popen([sys.executable, "-m", "abibench", "run", "glmark2",
                             "--provenance", "debian", "--abi", ABIS, "--rounds", "2",
                             "--no-html", "--set", "benchmark=build", "--set", "duration=30",
                             "--set", "size=320x240"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Mid-sample: once the program runs in its namespace with the run's X socket.
    tag = f"-p{proc.pid}-".encode()
    err = interrupt_when(proc, lambda: any(
        tag in _read(d / "mountinfo") and b"glmark2" in _read(d / "comm")
        for d in Path("/proc").iterdir() if d.name.isdigit()), sig, "glmark2")
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert settled(proc.pid, env[MARK], debian_cache) == []
    assert host_x_files() <= before
