"""The ILP32/LP64 pairs of other machines on this x86 host: SPARC's v8plus and v9 (seed 000's
pair) and MIPS's n32 and n64, cross-built, told apart by their ELF headers, run under qemu-user
with checksums equal to x86_64's, and counted the same twice.

setup.sh installs the cross compilers; where one is missing, the test skips naming the package
(needs: the one rule of tests/conftest.py).
Sizes are small: the module takes well under a minute.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from abibench.abi import ABIS, check_artifact, family_abis
from abibench.cli import _asked_abis
from abibench.errors import EXIT_USAGE, AbiMismatchError, UsageError
from abibench.paths import MICRO_DIR
from abibench.probe.abis import probe_abi

Cli = Callable[..., subprocess.CompletedProcess[str]]

PAIRS = ("sparc32plus", "sparc64", "mips64el-n32", "mips64el-n64")
SMALL = ["--set", "nodes=5000", "--set", "steps=5000"]
SRC = "int main(void) { return (int)sizeof(void *); }\n"


def needs(*abis: str) -> pytest.MarkDecorator:
    """The cross packages of these ABIs, as setup.sh installs them: the test is skipped only
    where `bash setup.sh missing` names one of them (tests/conftest.py)."""
    return pytest.mark.needs_setup(*sorted({p for a in abis for p in ABIS[a].cross_packages}))


def _build(tmp_path: Path, abi: str) -> Path:
    src = tmp_path / "t.c"
    src.write_text(SRC)
    out = tmp_path / f"t-{abi}"
    a = ABIS[abi]
    proc = subprocess.run([a.cc_prefix + "gcc", *a.cflags, "-O2", "-o", str(out), str(src)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"{abi}: {proc.stderr.strip().splitlines()[-1]} although "
                    f"{' '.join(a.cross_packages)} are installed")
    return out


@needs(*PAIRS, "mips64el-o32")
def test_n32_and_v8plus_are_told_apart_from_their_neighbours(tmp_path: Path) -> None:
    exe = {a: _build(tmp_path, a) for a in (*PAIRS, "mips64el-o32")}
    # n32 and o32 are both ELFCLASS32 EM_MIPS: only e_flags (EF_MIPS_ABI2) tell them apart
    n32, o32 = check_artifact(exe["mips64el-n32"], ABIS["mips64el-n32"]), \
        check_artifact(exe["mips64el-o32"], ABIS["mips64el-o32"])
    assert (n32.elf_class, n32.machine) == (o32.elf_class, o32.machine) == (32, "EM_MIPS")
    assert n32.flags & 0x20 and not o32.flags & 0x20
    with pytest.raises(AbiMismatchError, match=r"built for mips64el-o32 .*e_flags"):
        check_artifact(exe["mips64el-n32"], ABIS["mips64el-o32"])
    with pytest.raises(AbiMismatchError, match="mips64el-n64"):
        check_artifact(exe["mips64el-n32"], ABIS["mips64el-n64"])
    v8plus = check_artifact(exe["sparc32plus"], ABIS["sparc32plus"])
    assert (v8plus.elf_class, v8plus.machine) == (32, "EM_SPARC32PLUS")
    assert check_artifact(exe["sparc64"], ABIS["sparc64"]).machine == "EM_SPARCV9"
    for name in (*PAIRS, "mips64el-o32"):
        assert check_artifact(exe[name], ABIS[name]).interpreter == ABIS[name].loader


@needs(*PAIRS, "mips64el-o32", "ppc", "ppc64", "s390x")
def test_every_pair_runs_under_its_emulator_from_the_cross_libraries(tmp_path: Path) -> None:
    for name in (*PAIRS, "mips64el-o32", "ppc", "ppc64", "s390x"):
        st = probe_abi(ABIS[name], tmp_path, cache_root=tmp_path / "cache")
        assert st.can_build and st.can_run and st.emulator is not None, st
        root = Path(st.emulator.root)
        assert (root / "etc" / "ld.so.cache").stat().st_size == 0
        for guest, host_dir in ABIS[name].guest_libs():
            assert (root / guest).resolve() == Path(host_dir).resolve()
        got = subprocess.run(st.emulator.wrap([str(_build(tmp_path, name))]), check=False)
        assert got.returncode == ABIS[name].pointer_bits // 8, name


@needs("s390")
def test_s390_builds_but_is_listed_as_unrunnable_with_the_reason(tmp_path: Path) -> None:
    st = probe_abi(ABIS["s390"], tmp_path, cache_root=tmp_path / "cache")
    assert st.can_build and not st.can_run and st.emulator is None
    assert st.reason and "no 31-bit s390 emulator" in st.reason
    assert check_artifact(_build(tmp_path, "s390"), ABIS["s390"]).elf_class == 32


def _counts(doc: dict[str, object]) -> dict[tuple[str, str], int]:
    samples = doc["samples"]
    assert isinstance(samples, list)
    return {(s["workload"], s["target"]): s["instructions"] for s in samples
            if s["kind"] == "counters"}


@needs(*PAIRS)
def test_sparc_and_mips_pairs_match_x86_and_count_the_same_twice(cli: Cli) -> None:
    abis = ",".join(("x86_64", *PAIRS))
    args = ("run", "ptrtree", "nbody", "--abi", abis, "--rounds", "1", "--warmup", "0",
            "--counters", "--no-html", *SMALL)
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    doc = json.loads(cli("export").stdout)
    samples = doc["samples"]
    for s in samples:
        assert s["status"] == "ok", s
        assert s["emulated"] == (s["target"] in PAIRS), s
    # the checksums printed on big-endian SPARC and little-endian MIPS equal x86_64's
    for wl in ("ptrtree", "nbody"):
        checks = {s["check"] for s in samples if s["workload"] == wl and s["kind"] != "baseline"}
        assert len(checks) == 1 and None not in checks, (wl, checks)
    assert proc.stdout.count("output check: identical on mips64el-n32, mips64el-n64, "
                             "sparc32plus, sparc64, x86_64") == 2
    assert "emulated: measures QEMU, not a SPARC CPU" in proc.stdout
    assert "emulated: measures QEMU, not a MIPS CPU" in proc.stdout
    # each 32-bit half against the 64-bit ABI of its own machine
    for a, b in (("sparc32plus", "sparc64"), ("mips64el-n32", "mips64el-n64")):
        assert re.search(rf"{b} executes [\d.]+% (fewer|more) instructions than {a} \[exact\]",
                         proc.stdout), proc.stdout
    counts = _counts(doc)
    assert len(counts) == 10 and all(n > 1_000_000 for n in counts.values())
    for p in (s["counters"] for s in samples if s["kind"] == "counters"):
        assert len(set(p["attempts"])) == 1 and p["agreed"], p
    # another run of the same build counts the same instructions
    again = cli("run", "ptrtree", "--abi", "sparc32plus", "--rounds", "1", "--warmup", "0",
                "--counters", "--no-html", "--set", "nodes=5000")
    assert again.returncode == 0, again.stderr[-3000:]
    # Within 1e-4, not exactly: the program's start walks its argv and environment, whose bytes
    # (the run's work directory, the padding) differ between runs by tens of characters: 155
    # instructions of 5.3 million were seen (2.9e-5) for sparc32plus's ptrtree.
    for key, n in _counts(json.loads(cli("export").stdout)).items():
        assert abs(n - counts[key]) <= 1e-4 * n, (key, n, counts[key])


def test_family_chooses_a_machine_and_refuses_an_unknown_one(cli: Cli) -> None:
    assert [a.name for a in family_abis("sparc")] == ["sparc32plus", "sparc64"]
    assert len(family_abis("all")) == len(ABIS)
    proc = cli("run", "ptrtree", "--family", "vax", "--no-html")
    assert proc.returncode == EXIT_USAGE
    (line,) = proc.stderr.strip().splitlines()
    assert "unknown --family 'vax'" in line and "sparc" in line
    with pytest.raises(UsageError, match="give one of them"):
        _asked_abis(argparse.Namespace(family="sparc", abi="x86_64"))


@needs("sparc64", "sparc32plus")
def test_micro_checksums_on_big_endian_sparc64_equal_x86_64s(tmp_path: Path) -> None:
    # Every micro program builds warning-free for sparc64 (and v8plus), and the checksums it
    # prints on a big-endian machine are x86_64's: they come from values, not memory's bytes.
    from tests.run.test_micro import CASES, PROGRAMS

    st = probe_abi(ABIS["sparc64"], tmp_path, cache_root=tmp_path / "cache")
    assert st.emulator is not None, st
    bins: dict[tuple[str, str], Path] = {}
    for prog, libs in PROGRAMS.items():
        for abi, cc in (("x86_64", ["gcc", "-m64"]), ("sparc64", ["sparc64-linux-gnu-gcc", "-m64"]),
                        ("sparc32plus", ["sparc64-linux-gnu-gcc", "-m32"])):
            exe = tmp_path / f"{prog}-{abi}"
            r = subprocess.run([*cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
                                str(exe), str(MICRO_DIR / f"{prog}.c"), *libs],
                               capture_output=True, text=True, check=False)
            assert r.returncode == 0, f"{prog} for {abi}:\n{r.stderr}"
            bins[(prog, abi)] = exe

    def checksum(argv: list[str]) -> str:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert r.returncode == 0, (argv, r.stderr)
        (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("checksum: ")]
        return line

    for prog, args in CASES:
        want = checksum([str(bins[(prog, "x86_64")]), *args])
        assert checksum(st.emulator.wrap([str(bins[(prog, "sparc64")]), *args])) == want, \
            (prog, args)


@needs("ppc")
def test_a_missing_multilib_half_is_named_with_its_package(tmp_path: Path) -> None:
    # Debian's powerpc toolchain has no 64-bit C library or libgcc: asking it for -m64 is what a
    # multilib half without its packages looks like (a real compile failure, not a simulated one).
    half = dataclasses.replace(ABIS["ppc"], name="ppc-m64", cflags=("-m64",))
    st = probe_abi(half, tmp_path, cache_root=tmp_path / "cache")
    assert not st.can_build and not st.can_run
    assert st.reason == "no ppc-m64 C library or multilib support installed", st
    assert st.fix == "apt-get install gcc-powerpc-linux-gnu libc6-dev-powerpc-cross"


@needs("ppc", "mips64el-o32")
def test_the_step_clock_loads_where_64_bit_atomics_are_library_calls(tmp_path: Path) -> None:
    # 32-bit PowerPC and MIPS o32 have no 64-bit atomic instructions; the step clock preloaded
    # into every counting run must not need libatomic there (it failed with "undefined symbol:
    # __atomic_fetch_add_8", so ppc and o32 had no instruction counts).
    from abibench.obtain.helpers import helper

    for name in ("ppc", "mips64el-o32"):
        abi = ABIS[name]
        st = probe_abi(abi, tmp_path, cache_root=tmp_path / "cache")
        assert st.emulator is not None and st.compiler is not None, st
        clock = helper("stepclock", abi, st.compiler, ("-O2",), tmp_path / "cache")
        src = tmp_path / "t.c"
        src.write_text("#include <time.h>\nint main(void) { struct timespec a, b;\n"
                       "  clock_gettime(CLOCK_MONOTONIC, &a); clock_gettime(CLOCK_MONOTONIC, &b);\n"
                       "  return (int)(b.tv_nsec - a.tv_nsec) / 1000; }\n")
        exe = tmp_path / f"t-{name}"
        subprocess.run([st.compiler, *abi.cflags, "-O2", "-o", str(exe), str(src)], check=True)
        got = subprocess.run([st.emulator.command, "-E", f"LD_PRELOAD={clock}", "-L",
                              st.emulator.root, str(exe)], capture_output=True, text=True,
                             check=False)
        # one microsecond between two readings: the step clock ran, not the real one
        assert got.returncode == 1, (name, got.returncode, got.stderr)
