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


CORPUS_16 = 'corpus = { kind = "corpus", mb = 16 }'


def _with_small_corpus(dest: Path, example: str, *profiles: str) -> Path:
    """examples/EXAMPLE/PROFILE... copied into dest/EXAMPLE with a 1 MiB corpus where they ask
    16, nothing else changed. What these tests assert (which library each build loads, which
    files each level compares, that outputs are identical) does not depend on the input's
    size, and compressing 16 MiB was most of their samples' CPU."""
    here = dest / example
    here.mkdir()
    for name in profiles:
        text = (EXAMPLES / example / name).read_text()
        assert text.count(CORPUS_16) == 1, f"examples/{example}/{name}: its corpus changed"
        (here / name).write_text(text.replace(CORPUS_16, CORPUS_16.replace("16", "1")))
    return here


@pytest.mark.needs_apt
def test_lz4_levels_validate_as_their_profile_says(cli_env: dict[str, str],
                                                  tmp_path: Path) -> None:
    here = _with_small_corpus(tmp_path, "lz4", "lz4.toml")
    r = _run_in(here, cli_env, "run", "./lz4.toml", "--abi", "i386,x86_64",
                "--rounds", "1", "--warmup", "0", "--no-html")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-1500:]
    assert r.stdout.count("output check: identical at every level") == 1  # one curve
    doc = _export(cli_env)
    checks = {(s["workload"], s["target"]): s["check"]
              for s in doc["samples"]}  # type: ignore[attr-defined]
    # -9 compares the compressed file; -1 only the round trip (its bytes differ by ABI).
    assert "out.lz4:" in checks[("lz4-example[level=9]", "i386")]
    assert "out.lz4" not in checks[("lz4-example[level=1]", "i386")]


@pytest.mark.needs_apt
def test_bzip2_with_the_hosts_shared_libbz2_is_warned_about(cli_env: dict[str, str],
                                                            tmp_path: Path) -> None:
    here = _with_small_corpus(tmp_path, "bzip2", "bzip2-shared.toml", "bzip2.toml")
    r = _run_in(here, cli_env, "run", "bzip2-shared.toml", "--abi",
                "i386,x86_64", "--rounds", "1", "--warmup", "0", "--no-html", "--keep-going")
    out = " ".join(r.stdout.split())
    assert "loads the host's" in out and "libbz2.so" in out, r.stdout[-2000:]
    assert r.returncode == 1  # i386 cannot link the shared library's 64-bit objects
    static = _run_in(here, cli_env, "run", "bzip2.toml", "--abi",
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
    # short labels, the provenance once in the legend (analyse/legend.py)
    assert "i386/x86_64 value ratio" in r.stdout and "i386/prebuilt" not in r.stdout, r.stdout
    assert f"i386 = a prebuilt program: {prebuilt['i386']}" in r.stdout, r.stdout
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
], ids=["elf-of-another-abi", "one-program", "abi-twice", "missing-file", "not-executable",
        "a-script", "unknown-abi", "no-abi-named"])
def test_prebuilt_pairs_that_do_not_match_are_refused(refused: Cli, prebuilt: dict[str, Path],
                                                      pair: tuple[str, ...],
                                                      words: tuple[str, ...]) -> None:
    args = []
    for p in pair:
        abi, _, name = p.partition("=")
        args += ["--binary", f"{abi}={prebuilt[name]}" if name in prebuilt else p]
    r = refused("run", *args, "--rounds", "1", "--no-html")
    assert r.returncode == 2, r.stdout[-800:] + r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def _sweep_profile(proj: Path, fixtures: Path, when: str) -> Path:
    """A sweep whose "ptr" value legitimately writes different bytes per ABI (its {abi}), and
    whose "fixed" value writes the same bytes on every ABI."""
    (proj / "metric.c").write_bytes((fixtures / "metric.c").read_bytes())
    prof = proj / "sweep.toml"
    prof.write_text(
        'id = "sweep"\ntitle = "per-sweep validation"\nprimary = "value"\n'
        '[params]\nmode = "fixed"\n[sweep]\nmode = ["fixed", "ptr"]\n'
        '[source]\nfiles = ["metric.c"]\nartifacts = ["metric"]\n'
        '[run]\ncommand = ["sh", "-c", "{bin}/metric 0 && case {mode} in ptr) echo {abi};; '
        '*) echo same;; esac > {work}/out.bin"]\ntimeout = "30s"\n'
        '[validate]\nfiles = ["{work}/out.bin"]\n' + when +
        '[[metric]]\nname = "value"\nparse = { regex = \'(?m)^value: ([0-9.]+)$\' }\n'
        'unit = "units"\nbetter = "higher"\n')
    return prof


def test_validate_differs_per_sweep_value_as_the_profile_says(cli: Cli, tmp_path: Path,
                                                               fixtures: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    args = ("--abi", "i386,x86_64", "--rounds", "1", "--warmup", "0", "--no-html")
    # Without [[validate.when]], "ptr" miscompares: the file differs by ABI.
    prof = _sweep_profile(proj, fixtures, "")
    r = cli("run", str(prof), *args)
    assert r.returncode == 1 and "MISCOMPARE" in r.stdout, r.stdout[-1500:]
    # With it, "ptr" checks only the program's stdout, and "fixed" still checks the file.
    prof = _sweep_profile(proj, fixtures, '[[validate.when]]\nparams = { mode = "ptr" }\n'
                          'files = []\nstdout_match = \'(?m)^checksum: (\\S+)$\'\n')
    r = cli("run", str(prof), *args, "--json")
    assert r.returncode == 0, r.stderr[-1500:]
    checks = {(s["workload"], s["target"]): s["check"] for s in json.loads(r.stdout)["samples"]}
    assert "out.bin:" in checks[("sweep[mode=fixed]", "i386")]
    assert "out.bin" not in checks[("sweep[mode=ptr]", "i386")]


DOCS = Path(__file__).resolve().parents[2] / "docs" / "profile-extensions.md"


def test_every_input_kind_placeholder_and_stdin_is_documented() -> None:
    # A newcomer had only the README and this page: an undocumented kind, key or placeholder
    # is one they cannot use.
    from abibench.workloads.profile import INPUT_KINDS, RESERVED

    text = DOCS.read_text()
    inputs = text.split("### Inputs", 1)[1].split("###", 1)[0]
    for kind, keys in INPUT_KINDS.items():
        (row,) = [ln for ln in inputs.splitlines() if ln.startswith(f"| `{kind}` |")]
        assert all(f"`{k}`" in row for k in keys), row
    placeholders = text.split("### Placeholders", 1)[1].split("###", 1)[0]
    missing = [p for p in sorted(RESERVED) if f"{{{p}}}" not in placeholders]
    assert missing == []
    assert "### Standard input" in text and '`[run] stdin = "PATH"`' in text


@pytest.mark.parametrize(("spec", "words"), [
    ('{ kind = "mp3" }', ("kind 'mp3'", "corpus")),
    ('{ kind = "corpus", megabytes = 5 }', ("megabytes", "mb")),
    ('{ kind = "corpus", mb = 100000 }', ("mb", "4096")),
], ids=["unknown-kind", "unknown-key", "size-out-of-range"])
def test_bad_inputs_are_refused_naming_the_profile(refused: Cli, tmp_path: Path, fixtures: Path,
                                                   spec: str, words: tuple[str, ...]) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    prof = _sweep_profile(proj, fixtures, "")
    prof.write_text(prof.read_text() + f"[inputs]\ndata = {spec}\n")
    r = refused("run", str(prof), "--abi", "i386,x86_64", "--rounds", "1", "--no-html")
    assert r.returncode == 2, (r.stdout[-800:], r.stderr)
    assert r.stderr.count("\n") == 1 and "sweep.toml" in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
