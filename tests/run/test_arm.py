"""armhf and aarch64 on this x86 host: cross-built, checked by their ELF headers, run under
qemu-user through the launcher, validated against i386 and x86_64, and counted exactly.

setup.sh installs the cross compilers and qemu-user; these tests are the proof that a fresh
machine gets all four ABIs from it. Sizes are small: the whole module takes well under a minute
apart from the Lua build from Debian's source.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from abibench.abi import ABIS, check_artifact
from abibench.errors import EXIT_HOST, AbiMismatchError
from abibench.obtain import qemuplugin
from abibench.probe.abis import probe_abi
from abibench.probe.emulator import find_emulator

Cli = Callable[..., subprocess.CompletedProcess[str]]

SRC = "int main(void) { return (int)sizeof(void *); }\n"
SMALL = ["--set", "nodes=20000", "--set", "steps=20000"]
ARM_TARGETS = ("armhf", "aarch64")
ALL = "i386,x86_64,armhf,aarch64"


def _cross(tmp_path: Path, cc: str, *flags: str) -> Path:
    src = tmp_path / "t.c"
    src.write_text(SRC)
    out = tmp_path / f"t{'-'.join([cc, *flags])}"
    subprocess.run([cc, *flags, "-O2", "-o", str(out), str(src)], check=True)
    return out


def test_cross_builds_are_told_apart_by_machine_and_float_abi(tmp_path: Path) -> None:
    hard = _cross(tmp_path, "arm-linux-gnueabihf-gcc", "-marm", "-mfloat-abi=hard")
    info = check_artifact(hard, ABIS["armhf"])
    assert (info.elf_class, info.machine, info.flags & 0xFF000400) == (32, "EM_ARM", 0x05000400)
    assert info.interpreter == ABIS["armhf"].loader
    # softfp keeps the hard-float registers out of calls: another ABI (the hard-float libc
    # refuses to link it, so the object file shows it), refused as armhf
    soft = _cross(tmp_path, "arm-linux-gnueabihf-gcc", "-c", "-marm", "-mfloat-abi=softfp")
    with pytest.raises(AbiMismatchError, match=r"built for armhf .*e_flags"):
        check_artifact(soft, ABIS["armhf"])
    a64 = _cross(tmp_path, "aarch64-linux-gnu-gcc")
    assert check_artifact(a64, ABIS["aarch64"]).machine == "EM_AARCH64"
    with pytest.raises(AbiMismatchError, match="aarch64"):
        check_artifact(a64, ABIS["armhf"])


def test_probe_runs_arm_under_the_emulator_with_a_root_of_its_own(tmp_path: Path) -> None:
    for name, size in (("armhf", 4), ("aarch64", 8)):
        st = probe_abi(ABIS[name], tmp_path, cache_root=tmp_path / "cache")
        assert st.can_build and st.can_run and st.emulator is not None, st
        root = Path(st.emulator.root)
        # the guest's loader reads an empty cache, never the host's x86 one
        assert (root / "etc" / "ld.so.cache").stat().st_size == 0
        assert (root / "lib").resolve() == Path(f"/usr/{ABIS[name].gnu_triplet}/lib")
        exe = _cross(tmp_path, ABIS[name].cc_prefix + "gcc", *ABIS[name].cflags)
        assert subprocess.run(st.emulator.wrap([str(exe)]), check=False).returncode == size


def _run(cli: Cli, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    proc = cli("run", *args, "--no-html")
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    doc = json.loads(cli("export").stdout)
    return proc, doc


def _counts(doc: dict[str, object]) -> dict[tuple[str, str], int]:
    samples = doc["samples"]
    assert isinstance(samples, list)
    return {(s["workload"], s["target"]): s["instructions"] for s in samples
            if s["kind"] == "counters"}


def test_four_abis_run_validate_and_count_exactly(cli: Cli) -> None:
    args = ("ptrtree", "nbody", "--abi", ALL, "--rounds", "2", "--warmup", "0", "--counters",
            *SMALL)
    first, doc = _run(cli, *args)
    samples = doc["samples"]
    assert isinstance(samples, list)
    timed = [s for s in samples if s["kind"] == "timed"]
    assert {s["target"] for s in timed} == set(ALL.split(","))
    for s in samples:
        assert s["emulated"] == (s["target"] in ARM_TARGETS), s
        assert s["status"] == "ok", s
    # the emulator's own peak, three runs of the empty program per emulated target
    base = [(s["workload"], s["target"]) for s in samples if s["kind"] == "baseline"]
    assert sorted(set(base)) == sorted((w, t) for w in ("ptrtree", "nbody") for t in ARM_TARGETS)
    host = doc["host"]
    assert isinstance(host, dict)
    assert host["emulators"]["armhf"].startswith("qemu-arm version ")
    assert host["emulators"]["aarch64"].startswith("qemu-aarch64 version ")
    # one output across all four ABIs, timed and counting runs alike
    for wl in ("ptrtree", "nbody"):
        checks = {s["check"] for s in samples if s["workload"] == wl and s["kind"] != "baseline"}
        assert len(checks) == 1 and None not in checks, (wl, checks)
    assert first.stdout.count("output check: identical on aarch64, armhf, i386, x86_64") == 2
    # no speed verdict involves an emulated target; the instruction counts are compared
    for line in first.stdout.splitlines():
        if re.search(r"(query_rate|steps_per_s|\w+_rate) ratio", line):
            assert "armhf" not in line and "aarch64" not in line, line
    assert "emulated: measures QEMU, not an ARM CPU" in first.stdout
    assert re.search(r"aarch64 executes [\d.]+% (fewer|more) instructions than armhf \[exact\]",
                     first.stdout)
    assert re.search(r"x86_64 executes [\d.]+% (fewer|more) instructions than i386 \[exact\]",
                     first.stdout)
    report = json.loads(cli("report", "--json").stdout)
    for w in report["workloads"]:
        for c in w["comparisons"]:
            assert c["a"] not in ARM_TARGETS and c["b"] not in ARM_TARGETS, c
        rows = {t["label"]: t for t in w["targets"]}
        for t in ARM_TARGETS:
            assert rows[t]["emulated"] and rows[t]["counter"] == "QEMU plugin"
            assert 0 < rows[t]["net_peak_rss_kb"] < rows[t]["peak_rss_kb"]
        assert rows["x86_64"]["counter"] == "valgrind"
    counts = _counts(doc)
    assert len(counts) == 8 and all(n > 1_000_000 for n in counts.values())
    # exact: the two counted runs of every target executed the very same instructions
    profiles = [s["counters"] for s in samples if s["kind"] == "counters"]
    assert len(profiles) == 8
    for p in profiles:
        assert len(p["attempts"]) == 2 and len(set(p["attempts"])) == 1 and p["agreed"], p
    # and another run of the same builds counts the same, to within a few instructions (the
    # layout of a new process can move a string's alignment, which string functions notice)
    _, again = _run(cli, *args[:4], "--rounds", "1", *args[6:])
    for key, n in _counts(again).items():
        assert abs(n - counts[key]) <= 1e-5 * n, (key, n, counts[key])


def test_ptrtree_net_memory_shows_lp64_pointers_under_the_emulator(cli: Cli) -> None:
    proc, _ = _run(cli, "ptrtree", "--abi", "armhf,aarch64", "--rounds", "3", "--warmup", "0",
                   "--set", "nodes=100000", "--set", "queries=1000")
    report = json.loads(cli("report", "--json").stdout)
    (w,) = report["workloads"]
    rows = {t["label"]: t for t in w["targets"]}
    # 20-byte nodes in 24-byte chunks against 32-byte nodes in 48-byte chunks, plus buckets
    assert rows["aarch64"]["net_peak_rss_kb"] > 1.5 * rows["armhf"]["net_peak_rss_kb"]
    (mem,) = w["emulated_memory"]
    assert (mem["a"], mem["b"]) == ("armhf", "aarch64") and mem["ratio"] < 0.7
    assert "[emulated estimate]" in mem["verdict"] and "armhf is" in mem["verdict"]
    assert not w["comparisons"]  # two emulated targets: nothing compared in time
    assert "peak RSS net of the emulator" in proc.stdout


def test_lua_from_debian_source_cross_builds_and_matches_x86(cli: Cli) -> None:
    if "Package: lua5.4" not in subprocess.run(["apt-cache", "showsrc", "lua5.4"],
                                              capture_output=True, text=True).stdout:
        pytest.skip("no deb-src entries: bash setup.sh adds them")
    proc, doc = _run(cli, "lua", "--abi", ALL, "--rounds", "1", "--warmup", "0",
                     "--set", "bt_depth=6", "--set", "nbody_steps=2000", "--set", "spectral_n=20",
                     "--set", "fannkuch_n=6", "--set", "string_rounds=5")
    assert "output check: identical on aarch64, armhf, i386, x86_64" in proc.stdout
    arts = doc["artifacts"]
    assert isinstance(arts, list)
    by = {a["target"]: a for a in arts}
    assert by["armhf"]["elf"]["lua"]["machine"] == "EM_ARM"
    assert by["aarch64"]["elf"]["lua"]["machine"] == "EM_AARCH64"
    assert by["armhf"]["compiler"].endswith("arm-linux-gnueabihf-gcc")
    for a in arts:
        assert a["source_version"] == "5.4.4-3+deb12u1"
        assert a["sizes"]["lua"]["stripped"] > 0  # the cross binutils strip ARM files
    assert "armhf (emulated)" in proc.stdout and "aarch64 (emulated)" in proc.stdout


# --------------------------------------------------------------------------- bad input


def _path_with(tmp_path: Path, *programs: str) -> str:
    """A PATH that holds only these programs (linked from the host's)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for p in programs:
        (bin_dir / p).symlink_to(f"/usr/bin/{p}")
    return str(bin_dir)


def test_arm_without_a_cross_compiler_is_exit_3_with_the_apt_command(
        cli: Cli, cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "PATH": _path_with(tmp_path)}
    proc = cli("run", "ptrtree", "--abi", "armhf", "--rounds", "1", "--no-html", env=env)
    assert proc.returncode == EXIT_HOST, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("abibench: error: --abi armhf: no armhf cross compiler")
    assert line.endswith("apt-get install gcc-arm-linux-gnueabihf libc6-dev-armhf-cross")
    assert json.loads(cli("runs", "--json").stdout) == []  # refused before a run existed


def test_arm_without_qemu_is_exit_3_naming_the_package(
        cli: Cli, cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "PATH": _path_with(tmp_path, "aarch64-linux-gnu-gcc")}
    proc = cli("run", "ptrtree", "--abi", "aarch64", "--rounds", "1", "--no-html", env=env)
    assert proc.returncode == EXIT_HOST, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "qemu-aarch64 is not installed" in line and line.endswith("apt-get install qemu-user")
    assert find_emulator(ABIS["x86_64"], tmp_path) == "abibench does not emulate x86_64"


def test_an_unfetchable_plugin_header_skips_the_counts_says_so_and_exits_3(
        cli: Cli, cli_env: dict[str, str], tmp_path: Path) -> None:
    # apt without sources: `apt-get source` cannot fetch qemu's; a cold cache has no header
    lists = tmp_path / "lists"
    (lists / "partial").mkdir(parents=True)
    conf = tmp_path / "apt.conf"
    conf.write_text(f'Dir::Etc::sourcelist "/dev/null";\nDir::Etc::sourceparts "{tmp_path}/no";\n'
                    f'Dir::State::lists "{lists}";\nDir::Cache::pkgcache "";\n'
                    'Dir::Cache::srcpkgcache "";\n')
    env = {**cli_env, "APT_CONFIG": str(conf), "ABIBENCH_CACHE": str(tmp_path / "cache")}
    proc = cli("run", "ptrtree", "--abi", "armhf,aarch64", "--rounds", "1", "--warmup", "0",
               "--counters", "--no-html", "--set", "nodes=20000", env=env)
    assert proc.returncode == EXIT_HOST, proc.stderr[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("abibench: error:")]
    assert len(errors) == 1 and "instruction counts skipped" in errors[0]
    assert "deb-src" in errors[0]
    doc = json.loads(cli("export", env=env).stdout)
    kinds = {(s["target"], s["kind"]) for s in doc["samples"]}
    assert ("armhf", "timed") in kinds and ("aarch64", "timed") in kinds  # measured anyway
    assert not any(k == "counters" for _, k in kinds)
    assert sum("instruction counts skipped" in w["message"] for w in doc["warnings"]) == 2


def test_the_header_of_a_version_the_archive_lacks_is_a_host_error(tmp_path: Path) -> None:
    with pytest.raises(qemuplugin.PluginError, match=r"qemu=1:0\.0-0abibench") as exc:
        qemuplugin.header(tmp_path, "1:0.0-0abibench")
    assert exc.value.exit_code == EXIT_HOST


def test_a_count_file_is_read_only_when_whole(tmp_path: Path) -> None:
    f = tmp_path / "count"
    f.write_text("insncount 1 insns=12345 vcpus=1 target=arm later=ignored\n")
    assert qemuplugin.read_count(f) == 12345
    for bad in ("insncount 1 insns=12345", "insncount 2 insns=1\n", "insncount 1 insns=x\n",
                "insncount 1 insns=1\ninsncount 1 insns=2\n"):
        f.write_text(bad)
        assert qemuplugin.read_count(f) is None, bad
    assert qemuplugin.read_count(tmp_path / "missing") is None


def test_setup_steps_and_shell_commands_reach_the_emulator_and_are_counted(
        cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "twice.c").write_text(
        '#include <inttypes.h>\n#include <stdio.h>\n#include <stdlib.h>\n'
        'int main(int argc, char **argv) {\n'
        '  uint64_t s = 0, n = argc > 1 ? strtoull(argv[1], 0, 10) : 1000;\n'
        '  for (uint64_t i = 0; i < n; i++) s += i * i % 7;\n'
        '  printf("checksum: %" PRIu64 "\\n", s);\n'
        '  return 0;\n}\n')
    (tmp_path / "twice.toml").write_text('''id = "twice"
title = "a shell command running the built program twice, after a setup step that runs it"
suites = []
[source]
files = ["twice.c"]
build = ["sh", "-c", "{cc} {cflags} -o {out}/twice twice.c"]
artifacts = ["twice"]
[run]
setup = ["sh", "-c", "{bin}/twice 10 > {work}/setup.txt"]
command = ["sh", "-c", "cat {work}/setup.txt && {bin}/twice 100000 && {bin}/twice 100000"]
[validate]
stdout_match = '(?s)(checksum: .*)'
''')
    proc, doc = _run(cli, str(tmp_path / "twice.toml"), "--abi", "x86_64,armhf,aarch64",
                     "--rounds", "1", "--warmup", "0", "--counters")
    assert "output check: identical on aarch64, armhf, x86_64" in proc.stdout
    samples = doc["samples"]
    assert isinstance(samples, list)
    counted = {s["target"]: s for s in samples if s["kind"] == "counters"}
    for t in ARM_TARGETS:
        p = counted[t]["counters"]
        # both processes of the shell command counted, and both counted runs identical
        assert counted[t]["emulated"] and p["agreed"] and len(set(p["attempts"])) == 1
        assert counted[t]["instructions"] > 2 * 100000
    assert re.search(r"aarch64 executes [\d.]+% (fewer|more) instructions than armhf \[exact\]",
                     proc.stdout)


def test_debian_provenance_reason_names_what_is_true() -> None:
    """Debian has armhf and arm64 packages: a target left out of --provenance debian because it
    would be emulated says that, and how to count it here; x32 has none in the main archive."""
    from abibench.probe.abis import AbiStatus
    from abibench.probe.emulator import Emulator
    from abibench.run.suite import _no_debian_reason

    emu = Emulator("armhf", "/usr/bin/qemu-arm", "qemu-arm version 7.2", "/r", "/l", True)
    why = _no_debian_reason(ABIS["armhf"], AbiStatus("armhf", True, True, "cc", None, None, emu))
    assert "armhf packages run only where the kernel runs armhf" in why
    assert "without --provenance debian" in why and "has no" not in why
    x32 = _no_debian_reason(ABIS["x32"], AbiStatus("x32", True, True, "cc", None, None))
    assert "no x32 binary packages" in x32
    down = _no_debian_reason(ABIS["x32"], AbiStatus("x32", True, False, "cc", "no kernel", "fix"))
    assert down == "cannot run here: no kernel"


@pytest.mark.parametrize("timed, counted", [
    ('["{bin}/twice", "1000"]', '["sh", "-c", "{bin}/twice 100000 && {bin}/twice 100000"]'),
    ('["sh", "-c", "{bin}/twice 1000"]', '["{bin}/twice", "200000"]'),
])
def test_a_counted_command_of_the_other_kind_runs_under_the_emulator(
        cli: Cli, tmp_path: Path, timed: str, counted: str) -> None:
    """[run] counters need not be of the timed command's kind: a shell around built programs
    (unzstd's fixed work) sees the emulator's scripts, a built program started itself runs
    under the emulator, whichever the timed command is."""
    (tmp_path / "twice.c").write_text(
        '#include <inttypes.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n'
        'int main(int argc, char **argv) {\n'
        '  uint64_t s = 0, n = argc > 1 ? strtoull(argv[1], 0, 10) : 1000;\n'
        '  for (uint64_t i = 0; i < n; i++) s += i * i % 7;\n'
        '  printf("checksum: %" PRIu64 "\\n", s);\n  return 0;\n}\n')
    (tmp_path / "kinds.toml").write_text(f'''id = "kinds"
title = "a timed command and a counted command of different kinds"
suites = []
[source]
files = ["twice.c"]
build = ["sh", "-c", "{{cc}} {{cflags}} -o {{out}}/twice twice.c"]
artifacts = ["twice"]
[run]
command = {timed}
counters = {counted}
[validate]
stdout_match = '(checksum: .*)'
''')
    _, doc = _run(cli, str(tmp_path / "kinds.toml"), "--abi", "armhf,aarch64",
                     "--rounds", "1", "--warmup", "0", "--counters")
    samples = doc["samples"]
    assert isinstance(samples, list)
    runs = {s["target"]: s for s in samples if s["kind"] == "counters"}
    for t in ARM_TARGETS:
        assert runs[t]["status"] == "ok", runs[t]["error"]
        assert runs[t]["instructions"] > 2 * 100000
