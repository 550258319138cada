"""A profile may only touch its own directories: every path it names is refused when it could
lead outside its root, when it is loaded or, symlinks resolved, right before it is touched."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
DbRows = Callable[..., list[tuple[Any, ...]]]
ProfileWriter = Callable[..., Path]
RUN = ("--abi", "i386,x86_64", "--rounds", "1", "--warmup", "0", "--no-html")


def _one_error(r: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    assert r.returncode == code, r.stdout[-1500:] + r.stderr[-1500:]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("abibench: error:")]
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("entry", ["../../outside/canary.txt", "{work}/../../outside/canary.txt",
                                   "/tmp/x/canary.txt", "{bin}/metric", "{profile_dir}/x"])
def test_validate_files_outside_work_are_refused_at_load(refused: Cli, write_profile: ProfileWriter,
                                                         entry: str) -> None:
    prof = write_profile("vfiles", f'[validate]\nfiles = ["{entry}"]\n')
    r = refused("run", str(prof), *RUN)
    line = _one_error(r, 2, "vfiles.toml:", "files entry")
    assert "work directory" in line


def test_canary_path_through_a_set_parameter_fails_the_target(
        cli: Cli, write_profile: ProfileWriter, canary: Path, stored: DbRows) -> None:
    # The template is fine ({work}/{out}); the value set on the command line climbs out.
    prof = write_profile("viaset", '[params]\nresult = "result.txt"\n[validate]\n'
                         'files = ["{work}/{result}"]\n')
    rel = os.path.relpath(canary, "/")
    r = cli("run", str(prof), *RUN, "--set", f"result=../../../../../../../../{rel}")
    assert r.returncode == 1
    assert "outside" in r.stdout + r.stderr
    rows = stored("SELECT state FROM target_status")
    assert {s for (s,) in rows} == {"failed"}


def test_a_symlink_the_program_leaves_in_work_is_not_followed(
        cli: Cli, write_profile: ProfileWriter, canary: Path) -> None:
    # The program makes {work}/out.txt a link to the canary; abibench deletes validate files
    # before each sample and reads them after: it must do neither through the link.
    command = '["sh", "-c", "ln -sf CANARY {work}/out.txt; {bin}/metric 0"]'
    prof = write_profile("link", '[validate]\nfiles = ["{work}/out.txt"]\n',
                         command=command.replace("CANARY", str(canary)))
    r = cli("run", str(prof), "--abi", "i386,x86_64", "--rounds", "2", "--warmup", "0",
            "--no-html")
    assert r.returncode == 1, r.stdout[-800:]
    assert "outside" in r.stdout + r.stderr


@pytest.mark.parametrize("stdin", ["/etc/passwd", "../outside/canary.txt", "{out}/x"])
def test_stdin_outside_its_roots_is_refused(refused: Cli, write_profile: ProfileWriter,
                                            stdin: str) -> None:
    prof = write_profile("stdin", "", command='["{bin}/metric", "0"]')
    prof.write_text(prof.read_text().replace('timeout = "30s"',
                                             f'timeout = "30s"\nstdin = "{stdin}"'))
    r = refused("run", str(prof), *RUN)
    _one_error(r, 2, "stdin.toml:", "stdin entry")


@pytest.mark.parametrize("artifact", ["../../outside/canary.txt", "/tmp/x", "sub/../../x",
                                      "{work}/x"])
def test_artifacts_outside_out_are_refused_at_load(refused: Cli, write_profile: ProfileWriter,
                                                   artifact: str) -> None:
    prof = write_profile("arts", source=f'[source]\nbuild = ["true"]\n'
                         f'artifacts = ["{artifact}"]\n')
    _one_error(refused("run", str(prof), *RUN), 2, "arts.toml:", "artifacts entry")


def test_source_file_outside_the_profile_is_refused(refused: Cli, write_profile: ProfileWriter,
                                                    profile_dir: Path, canary: Path) -> None:
    prof = write_profile("src1", source='[source]\nfiles = ["../outside/canary.txt"]\n'
                         'artifacts = ["x"]\n')
    _one_error(refused("run", str(prof), *RUN), 2, "src1.toml:", "files entry")
    # A link inside the profile's directory that leads outside is refused too.
    (profile_dir / "sneaky.c").symlink_to(canary)
    prof = write_profile("src2", source='[source]\nfiles = ["sneaky.c"]\nartifacts = ["x"]\n')
    _one_error(refused("run", str(prof), *RUN), 2, "src2.toml:", "outside the profile")


def test_an_artifact_that_is_a_link_is_no_build(cli: Cli, write_profile: ProfileWriter,
                                                canary: Path) -> None:
    # The recipe "builds" a link to a file elsewhere: never copied, never measured.
    prof = write_profile("artlink", source=f'[source]\nbuild = ["ln", "-s", "{canary}", '
                         '"{out}/metric"]\nartifacts = ["metric"]\n')
    r = cli("run", str(prof), *RUN, "--keep-going")
    assert r.returncode == 1
    assert "is a link, not the built file" in r.stdout + r.stderr


def test_the_x86_64_build_cannot_replace_the_i386_one(refused: Cli, write_profile: ProfileWriter,
                                                      cli_env: dict[str, str],
                                                      profile_dir: Path) -> None:
    # The case: an artifact path that climbs out of {out} so both builds write one
    # file. Refused when loaded, so no samples of the wrong binary can exist.
    prof = write_profile("overwrite", source='[source]\nbuild = ["sh", "-c", "{cc} {cflags} '
                         '-o ../../shared metric.c"]\nartifacts = ["../../shared"]\n')
    _one_error(refused("run", str(prof), *RUN), 2, "artifacts entry", "climbs out")
    assert not any(profile_dir.parent.rglob("shared"))


def test_a_program_replaced_during_the_run_is_no_result(
        cli: Cli, write_profile: ProfileWriter, cli_env: dict[str, str], tmp_path: Path) -> None:
    # The program overwrites its own file ({bin}/metric) on its first run. {bin} is the run's
    # own read-only copy (run/pinned.py), not the build cache: the check after that very
    # sample catches it, the target fails, and the run says so. (A cache of its own: the
    # shared one must not hold a corrupted entry if the copy ever failed.)
    cache = tmp_path / "cache"
    env = {**cli_env, "ABIBENCH_CACHE": str(cache)}
    prof = write_profile("selfmod", command='["sh", "-c", "{bin}/metric 0; cp /bin/true '
                         '{bin}/metric; true"]')
    r = cli("run", str(prof), *RUN, env=env)
    assert r.returncode == 1, r.stdout[-1000:]
    assert "changed since it was built, between samples 0 and 1" not in r.stdout + r.stderr
    assert "changed since it was built, by the end of its first sample" in r.stdout + r.stderr
    # The build cache was never written through {bin}: the next run reuses the entry, which
    # is still byte for byte the built program.
    again = cli("run", str(prof), *RUN, "--json", env=env)
    doc = json.loads(again.stdout)
    assert doc["artifacts"] and all(a["cached"] for a in doc["artifacts"])
    for a in doc["artifacts"]:
        (built,) = cache.glob(f"builds/selfmod/{a['abi']}-*/bin/metric")
        assert hashlib.sha256(built.read_bytes()).hexdigest() == a["digests"]["metric"]


@pytest.mark.parametrize("replace_by", ["nothing", "a link to the canary's directory", "a file"],
                         ids=["removed", "link", "file"])
def test_a_program_that_removes_or_replaces_work_fails_its_target(
        cli: Cli, write_profile: ProfileWriter, canary: Path, stored: DbRows,
        replace_by: str) -> None:
    # The first sample removes {work} (and may put something in its place); before the next,
    # abibench deletes the [validate] file canary.txt "in {work}": through a link, that would
    # be the canary. The target fails instead, with the reason, and no traceback.
    then = {"nothing": "", "a link to the canary's directory": f"; ln -s {canary.parent} {{work}}",
            "a file": "; echo x > {work}"}[replace_by]
    command = f'["sh", "-c", "{{bin}}/metric 0 && touch canary.txt && cd / && rm -rf {{work}}{then}"]'
    prof = write_profile("rmwork", '[validate]\nfiles = ["canary.txt"]\n', command=command)
    r = cli("run", str(prof), "--abi", "i386,x86_64", "--rounds", "2", "--warmup", "0",
            "--no-html")
    line = _one_error(r, 1, "the work directory", "was removed or replaced by the program")
    assert "Traceback" not in r.stderr, r.stderr
    assert line.count("\n") == 0
    rows = stored("SELECT state FROM target_status")
    assert {s for (s,) in rows} == {"failed"}


@pytest.mark.parametrize(("key", "extra", "source"), [
    ("close", '[validate]\nclose = { files = ["../outside/canary.txt"], max_diff = 1, '
     'max_fraction = 0.01 }\n', None),
    ("data", "", '[source]\nbuild = ["true"]\ndata = ["../../outside/canary.txt"]\n'
     'artifacts = ["metric"]\n'),
    ("files", '[params]\nk = "1"\n[sweep]\nk = ["1", "2"]\n[validate]\n'
     'stdout_match = \'(?m)^checksum: (\\S+)$\'\n[[validate.when]]\nparams = { k = "2" }\n'
     'files = ["/tmp/outside/canary.txt"]\n', None),
], ids=["validate-close-files", "source-data", "validate-when-files"])
def test_other_paths_outside_their_roots_are_refused_at_load(
        refused: Cli, write_profile: ProfileWriter, stored: DbRows, key: str, extra: str,
        source: str | None) -> None:
    kw = {"source": source} if source else {}
    prof = write_profile("others", extra, **kw)
    _one_error(refused("run", str(prof), *RUN), 2, "others.toml:", f"{key} entry")
    assert stored("SELECT COUNT(*) FROM samples") in ([], [(0,)])


def _bin(cache: Path, abi: str) -> Path:
    (path,) = cache.glob(f"builds/cached/{abi}-*/bin/metric")
    return path


@pytest.mark.parametrize("how", ["other bytes", "the other ABI's build, its digest forged"],
                         ids=["other-bytes", "other-abi-forged-digest"])
def test_a_cache_entry_changed_after_its_build_is_built_again(
        cli: Cli, write_profile: ProfileWriter, cli_env: dict[str, str], tmp_path: Path,
        how: str) -> None:
    # Between two runs the i386 program in the build cache is replaced: by other bytes, or by
    # the x86_64 program with the digest in its record changed to match. The next run must
    # neither trust the entry nor measure the x86_64 program as "i386".
    env = {**cli_env, "ABIBENCH_CACHE": str(tmp_path / "cache")}
    prof = write_profile("cached")
    assert cli("run", str(prof), *RUN, env=env).returncode == 0
    i386 = _bin(tmp_path / "cache", "i386")
    if how == "other bytes":
        i386.write_bytes(i386.read_bytes() + b"\0")
    else:
        i386.write_bytes(_bin(tmp_path / "cache", "x86_64").read_bytes())
        record = i386.parent.parent / "artifact.json"
        art = json.loads(record.read_text())
        art["digests"]["metric"] = hashlib.sha256(i386.read_bytes()).hexdigest()
        record.write_text(json.dumps(art))
    r = cli("run", str(prof), *RUN, "--json", env=env)
    assert r.returncode == 0, r.stderr[-1500:]
    doc = json.loads(r.stdout)
    cached = {a["target"]: a["cached"] for a in doc["artifacts"]}
    assert cached == {"i386": False, "x86_64": True}
    (art,) = [a for a in doc["artifacts"] if a["target"] == "i386"]
    assert art["elf"]["metric"]["elf_class"] == 32
    assert i386.read_bytes()[4] == 1  # ELFCLASS32 again, in the cache too
    assert {s["status"] for s in doc["samples"]} == {"ok"}
