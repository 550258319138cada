"""Every example in examples/ whose toolchain this machine has, end to end at small sizes: built
for i386 and x86_64, two rounds run, the outputs validated, the toolchain recorded. An example
whose toolchain is absent is skipped naming it and its fix, never silently.

Builds go to abibench's own cache (content-keyed, as the Debian tests share it): the first run
on a machine builds everything (Go compiles its runtime for each GOARCH, jq builds from Debian
sources: minutes on a loaded 2-core machine), every later run reuses them. Go's build cache is
shared by the builds of one Go (toolchain.shared_caches), so the Go rebuild (a cache miss by
design) no longer compiles Go's runtime: on a 2-core VM at a load average of about 20 it took
23.1 CPU-s (154 s) before and 9.3 CPU-s (69 s) after, counted by cpuacct (the sandbox's PID
namespace hides a build's CPU time from rusage). The whole module, warm, by cpuacct: 61.9
CPU-s (421 s at a load of 14-19) before, 49.6 CPU-s (226 s at 10-17) after.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
EXAMPLES = Path(__file__).parents[2] / "examples"
ABIS = ("--abi", "i386,x86_64")
ROUNDS = ("--rounds", "2", "--warmup", "0", "--no-html")
MULTILIB = ("gcc-12-multilib", "g++-12-multilib")


@pytest.fixture
def env(cli_env: dict[str, str], debian_cache: Path) -> dict[str, str]:
    return {**cli_env, "ABIBENCH_CACHE": str(debian_cache)}


def need_tool(tool: str, fix: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not found on PATH: {fix}")
    return path


def copy_example(name: str, dest: Path) -> Path:
    return Path(shutil.copytree(EXAMPLES / name, dest / name))


def exported(cli: Cli, env: dict[str, str]) -> dict[str, Any]:
    done = cli("export", "latest", env=env)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def assert_measured(doc: dict[str, Any], workload: str, rounds: int = 2) -> None:
    """Each ABI has `rounds` counted samples that ran and agree on the output."""
    for abi in ("i386", "x86_64"):
        # A prebuilt program's target is labelled with its provenance: i386/prebuilt.
        ok = [s for s in doc["samples"] if s["workload"] == workload
              and s["target"].split("/")[0] == abi and s["status"] == "ok" and not s["warmup"]]
        assert len(ok) >= rounds, (workload, abi, len(ok))
    checks = {s["check"] for s in doc["samples"] if s["workload"] == workload and not s["warmup"]}
    assert len(checks) == 1 and None not in checks, checks


def run_example(cli: Cli, env: dict[str, str], profile: Path, *extra: str,
                timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    done = cli("run", str(profile), *ABIS, *ROUNDS, *extra, env=env, timeout=timeout)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert "output check: identical" in done.stdout, done.stdout[-2000:]
    return done


@pytest.mark.needs_setup(*MULTILIB)
def test_the_cxx_map_sweep_is_one_curve_of_three_sizes(cli: Cli, env: dict[str, str],
                                                       tmp_path: Path) -> None:
    prof = copy_example("cxx-map", tmp_path) / "map.toml"
    text = prof.read_text()
    sweep = 'n = ["10000", "100000", "1000000"]'
    assert sweep in text
    prof.write_text(text.replace(sweep, 'n = ["1000", "4000", "16000"]'))
    page = tmp_path / "r.html"
    done = cli("run", str(prof), *ABIS, "--rounds", "2", "--warmup", "0", "--set",
               "lookups=20000", "--html", str(page), env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert out.count("swept over n (3 values)") == 1, out
    assert "i386/x86_64 rate" in out and "i386/x86_64 peak RSS" in out
    assert "i386/x86_64 rate against n (log axis" in out
    assert "output check: identical at every n" in out
    html = page.read_text()
    assert html.count('aria-label="cxx-map: ratios against n"') == 1
    assert_measured(exported(cli, env), "cxx-map[n=16000]")
    doc = exported(cli, env)
    assert {Path(a["compiler"]).name for a in doc["artifacts"]} == {"g++"}, doc["artifacts"][0]


def test_the_go_example_builds_with_each_goarch(cli: Cli, env: dict[str, str]) -> None:
    need_tool("go", "install a Go toolchain (Debian: apt-get install golang-go) to run "
                    "examples/go")
    run_example(cli, env, EXAMPLES / "go" / "gobench.toml", "--set", "n=100000")
    doc = exported(cli, env)
    assert_measured(doc, "gobench")
    for a in doc["artifacts"]:
        assert a["compiler_version"].startswith("go version go"), a
        assert a["elf"]["gobench"]["elf_class"] == (32 if a["abi"] == "i386" else 64)


def test_a_changed_go_version_rebuilds_the_go_profile(cli: Cli, env: dict[str, str],
                                                      tmp_path: Path) -> None:
    """Over 20 s by nature: the second build is a cache miss by design (one ABI only, to halve
    it). The wrapper runs the same Go, so the shared GOCACHE (keyed by its GOROOT) is warm and
    Go's runtime is not compiled again."""
    real = need_tool("go", "install a Go toolchain (Debian: apt-get install golang-go) to "
                           "run examples/go")
    prof = EXAMPLES / "go" / "gobench.toml"
    one = ("--abi", "x86_64", *ROUNDS, "--set", "n=100000")  # its reports: the two .md files
    first = cli("run", str(prof), *one, "--report", str(tmp_path / "a.md"), env=env,
                timeout=1800)
    assert first.returncode == 0, first.stderr[-2000:]
    # Another go earlier on PATH: the same compiler underneath, another version line (new on
    # every run, so never in the cache).
    other = f"go version go1.99.{uuid.uuid4().hex[:8]} linux/amd64"
    wrap = tmp_path / "wrap" / "bin"
    wrap.mkdir(parents=True)
    (wrap / "go").write_text(f'#!/bin/sh\nif [ "$1" = version ]; then echo "{other}"; '
                             f'exit 0; fi\nexec {real} "$@"\n')
    (wrap / "go").chmod(0o755)
    env2 = {**env, "PATH": f"{wrap}:{env['PATH']}"}
    again = cli("run", str(prof), *one, "--report", str(tmp_path / "b.md"), env=env2,
                timeout=1800)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "(builds: 1 new, 0 reused from cache)" in again.stdout, again.stdout[:400]
    assert other in (tmp_path / "b.md").read_text()
    assert other not in (tmp_path / "a.md").read_text()
    assert exported(cli, env2)["artifacts"][0]["toolchain"] == {"go": other}


def _rust_needs() -> None:
    need_tool("cargo", "install Rust with rustup (or Debian: apt-get install cargo) to run "
                       "examples/rust")


@pytest.mark.needs_setup(*MULTILIB)
def test_the_rust_example_builds_for_i686_and_x86_64(cli: Cli, env: dict[str, str]) -> None:
    _rust_needs()
    lib = subprocess.run(["rustc", "--print", "target-libdir", "--target",
                          "i686-unknown-linux-gnu"], capture_output=True, text=True, check=False)
    if not Path(lib.stdout.strip()).is_dir():
        pytest.skip("no Rust standard library for i686-unknown-linux-gnu: rustup target add "
                    "i686-unknown-linux-gnu (test_a_missing_rust_std_says_the_fix covers "
                    "its absence)")
    run_example(cli, env, EXAMPLES / "rust" / "rustbench.toml", "--set", "n=200000")
    doc = exported(cli, env)
    assert_measured(doc, "rustbench")
    assert all(set(a["toolchain"]) >= {"cargo", "rustc", "cc"} for a in doc["artifacts"])


def test_a_missing_rust_std_fails_the_build_with_rustcs_error_and_fix(
        cli: Cli, env: dict[str, str], tmp_path: Path) -> None:
    _rust_needs()
    # A target whose standard library is not installed: the example's i386 target renamed.
    missing = next((t for t in ("i586-unknown-linux-gnu", "i586-unknown-linux-musl")
                    if not Path(subprocess.run(["rustc", "--print", "target-libdir", "--target",
                                                t], capture_output=True, text=True,
                                               check=False).stdout.strip()).is_dir()), None)
    if missing is None:
        pytest.skip("every candidate target's std is installed: rustup target remove "
                    "i586-unknown-linux-gnu")
    prof = copy_example("rust", tmp_path) / "rustbench.toml"
    prof.write_text(prof.read_text().replace("t=i686-unknown-linux-gnu", f"t={missing}"))
    done = cli("run", str(prof), *ABIS, *ROUNDS, env=env, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "rustbench: build for i386 failed" in last, last
    assert "error[E0463]: can't find crate for `std`" in last, last
    assert f"rustup target add {missing}" in last, last
    # (the terminal report may wrap the long path onto its own line)
    assert re.search(r"log:\s+\S+\.failed\.log", done.stdout), done.stdout[-2000:]


@pytest.mark.needs_setup("rustc", "cargo", *MULTILIB)
def test_debians_rust_without_the_i686_std_names_debians_fix(
        cli: Cli, env: dict[str, str]) -> None:
    """setup.sh installs Debian's rustc and cargo, and tries libstd-rust-dev:i386 (a lagging
    i386 index can refuse it). Without it, rustc's own advice ("rustup target add") is not this
    host's fix: the message adds Debian's."""
    debian = "/usr/bin:/bin"
    lib = subprocess.run(["/usr/bin/rustc", "--print", "target-libdir", "--target",
                          "i686-unknown-linux-gnu"], capture_output=True, text=True, check=False)
    if Path(lib.stdout.strip(), "libstd.rlib").exists() or any(
            Path(lib.stdout.strip()).glob("libstd-*.rlib")):
        pytest.skip("libstd-rust-dev:i386 is installed: Debian's rustc builds for i686 here "
                    "(test_the_rust_example_builds_for_i686_and_x86_64 runs it)")
    done = cli("run", str(EXAMPLES / "rust" / "rustbench.toml"), *ABIS, *ROUNDS,
               env={**env, "PATH": debian}, timeout=900)
    assert done.returncode == 1, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "rustbench: build for i386 failed" in last and "E0463" in last, last
    assert "apt-get install libstd-rust-dev:i386" in last, last


@pytest.mark.needs_setup("cmake", *MULTILIB)
def test_the_cmake_example_configures_and_builds_per_abi(cli: Cli, env: dict[str, str]) -> None:
    run_example(cli, env, EXAMPLES / "cmake" / "nbodycm.toml", "--set", "bodies=100",
                "--set", "steps=20")
    doc = exported(cli, env)
    assert_measured(doc, "nbodycm")
    assert all("cmake" in a["toolchain"] and "cc" in a["toolchain"] for a in doc["artifacts"])


@pytest.mark.needs_setup("meson", "ninja-build", *MULTILIB)
def test_the_meson_example_builds_with_a_cross_file_and_a_native_file(
        cli: Cli, env: dict[str, str]) -> None:
    run_example(cli, env, EXAMPLES / "meson" / "mesonbench.toml", "--set", "kib=256",
                "--set", "rounds=2")
    doc = exported(cli, env)
    assert_measured(doc, "mesonbench")
    for a in doc["artifacts"]:
        assert {"meson", "cc"} <= set(a["toolchain"]), a["toolchain"]
        assert a["elf"]["mesonbench"]["elf_class"] == (32 if a["abi"] == "i386" else 64)
        # the ABI's flags reached the compiler through -Dc_args, and are recorded
        assert ("-m32" in a["abi_flags"]) == (a["abi"] == "i386"), a["abi_flags"]
        # i386 through the cross file (its [host_machine]), x86_64 natively
        family = "x86" if a["abi"] == "i386" else "x86_64"
        log = Path(a["log"]).read_text()
        assert re.search(rf"(?m)^Host machine cpu family: {family}$", log), log[-1500:]


@pytest.mark.needs_setup(*MULTILIB)
def test_the_prebuilt_pair_runs_as_profile_and_as_command_line(
        cli: Cli, env: dict[str, str], tmp_path: Path) -> None:
    here = copy_example("prebuilt", tmp_path)
    built = subprocess.run(["sh", str(here / "build.sh")], capture_output=True, text=True,
                           check=False)
    assert built.returncode == 0, built.stderr
    run_example(cli, env, here / "crc.toml", "--set", "kib=64", "--set", "rounds=2")
    assert_measured(exported(cli, env), "crc-prebuilt")
    done = cli("run", "--binary", f"i386={here / 'crc-i386'}", "--binary",
               f"x86_64={here / 'crc-x86_64'}", "--metric", "rate:MiB/s:higher=rate: ([0-9.]+)",
               "--check", r"(?m)^checksum: (\S+)$", *ROUNDS, "--", "64", "2", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "output check: identical" in done.stdout


@pytest.mark.needs_apt
@pytest.mark.needs_setup("cmake", *MULTILIB)
def test_the_jq_example_builds_jq_and_oniguruma_from_debian_sources(
        cli: Cli, env: dict[str, str]) -> None:
    run_example(cli, env, EXAMPLES / "jq" / "jq.toml", "--set", "n=2000", timeout=3600)
    doc = exported(cli, env)
    assert_measured(doc, "jq-example")
    for a in doc["artifacts"]:
        assert a["source_package"] == "jq" and "libonig" in json.dumps(a["extra_sources"]), a
        # Static Oniguruma: the program needs no libonig (nor the host's libjq).
        assert not any("onig" in n or "libjq" in n for n in a["elf"]["jq"]["needed"]), a


def test_every_example_directory_has_a_readme_and_a_test() -> None:
    tested = Path(__file__).read_text()
    for d in sorted(p for p in EXAMPLES.iterdir() if p.is_dir()):
        assert (d / "README.md").is_file(), f"examples/{d.name} has no README.md"
        # hello, bzip2 and lz4 run in tests/hostile/test_byo.py.
        if d.name not in {"bzip2", "hello", "lz4"}:
            assert f'"{d.name}"' in tested, f"examples/{d.name} has no test here"



def _without_i386_libraries() -> list[str]:
    """bwrap options for the host as it is, minus every i386 C library, startup file and gcc
    32-bit runtime (libc6-i386, libc6-dev-i386, lib32gcc-*-dev): a host that cannot build or
    load i386 programs, while its kernel still runs them."""
    hide = [Path("/usr/lib32"), *Path("/usr/lib/gcc/x86_64-linux-gnu").glob("*/32"),
            Path("/usr/lib/i386-linux-gnu")]
    opts = ["bwrap", "--dev-bind", "/", "/"]
    for d in hide:
        if d.is_dir() and not d.is_symlink():
            opts += ["--tmpfs", str(d)]
    return opts


@pytest.mark.needs_setup("bubblewrap", *MULTILIB)
def test_a_static_i386_program_runs_where_i386_cannot_be_built(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    if os.uname().machine != "x86_64":
        pytest.skip(f"an x86_64 host runs i386 programs; this is {os.uname().machine}: "
                    "run it on x86_64")
    here = copy_example("prebuilt", tmp_path)
    built = subprocess.run(["sh", str(here / "build.sh")], capture_output=True, text=True,
                           check=False)
    assert built.returncode == 0, built.stderr
    box = [*_without_i386_libraries(), "--", sys.executable, "-m", "abibench"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*box, *args], capture_output=True, text=True, env=cli_env,
                              timeout=600, check=False)

    probe = run("probe", "--json")
    assert probe.returncode == 0, probe.stderr
    i386 = next(a for a in json.loads(probe.stdout)["abis"] if a["abi"] == "i386")
    assert not i386["can_build"] and not i386["can_run"], i386
    done = run("run", "--binary", f"i386={here / 'crc-i386'}", "--binary",
               f"x86_64={here / 'crc-x86_64'}", "--check", r"(?m)^checksum: (\S+)$", *ROUNDS,
               "--", "64", "2")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "not run" not in done.stdout and "output check: identical" in done.stdout, done.stdout
