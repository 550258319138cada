"""Browser workloads end to end: Debian's chromium for i386 and amd64 in its sysroot, our pages
served on loopback, the page's result read over the DevTools protocol, the whole browser's
memory, and nothing left running afterwards on any path (a finished run, a failed page, a
timeout, Ctrl-C): the process table, the cgroup and the sysroots' scratch are checked.

The CI run is small: one DOM sub-test at a tiny size, one round, on both arches.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from abibench.errors import EXIT_INTERRUPTED, EXIT_TIMEOUT
from abibench.probe.memory import tree_accounting
from abibench.run.cdp import parse_active_port
from abibench.run.webserver import resolve
from abibench.workloads.parsers import parse_json
from abibench.workspace import SYSROOT_WORK_DIR, owner_of
from tests.processes import interrupt_when, settle

Cli = Callable[..., subprocess.CompletedProcess[str]]
ABIS = "i386,x86_64"
TINY = ["--rounds", "1", "--warmup", "0", "--no-html", "--set", "tests=table_build",
        "--set", "n=200", "--set", "reps=1", "--set", "warmup=0"]
MARK = "ABIBENCH_TEST_MARK"


# ------------------------------------------------------------------------- pure parts


def test_devtools_active_port_is_read_only_when_complete() -> None:
    ep = parse_active_port("39321\n/devtools/browser/0b5e-77\n")
    assert ep is not None and ep.url == "ws://127.0.0.1:39321/devtools/browser/0b5e-77"
    assert parse_active_port("39321\n") is None  # written, not yet whole
    assert parse_active_port("0\n/devtools/browser/x\n") is None
    assert parse_active_port("port\n/devtools/browser/x\n") is None


def test_the_web_server_serves_only_inside_its_directories(tmp_path: Path) -> None:
    pages, vendor, outside = tmp_path / "pages", tmp_path / "vendor", tmp_path / "secret"
    for d in (pages, vendor, outside):
        d.mkdir()
    (pages / "a.html").write_text("a")
    (vendor / "base.js").write_text("b")
    (outside / "key").write_text("k")
    (vendor / "link").symlink_to(outside / "key")
    mounts = {"": pages, "vendor/octane": vendor}
    assert resolve(mounts, "/a.html?x=1") == pages / "a.html"
    assert resolve(mounts, "/vendor/octane/base.js") == vendor / "base.js"
    for bad in ("/../secret/key", "/vendor/octane/../../secret/key", "/vendor/octane/link",
                "/%2e%2e/secret/key", "/missing.html", "/"):
        assert resolve(mounts, bad) is None, bad


def test_a_page_result_is_read_as_numbers_by_path() -> None:
    text = json.dumps({"score": 2.5, "checksum": "ab12", "complete": True,
                       "tests": {"list_build": {"ops_per_s": 3, "ms": [1.5]}}}, indent=1)
    assert parse_json(text) == {"score": 2.5, "tests.list_build.ops_per_s": 3.0}
    with pytest.raises(ValueError, match="not JSON"):
        parse_json("Score: 12")


@pytest.mark.parametrize(("table", "message"), [
    ('[browser]\npage = "nope/index.html"\n', "is not one of abibench's pages"),
    ('[browser]\npage = "../paths.py"\n', "is not one of abibench's pages"),
    ('[browser]\npage = "dom/index.html"\nextra = 1\n', "has no key extra"),
    ('[browser]\npage = "dom/index.html"\nserve = { "Bad Name" = "{work}" }\n',
     "names a directory served"),
])
def test_bad_browser_tables_are_refused_with_the_line(tmp_path: Path, table: str,
                                                      message: str) -> None:
    from abibench.errors import ProfileError
    from abibench.workloads.profile import load_profile

    prof = tmp_path / "b.toml"
    prof.write_text('id = "b"\ntitle = "t"\n[debian]\npackages = ["chromium"]\n'
                    f'{table}[run]\ncommand = ["{{bin}}/chromium"]\n')
    with pytest.raises(ProfileError, match=message):
        load_profile(prof)


def test_a_browser_needs_a_sysroot(tmp_path: Path) -> None:
    from abibench.errors import ProfileError
    from abibench.workloads.profile import load_profile

    prof = tmp_path / "b.toml"
    prof.write_text('id = "b"\ntitle = "t"\n[source]\nfiles = ["x.c"]\nartifacts = ["x"]\n'
                    '[browser]\npage = "dom/index.html"\n[run]\ncommand = ["{bin}/x"]\n')
    with pytest.raises(ProfileError, match=r"b.toml:\d+: \[browser\] runs Debian's browser"):
        load_profile(prof)


# ------------------------------------------------------------------------- real browsers



@pytest.fixture
def env(cli_env: dict[str, str], debian_cache: Path) -> dict[str, str]:
    # Sysroots are keyed by their content: abibench's own cache, no second download.
    return {**cli_env, "ABIBENCH_CACHE": str(debian_cache), MARK: uuid.uuid4().hex}


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def leftovers(pid: int, mark: str, cache: Path) -> list[str]:
    """Everything a run by process `pid` could have left: processes (the browser's carry its
    scratch directory, named for `pid`, in HOME; abibench's own helpers the test's mark), its
    memory cgroups, and its scratch directories in the sysroots."""
    found: list[str] = []
    tag, marked = f"-p{pid}-".encode(), f"{MARK}={mark}".encode()
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) not in (os.getpid(), pid):
            environ = _environ(int(d.name))
            # The browser's HOME is in its scratch directory; other processes may carry the
            # tag elsewhere (gcc's COLLECT_GCC_OPTIONS names the probe's directory).
            home = any(v.startswith(b"HOME=") and tag in v for v in environ.split(b"\0"))
            kind = "browser" if home else "helper" if marked in environ or tag in environ \
                else None
            if kind is not None:
                try:
                    found.append(f"{kind} {d.name} {(d / 'comm').read_text().strip()}")
                except OSError:
                    continue  # it ended while we looked
    parent = tree_accounting().parent
    if parent is not None and parent.is_dir():
        found += [f"cgroup {g}" for g in parent.iterdir()
                  if (o := owner_of(g.name)) is not None and o.pid == pid]
    for root in (cache / "debian" / "sysroots").glob("*"):
        found += [f"scratch {p}" for p in (root / SYSROOT_WORK_DIR.strip("/")).glob(
            f"*-p{pid}-*")]
    return found


def settled(pid: int, mark: str, cache: Path) -> list[str]:
    """Leftovers after giving exiting processes a moment to be reaped."""
    return settle(lambda: leftovers(pid, mark, cache))


def _run(env: dict[str, str], *args: str, timeout: float = 900) -> tuple[int, int, str, str]:
    proc = subprocess.Popen([sys.executable, "-m", "abibench", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=timeout)
    return proc.pid, proc.returncode, out, err


def _export(cli: Cli, env: dict[str, str]) -> dict[str, object]:
    r = cli("export", env=env)
    assert r.returncode == 0, r.stderr
    doc: dict[str, object] = json.loads(r.stdout)
    return doc


@pytest.mark.needs_apt
def test_chromium_dom_small_run_on_both_arches(cli: Cli, env: dict[str, str],
                                               debian_cache: Path) -> None:
    """The CI run: one sub-test, tiny size, one round, i386 and amd64."""
    pid, code, out, err = _run(env, "run", "chromium-dom", "--provenance", "debian", "--abi",
                               ABIS, *TINY)
    assert code == 0, err + out
    assert "Debian packages: chromium " in out
    assert "output check: identical on i386, x86_64" in out
    doc = _export(cli, env)
    samples = doc["samples"]
    assert isinstance(samples, list) and len(samples) == 2
    kind = tree_accounting().kind
    for s in samples:
        assert s["status"] == "ok", s["error"]
        assert set(s["metrics"]) == {"score", "table_build"}  # one sub-test: the others absent
        assert s["metrics"]["table_build"] > 0
        assert s["tree_memory"] == kind
        # A dozen processes: far more than the browser's own process alone would hold.
        assert s["tree_peak_rss_kb"] > 50 * 1024
    assert len({s["check"] for s in samples}) == 1
    assert settled(pid, env[MARK], debian_cache) == []


@pytest.mark.needs_apt
def test_a_failing_page_fails_the_sample_and_leaves_nothing(cli: Cli, env: dict[str, str],
                                                            debian_cache: Path) -> None:
    pid, code, out, err = _run(env, "run", "chromium-dom", "--provenance", "debian", "--abi",
                               "x86_64", *TINY, "--set", "tests=no_such_test")
    assert code == 1, err + out
    assert "the page failed" in out and "unknown sub-test no_such_test" in out
    assert settled(pid, env[MARK], debian_cache) == []


@pytest.mark.needs_apt
def test_a_page_that_times_out_leaves_nothing(env: dict[str, str], debian_cache: Path,
                                              tmp_path: Path) -> None:
    profile = tmp_path / "slow-dom.toml"
    builtin = Path(__file__).parents[2] / "src/abibench/workloads/profiles/chromium-dom.toml"
    text = builtin.read_text().replace('id = "chromium-dom"', 'id = "slow-dom"') \
        .replace('timeout = "600s"', 'timeout = "5s"')
    profile.write_text(text)
    pid, code, out, err = _run(env, "run", str(profile), "--provenance", "debian", "--abi",
                               "x86_64", "--rounds", "1", "--warmup", "0", "--no-html",
                               "--set", "n=200000", "--set", "tests=table_build")
    assert code == EXIT_TIMEOUT and "timed out after 5s" in out, err + out
    assert settled(pid, env[MARK], debian_cache) == []


@pytest.mark.needs_apt
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_browser_run_leaves_nothing(env: dict[str, str], debian_cache: Path,
                                                   sig: int) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "abibench", "run", "chromium-dom",
                             "--provenance", "debian", "--abi", ABIS, "--rounds", "2",
                             "--no-html", "--set", "n=100000", "--set", "tests=table_build"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Mid-sample: once a browser process of this run exists.
    err = interrupt_when(proc, lambda: any(
        p.startswith("browser") for p in leftovers(proc.pid, env[MARK], debian_cache)),
        sig, "the browser")
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert settled(proc.pid, env[MARK], debian_cache) == []


@pytest.mark.needs_apt
@pytest.mark.needs_setup("npm")
def test_octane_runs_in_the_browser(cli: Cli, env: dict[str, str], debian_cache: Path) -> None:
    pid, code, out, err = _run(env, "run", "chromium-octane", "--provenance", "debian",
                               "--abi", "x86_64", "--rounds", "1", "--warmup", "0", "--no-html",
                               "--set", "suites=Richards")
    assert code == 0, err + out
    samples = _export(cli, env)["samples"]
    assert isinstance(samples, list) and len(samples) == 1
    metrics = samples[0]["metrics"]
    assert set(metrics) == {"score", "richards"}
    assert metrics["richards"] > 0 and metrics["score"] == pytest.approx(metrics["richards"])
    assert settled(pid, env[MARK], debian_cache) == []


def test_the_pages_result_becomes_the_samples_output_or_its_failure() -> None:
    from abibench.run.browser import PageOutcome, with_result
    from abibench.run.launcher import RawResult

    raw = RawResult(status="exited", exit_code=0, signal=0, wall_s=1.0, user_s=0.5, sys_s=0.1,
                    max_rss_kb=1000, minflt=0, majflt=0, errno=0, stdout_digest="d",
                    stdout="chromium's own noise", stderr_tail="")
    ok = with_result(raw, PageOutcome(result={"score": 2.0, "checksum": "0a1b",
                                              "tests": {"t": {"checksum": "ffff"}}}))
    assert ok.ok and parse_json(ok.stdout) == {"score": 2.0}
    assert ok.stdout.splitlines()[1] == ' "checksum": "0a1b",'  # top level: one space
    assert ok.stdout_digest != "d"
    failed = with_result(raw, PageOutcome(result={"error": "Error: boom\n  at main"}))
    assert not failed.ok and failed.describe_failure() == "the page failed: Error: boom   at main"
    lost = with_result(raw, PageOutcome(error="the browser closed its DevTools connection"))
    assert not lost.ok and "closed its DevTools connection" in lost.describe_failure()
    timed_out = with_result(replace(raw, status="timeout"), PageOutcome())
    assert timed_out.describe_failure() == "timed out"
