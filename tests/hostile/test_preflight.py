"""Bad input is refused before build time is spent, with one line and its exit code; what
fails during a run is stored, said once on stderr, and the run marked."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
ProfileWriter = Callable[..., Path]
DbRows = Callable[..., list[tuple[Any, ...]]]


def _error(r: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    assert r.returncode == code, (r.returncode, r.stdout[-1500:], r.stderr[-1500:])
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("abibench: error: "), r.stderr
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
    return r.stderr


def _nothing_built(stored: DbRows) -> None:
    assert stored("SELECT COUNT(*) FROM runs") in ([], [(0,)])


@pytest.mark.parametrize(("args", "words"), [
    (("--set", "nodes=abc"), ("nodes=abc", "whole number")),
    (("--set", "nodes=1e999"), ("whole number",)),
    (("--set", "nosuch=1"), ("nosuch", "no selected workload")),
    (("--set", "nodes"), ("NAME=VALUE",)),
    (("--warmup", "-3"), ("--warmup", "0 or more")),
    (("--max-time", "-5s"), ("--max-time", "bad duration")),
    (("--max-time", "800h"), ("more than 30 days",)),
    (("--rounds", "0"), ("--rounds", "at least 1")),
    (("--precision", "150%"), ("between 0% and 100%",)),
    (("--precision", "nan%"), ("precision",)),
    (("--precision", "lots"), ("'lots' is not a percentage",)),
    (("--min-rounds", "10", "--max-rounds", "3"), ("--max-rounds 3 is below",)),
    (("--abi", "i386,sparc"), ("unknown ABI 'sparc'",)),
    (("--abi", ","), ("empty --abi",)),
], ids=["set-not-a-number", "set-overflows", "set-unknown-name", "set-without-value",
        "warmup-negative", "max-time-negative", "max-time-too-long", "rounds-zero",
        "precision-over-100", "precision-nan", "precision-not-a-percentage", "max-below-min",
        "abi-unknown", "abi-empty"])
def test_bad_values_are_refused_before_any_build(refused: Cli, cli_env: dict[str, str],
                                                 stored: DbRows, args: tuple[str, ...],
                                                 words: tuple[str, ...]) -> None:
    _error(refused("run", "ptrtree", *args), 2, *words)
    _nothing_built(stored)


def test_a_compiler_that_does_not_compile_is_exit_3(refused: Cli, cli_env: dict[str, str],
                                                     stored: DbRows) -> None:
    err = _error(refused("run", "ptrtree", "--cc", "/bin/false"), 3, "/bin/false",
                 "cannot compile a test program")
    assert "CompletedProcess" not in err and "<" not in err  # no Python repr
    _error(refused("run", "ptrtree", "--cc", "no-such-cc"), 3, "'no-such-cc' not found")
    _nothing_built(stored)


def test_a_missing_program_is_found_before_building(refused: Cli, write_profile: ProfileWriter,
                                                    shared_cache: Path, stored: DbRows,
                                                    cli_env: dict[str, str]) -> None:
    prof = write_profile("noprog", '[run.x]\n', command='["no-such-program-abibench", "x"]')
    prof.write_text(prof.read_text().replace("[run.x]\n", ""))
    _error(refused("run", str(prof), "--abi", "i386,x86_64"), 3, "no-such-program-abibench",
           "not installed")
    _nothing_built(stored)
    setup = write_profile("nosetup")
    setup.write_text(setup.read_text().replace('timeout = "30s"',
                                               'timeout = "30s"\nsetup = ["no-such-setup"]'))
    _error(refused("run", str(setup), "--abi", "x86_64"), 3, "setup starts 'no-such-setup'")


@pytest.mark.parametrize("where", ["file/report.md", "dir"])
def test_report_outputs_are_checked_before_the_run(refused: Cli, tmp_path: Path, stored: DbRows,
                                                   cli_env: dict[str, str], where: str) -> None:
    (tmp_path / "file").write_text("a regular file, not a directory")
    (tmp_path / "dir").mkdir()
    _error(refused("run", "ptrtree", "--report", str(tmp_path / where)), 2, "report")
    _error(refused("run", "ptrtree", "--html", str(tmp_path / where)), 2)
    _nothing_built(stored)


def test_run_report_into_a_missing_directory_is_created(cli: Cli, write_profile: ProfileWriter,
                                                        tmp_path: Path) -> None:
    # The case 9: a traceback after the run was stored. The directory is made instead.
    prof = write_profile("reported")
    md = tmp_path / "new" / "sub" / "report.md"
    r = cli("run", str(prof), "--abi", "i386,x86_64", "--rounds", "1", "--warmup", "0",
            "--no-html", "--report", str(md))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-1500:]
    assert md.is_file() and "hostile reported" in md.read_text()


def test_export_into_a_missing_directory_is_created_or_refused(cli: Cli, tmp_path: Path,
                                                               make_doc: Callable[..., dict[
                                                                   str, object]]) -> None:
    f = tmp_path / "a.json"
    f.write_text(json.dumps(make_doc()))
    assert cli("import", str(f)).returncode == 0
    ok = cli("export", "latest", "-o", str(tmp_path / "new" / "dir" / "x.json"))
    assert ok.returncode == 0 and (tmp_path / "new" / "dir" / "x.json").is_file()
    (tmp_path / "plain").write_text("x")
    _error(cli("export", "latest", "-o", str(tmp_path / "plain" / "x.json")), 2, "cannot write")


def test_duplicate_workload_ids_are_refused_naming_both(refused: Cli, write_profile: ProfileWriter,
                                                        cli_env: dict[str, str],
                                                        stored: DbRows) -> None:
    a = write_profile("one", wid="same")
    b = write_profile("two", wid="same")
    _error(refused("run", str(a), str(b)), 2, "'same'", "one.toml", "two.toml")
    _error(refused("run", "ptrtree", "ptrtree"), 2, "'ptrtree'")
    # A copy of a built-in under its own id, run with the built-in, is refused too.
    copy = write_profile("ptrcopy", wid="ptrtree")
    _error(refused("run", "ptrtree", str(copy)), 2, "'ptrtree'", "ptrcopy.toml")
    _nothing_built(stored)


def test_a_relative_profile_path_works_from_any_directory(cli_env: dict[str, str],
                                                          write_profile: ProfileWriter,
                                                          tmp_path: Path) -> None:
    import sys

    prof = write_profile("relative")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = subprocess.run([sys.executable, "-m", "abibench", "run", "../proj/relative.toml",
                        "--abi", "i386,x86_64", "--rounds", "1", "--warmup", "0", "--no-html"],
                       cwd=elsewhere, env=cli_env, capture_output=True, text=True, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stderr[-1500:]
    assert prof.is_file()


def test_a_run_where_every_target_fails_is_failed_and_says_so(
        cli: Cli, write_profile: ProfileWriter, stored: DbRows) -> None:
    prof = write_profile("allcrash", command='["{bin}/crash"]',
                         source='[source]\nfiles = ["crash.c"]\nartifacts = ["crash"]\n')
    r = cli("run", str(prof), "--abi", "i386,x86_64", "--rounds", "1", "--no-html")
    assert r.returncode == 1
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("abibench: error:")]
    assert len(errors) == 1 and "killed by SIGSEGV" in errors[0], r.stderr
    ((status,),) = stored("SELECT status FROM runs")
    assert status == "failed"


def test_one_abi_failing_to_build_measures_nothing_unless_keep_going(
        cli: Cli, write_profile: ProfileWriter, stored: DbRows, profile_dir: Path,
        cli_env: dict[str, str]) -> None:
    # A recipe that cannot build for i386; the sweep's second value must not retry it. Its
    # attempts are counted by a side effect outside the build tree, which only an unconfined
    # build can leave (obtain/buildbox.py): this one runs without the sandbox.
    attempts = profile_dir.parent / "attempts"
    unconfined = {**cli_env, "ABIBENCH_BUILD_SANDBOX": "off"}
    prof = write_profile("halfbuild", '[params]\nk = "1"\n[sweep]\nk = ["1", "2"]\n',
                         source='[source]\nfiles = ["metric.c"]\nbuild = ["sh", "-c", "echo {abi} >> '
                         f'{attempts}; '
                         'case {abi} in i386) exit 1;; esac; {cc} {cflags} -o {out}/metric '
                         'metric.c"]\nartifacts = ["metric"]\n')
    r = cli("run", str(prof), "--abi", "i386,x86_64", "--rounds", "1", "--warmup", "0",
            "--no-html", env=unconfined)
    assert r.returncode == 1
    assert "--keep-going measures the others" in " ".join(r.stdout.split())
    assert stored("SELECT COUNT(*) FROM samples") == [(0,)]
    assert attempts.read_text().split().count("i386") == 1  # not once per sweep value
    kept = cli("run", str(prof), "--abi", "i386,x86_64", "--rounds", "1", "--warmup", "0",
               "--no-html", "--keep-going", env=unconfined)
    assert kept.returncode == 1
    assert stored("SELECT COUNT(*) FROM samples WHERE target='x86_64' AND status='ok'") == [(2,)]


def test_no_validate_message_only_when_true(cli: Cli, write_profile: ProfileWriter) -> None:
    prof = write_profile("hasval", '[validate]\nstdout_match = \'(?m)^checksum: (\\S+)$\'\n',
                         command='["{bin}/crash"]',
                         source='[source]\nfiles = ["crash.c"]\nartifacts = ["crash"]\n')
    r = cli("run", str(prof), "--abi", "i386,x86_64", "--rounds", "1", "--no-html")
    assert r.returncode == 1
    assert "no sample succeeded" in r.stdout
    assert "the profile has no [validate]" not in r.stdout
