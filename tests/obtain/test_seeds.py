"""The seed workloads: their profiles, and one cheap source package built end to end.

The end-to-end test builds Debian's gzip for i386, x86_64 and x32 from `apt-get source` (about a
minute per ABI on 2 cores) and runs gzip and gunzip on a 2 MiB corpus. The full seeds suite is a
manual benchmark: bench/seeds.sh.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from abibench.paths import PROFILES_DIR
from abibench.workloads.profile import load_profile, load_workloads

Cli = Callable[..., subprocess.CompletedProcess[str]]


SEEDS = ["openssl-speed", "openssl-speed-noasm", "gzip", "gzip-asm", "gunzip",
         "sqlite-speedtest1", "xz", "unxz", "zstd", "unzstd", "flac-encode", "flac-decode",
         "lua", "povray", "lame-encode", "vorbis-encode"]
# What a seed recipe may vary per ABI: the flags and autoconf's host triplet. {abi} is allowed
# only where the build system needs a target name of its own (OpenSSL's Configure).
PER_ABI = {"cflags", "host_triplet", "abi"}


@cache
def _apt_source_problem() -> str | None:
    if shutil.which("apt-cache") is None or shutil.which("dpkg-source") is None:
        return "needs apt-cache and dpkg-source (Debian, dpkg-dev)"
    out = subprocess.run(["apt-cache", "showsrc", "gzip"], capture_output=True, text=True,
                         check=False).stdout
    if "Package: gzip" not in out:
        return "no deb-src entries: bash setup.sh adds them"
    return None


needs_apt_source = pytest.mark.skipif(_apt_source_problem() is not None,
                                      reason=str(_apt_source_problem()))


def test_every_seed_profile_loads_pinned_and_in_the_seeds_suite() -> None:
    for name in SEEDS:
        wl = load_profile(PROFILES_DIR / f"{name}.toml")
        assert "seeds" in wl.suites, name
        assert wl.source.debian and wl.source.version, f"{name}: pin a Debian source version"
        assert wl.description and wl.seeds is not None
    suite = {w.id for w in load_workloads(None, "seeds")}
    assert set(SEEDS) <= suite


def test_seed_recipes_differ_per_abi_only_by_flags_and_triplet() -> None:
    for name in SEEDS:
        wl = load_profile(PROFILES_DIR / f"{name}.toml")
        used = set(re.findall(r"\{([a-z_][a-z0-9_]*)\}", " ".join(wl.source.build)))
        per_abi = used & {"cc", "cflags", "host_triplet", "abi", "out", "jobs", "src"}
        assert per_abi - {"cc", "out", "jobs", "src"} <= PER_ABI, name
        if "abi" in used:
            assert name.startswith("openssl"), f"{name}: per-ABI recipe branches need a reason"
        assert "cflags" in used, f"{name}: the build must use {{cflags}}"


def test_every_seed_workload_validates_its_output() -> None:
    for name in SEEDS:
        wl = load_profile(PROFILES_DIR / f"{name}.toml")
        assert wl.stdout_match or wl.stdout_digest or wl.validate_files or wl.close, name


def _tiny(src: str, dest: Path, **replace: str) -> Path:
    text = (PROFILES_DIR / f"{src}.toml").read_text()
    text = re.sub(r"mb = \d+", "mb = 2", text)
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    path = dest / f"{src}.toml"
    path.write_text(text)
    return path


@needs_apt_source
def test_gzip_and_gunzip_build_once_per_abi_run_validate_and_reuse(cli: Cli,
                                                                    tmp_path: Path) -> None:
    gz, gunz = _tiny("gzip", tmp_path), _tiny("gunzip", tmp_path)
    args = ["run", str(gz), str(gunz), "--abi", "i386,x86_64,x32", "--rounds", "2",
            "--warmup", "0", "--no-html"]
    first = cli(*args, timeout=1800)
    assert first.returncode == 0, first.stderr[-2000:] + first.stdout[-2000:]
    assert "sizes of every artifact" in first.stdout
    assert re.search(r"x32 \(not run\)", first.stdout)
    doc = json.loads(cli("export").stdout)
    arts = {(a["workload"], a["target"]): a for a in doc["artifacts"]}
    assert set(arts) == {(w, t) for w in ("gzip", "gunzip") for t in ("i386", "x86_64", "x32")}
    for a in arts.values():
        assert (a["source_package"], a["source_version"]) == ("gzip", "1.12-1")
        assert a["sizes"]["gzip"]["stripped"] > 0
        assert " ".join(a["abi_flags"]) in {"-m32", "-m64", "-mx32"}
    # gunzip uses gzip's build: one build per ABI, and the other workload reuses it
    for target in ("i386", "x86_64", "x32"):
        assert arts[("gunzip", target)]["bin_dir"] == arts[("gzip", target)]["bin_dir"]
        assert arts[("gunzip", target)]["cached"]
    states = {(s["workload"], s["target"]): s["state"] for s in doc["target_status"]}
    assert states[("gzip", "x32")] == "not run"
    for wl in ("gzip", "gunzip"):
        checks = {s["check"] for s in doc["samples"] if s["workload"] == wl}
        assert len(checks) == 1 and None not in checks, (wl, checks)
        assert {s["target"] for s in doc["samples"] if s["workload"] == wl} == {"i386", "x86_64"}
    second = cli(*args, timeout=1800)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "(builds: 0 new, 6 reused from cache)" in second.stdout


@needs_apt_source
def test_unavailable_source_version_is_one_clear_error(cli: Cli, tmp_path: Path) -> None:
    bad = _tiny("gzip", tmp_path, **{'version = "1.12-1"': 'version = "0.0-0abibench"'})
    proc = cli("run", str(bad), "--abi", "i386,x86_64", "--rounds", "1", "--no-html")
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if "error" in ln]
    assert len(lines) == 1, proc.stderr
    assert "gzip" in lines[0] and "0.0-0abibench" in lines[0] and "1.12-1" in lines[0]
    assert json.loads(cli("runs", "--json").stdout) == []  # refused before the run existed


FAIL_I386 = "test {abi} != i386 || { echo no i386 today; exit 7; }; "


def test_a_build_failing_for_one_abi_fails_that_target_only(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "prog.c").write_text(
        '#include <stdio.h>\nint main(void) { puts("checksum: 42"); return 0; }\n')
    (tmp_path / "flaky.toml").write_text('''id = "flaky"
title = "fails to build for i386"
suites = []
[source]
files = ["prog.c"]
build = ["sh", "-c", "''' + FAIL_I386 + '''{cc} {cflags} -o {out}/prog prog.c"]
artifacts = ["prog"]
[run]
command = ["{bin}/prog"]
[validate]
stdout_match = '(?m)^checksum: (\\d+)$'
''')
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "prog.c").write_text((tmp_path / "prog.c").read_text())
    (tmp_path / "other" / "fine.toml").write_text(
        (tmp_path / "flaky.toml").read_text().replace('"flaky"', '"fine"')
        .replace(FAIL_I386, ""))
    # --keep-going: the other ABI of the workload is measured too (by default it is not).
    proc = cli("run", str(tmp_path / "flaky.toml"), str(tmp_path / "other" / "fine.toml"),
               "--abi", "i386,x86_64", "--rounds", "2", "--warmup", "0", "--no-html",
               "--keep-going")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(cli("export").stdout)
    states = {(s["workload"], s["target"]): s for s in doc["target_status"]}
    failed = states[("flaky", "i386")]
    assert failed["state"] == "failed"
    log = re.search(r"log: (\S+)", failed["reason"])
    assert log and "no i386 today" in Path(log.group(1)).read_text()
    ran = {(s["workload"], s["target"]) for s in doc["samples"] if s["status"] == "ok"}
    assert {("flaky", "x86_64"), ("fine", "i386"), ("fine", "x86_64")} <= ran


def test_size_rows_list_every_artifact_once_per_build_with_the_64_bit_factor() -> None:
    from abibench.analyse.sizes import size_rows
    from abibench.records import Artifact, TargetStatus

    def art(wl: str, target: str, file: int, stripped: int, bin_dir: str) -> dict[str, object]:
        return {"workload": wl, "target": target, "bin_dir": bin_dir,
                "sizes": {"flac": {"file": file, "text": file // 2, "data": 10, "bss": 5,
                                   "stripped": stripped},
                          "metaflac": {"file": 100, "text": 50, "data": 1, "bss": 1,
                                       "stripped": 80}}}

    arts = [Artifact.from_dict(art(w, t, f, s, f"/b/{t}")) for w in ("flac-encode", "flac-decode")
            for t, f, s in (("i386", 1000, 800), ("x86_64", 1100, 1000), ("x32", 900, 700))]
    rows = size_rows(arts, [TargetStatus("flac-encode", "x32", "not run", "cannot run here")])
    assert len(rows) == 6  # two artifacts x three ABIs; flac-decode shares flac-encode's build
    assert all(r.workloads == ("flac-encode", "flac-decode") for r in rows)
    by = {(r.artifact, r.target): r for r in rows}
    assert by[("flac", "i386")].file_larger_pct == 10.0  # x86_64 is 10% larger than i386
    assert by[("flac", "i386")].stripped_larger_pct == 25.0
    assert by[("flac", "x32")].state == "not run"
    assert by[("flac", "x32")].file_larger_pct == pytest.approx(100 * (1100 / 900 - 1), abs=0.01)
    assert by[("flac", "x86_64")].file_larger_pct is None
    assert by[("metaflac", "i386")].file_larger_pct == 0.0


def test_close_validation_gives_one_check_within_tolerance_and_another_outside(
        tmp_path: Path) -> None:
    from abibench.run.launcher import RawResult
    from abibench.run.samples import check_value

    wl = load_profile(PROFILES_DIR / "povray.toml")
    assert wl.close is not None and wl.close.max_diff == 2
    raw = RawResult("exited", 0, 0, 1.0, 1.0, 0.0, 1000, 0, 0, 0, "d" * 64, "", "")
    refs: dict[str, bytes] = {}
    template = "{work}/render.bmp"
    checks = []
    for name, data in (("a", bytes(1000)), ("b", bytes([1]) + bytes(999)),
                       ("c", bytes([1] * 150) + bytes(850)), ("d", bytes([9]) + bytes(999))):
        (tmp_path / name).mkdir()
        f = tmp_path / name / "render.bmp"
        f.write_bytes(data)
        checks.append(check_value(wl, raw, [], [(template, f)], refs))
    assert checks[0] == checks[1]  # one byte one level off: the same output
    assert checks[2] != checks[0] and "in 15.00% of bytes" in str(checks[2])  # too many bytes
    assert checks[3] != checks[0] and "up to 9" in str(checks[3])  # one byte too far off
    with pytest.raises(Exception, match="not written"):
        check_value(wl, raw, [], [(template, tmp_path / "missing.bmp")], refs)


def test_close_spec_errors_point_at_the_line(tmp_path: Path) -> None:
    from abibench.errors import ProfileError

    text = (PROFILES_DIR / "povray.toml").read_text().replace("max_diff = 2", "max_diff = -1")
    bad = tmp_path / "povray.toml"
    bad.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("close ="))
    with pytest.raises(ProfileError, match=rf"povray.toml:{line}: close = .*max_diff"):
        load_profile(bad)


def test_size_rows_keep_debian_programs_of_different_sysroots_apart() -> None:
    from abibench.analyse.sizes import size_rows
    from abibench.records import Artifact

    def art(workload: str, target: str, program: str, file: int) -> Artifact:
        return Artifact(workload, target.split("/")[0], provenance="debian", bin_dir="/usr/bin",
                        files=(program,), sysroot=f"/cache/sysroots/{workload}-{target[:4]}",
                        sizes={program: {"file": file, "text": file // 2, "data": 1, "bss": 1,
                                         "stripped": file}})

    arts = [art(w, t, p, f) for w, p, f in (("deb-lame", "lame", 100), ("deb-oggenc", "oggenc", 70))
            for t in ("i386/debian", "x86_64/debian")]
    rows = size_rows(arts)
    assert {(r.workloads, r.artifact) for r in rows} == {(("deb-lame",), "lame"),
                                                         (("deb-oggenc",), "oggenc")}
