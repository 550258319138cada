"""Bring your own: the example profiles from a relative path, and prebuilt programs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run_in(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abibench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=1200, check=False)


def _export(env: dict[str, str]) -> dict[str, object]:
    r = _run_in(Path("/"), env, "export", "latest")
    doc: dict[str, object] = json.loads(r.stdout)
    return doc


def test_small_c_program_from_a_relative_path(cli_env: dict[str, str]) -> None:
    r = _run_in(EXAMPLES, cli_env, "run", "hello/hello.toml", "--abi", "i386,x86_64",
                "--rounds", "2", "--warmup", "0", "--no-html", "--set", "n=200000")
    assert r.returncode == 0, r.stderr[-1500:]
    assert "output check: identical on i386, x86_64" in r.stdout


@pytest.mark.needs_apt
def test_lz4_levels_validate_as_their_profile_says(cli_env: dict[str, str]) -> None:
    r = _run_in(EXAMPLES / "lz4", cli_env, "run", "./lz4.toml", "--abi", "i386,x86_64",
                "--rounds", "1", "--warmup", "0", "--no-html")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-1500:]
    assert r.stdout.count("output check: identical on i386, x86_64") == 2
    doc = _export(cli_env)
    checks = {(s["workload"], s["target"]): s["check"]
              for s in doc["samples"]}  # type: ignore[attr-defined]
    # -9 compares the compressed file; -1 only the round trip (its bytes differ by ABI).
    assert "out.lz4:" in checks[("lz4-example[level=9]", "i386")]
    assert "out.lz4" not in checks[("lz4-example[level=1]", "i386")]


@pytest.mark.needs_apt
def test_bzip2_with_the_hosts_shared_libbz2_is_warned_about(cli_env: dict[str, str]) -> None:
    r = _run_in(EXAMPLES / "bzip2", cli_env, "run", "bzip2-shared.toml", "--abi",
                "i386,x86_64", "--rounds", "1", "--warmup", "0", "--no-html", "--keep-going")
    out = " ".join(r.stdout.split())
    assert "loads the host's" in out and "libbz2.so" in out, r.stdout[-2000:]
    static = _run_in(EXAMPLES / "bzip2", cli_env, "run", "bzip2.toml", "--abi",
                     "i386,x86_64", "--rounds", "1", "--warmup", "0", "--no-html")
    assert static.returncode == 0, static.stderr[-1500:]
    assert "loads the host's" not in static.stdout


@pytest.fixture(scope="module")
def prebuilt(tmp_path_factory: pytest.TempPathFactory, fixtures: Path) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("prebuilt")
    out = {}
    for abi, flag in (("i386", "-m32"), ("x86_64", "-m64")):
        out[abi] = d / f"metric-{abi}"
        subprocess.run(["gcc", flag, "-O2", "-o", str(out[abi]), str(fixtures / "metric.c")],
                       check=True)
    noexec = d / "noexec"
    noexec.write_bytes(out["i386"].read_bytes())
    out["noexec"] = noexec
    out["text"] = d / "script.sh"
    out["text"].write_text("#!/bin/sh\necho hi\n")
    os.chmod(out["text"], 0o755)
    return out


def test_two_prebuilt_programs_in_one_line(cli: Cli, prebuilt: dict[str, Path]) -> None:
    r = cli("run", "--binary", f"i386={prebuilt['i386']}", "--binary",
            f"x86_64={prebuilt['x86_64']}", "--rounds", "2", "--warmup", "0", "--no-html",
            "--metric", "value:units:higher=value: ([0-9.]+)", "--check-stdout", "--", "0")
    assert r.returncode == 0, r.stderr[-1500:]
    assert "i386/prebuilt/x86_64/prebuilt value ratio" in r.stdout
    assert "output check: identical" in r.stdout


@pytest.mark.parametrize(("pair", "words"), [
    (("i386=x86_64", "x86_64=x86_64"), ("is x86_64 (ELFCLASS64", "not i386")),
    (("i386=i386",), ("two or more programs",)),
    (("i386=i386", "i386=i386"), ("names an ABI twice",)),
    (("i386=/no/such/file", "x86_64=x86_64"), ("does not exist",)),
    (("i386=noexec", "x86_64=x86_64"), ("not executable",)),
    (("i386=text", "x86_64=x86_64"), ("not an ELF program", "not a script")),
    (("sparc=i386", "x86_64=x86_64"), ("unknown ABI 'sparc'",)),
    (("i386", "x86_64=x86_64"), ("write ABI=PATH",)),
])
def test_prebuilt_pairs_that_do_not_match_are_refused(cli: Cli, prebuilt: dict[str, Path],
                                                      pair: tuple[str, ...],
                                                      words: tuple[str, ...]) -> None:
    args = []
    for p in pair:
        abi, _, name = p.partition("=")
        args += ["--binary", f"{abi}={prebuilt[name]}" if name in prebuilt else p]
    r = cli("run", *args, "--rounds", "1", "--no-html")
    assert r.returncode == 2, r.stdout[-800:] + r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
