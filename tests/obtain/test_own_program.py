"""Your own program, first class: a failed build says why once, C++ sources link libstdc++,
--check validates one line of a prebuilt program, --abi names each ABI once, and a prebuilt
program's runnability is its own."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.abi import ABIS, parse_abi_list
from abibench.errors import UsageError
from abibench.obtain.build import CXX_SUFFIXES, compiler_of, cxx_for
from abibench.obtain.buildlog import CAUSE_LINES, LINE_CHARS, cause
from abibench.probe.abis import AbiStatus, program_cannot_run
from abibench.text import one_line
from abibench.workloads.profile import builtin_profiles, load_profile

Cli = Callable[..., subprocess.CompletedProcess[str]]
# bench/own_program.py runs the generated tests with more examples.
SCALE = int(os.environ.get("ABIBENCH_TEST_SCALE", "1"))
# A real profile; only its source files are varied.
_EMPTY = load_profile(builtin_profiles()["cpu-gcd"])
RUN = ("--rounds", "1", "--warmup", "0", "--no-html")

# Log lines as tools write them, with terminal escapes and control bytes mixed in.
_LINE = st.text(st.characters(codec="utf-8", exclude_characters="\n"), max_size=300)
_ERROR = st.builds(lambda a, b: f"{a}error: {b}", _LINE, _LINE)
# A tool's fix below its error (rustc's "= help: ..."), and abibench's own record of a command
# that mentions an error (an `echo 'error: ...'` branch of a recipe), which is no cause.
_FIX = st.builds(lambda a, b: f"{a}= help: {b}", _LINE, _LINE)
_COMMAND = st.builds(lambda a: f"$ sh -c 'echo error: {a}'", _LINE)


@settings(max_examples=150 * SCALE, deadline=None)
@given(st.lists(st.one_of(_LINE, _ERROR, _FIX, _COMMAND), max_size=40))
def test_a_logs_cause_is_few_sanitised_lines_ending_with_its_last_error(lines: list[str]) -> None:
    got = cause("\n".join(lines))
    assert len(got) <= CAUSE_LINES
    assert all(len(g) <= LINE_CHARS and g == one_line(g) and g.strip() == g and g for g in got)
    # A line is what str.splitlines makes one: a bare CR or a form feed ends it too.
    shown = "\n".join(lines).splitlines()
    errors = [one_line(x).strip() for x in shown
              if re.search(r"error|(^|\W)(help|hint):", one_line(x), re.I)
              and not one_line(x).strip().startswith("$ ")]  # abibench's record of a command
    if errors:
        # The last error line (or the tool's fix after it) names the failure; it is kept.
        assert got[-1] == errors[-1] or ("…" in got[-1] and len(errors[-1]) > LINE_CHARS)
        assert all(re.search(r"error|cannot find|undefined reference|not found|No such file|"
                             r"\*\*\*|(^|\W)(help|hint):", g, re.I) for g in got)


def _swept(proj: Path, name: str, source: str, ldflags: str = "") -> Path:
    """A profile whose one build is shared by three sweep instances."""
    (proj / f"{name}.c").write_text(source)
    prof = proj / f"{name}.toml"
    prof.write_text(f'id = "{name}"\ntitle = "t"\n[params]\nn = "1"\n[sweep]\n'
                    f'n = ["1", "2", "3"]\n[source]\nfiles = ["{name}.c"]\n'
                    f'artifacts = ["{name}"]\n{ldflags}[run]\ncommand = ["{{bin}}/{name}", '
                    '"{n}"]\ntimeout = "30s"\n')
    return prof


@pytest.mark.parametrize(("source", "ldflags", "why"), [
    ("int main(void) { return 0 }\n", "", "error: expected ';'"),
    ("int main(void) { return 0; }\n", 'ldflags = ["-lnosuchlib"]\n', "cannot find -lnosuchlib"),
], ids=["syntax-error", "missing-library"])
def test_a_failed_build_says_why_once_per_abi_not_per_sweep_value(
        cli: Cli, tmp_path: Path, source: str, ldflags: str, why: str) -> None:
    prof = _swept(tmp_path, "broken", source, ldflags)
    r = cli("run", str(prof), "--abi", "i386,x86_64", *RUN)
    assert r.returncode == 1, r.stderr[-1500:]
    # Once per ABI in the report and on the last line (the first of two failures, "and 1
    # more"): never once per sweep value.
    assert r.stdout.count(why) == 2, r.stdout[-3000:]
    assert r.stderr.count(why) == 1, r.stderr
    last = r.stderr.splitlines()[-1]
    assert "(and 1 more" in last and "log: " in last and why in last, last
    # The sweep is one section; the other values' stored states point at the first.
    assert r.stdout.count("broken — t; swept over n (3 values)") == 1, r.stdout
    states = {(t["workload"], t["target"]): t["reason"]
              for t in json.loads(cli("export", "latest").stdout)["target_status"]}
    assert why in states[("broken[n=1]", "i386")]
    assert "the same i386 build failed for broken[n=1]" in states[("broken[n=3]", "i386")]


CXX = """#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
int main(int argc, char **argv) {
    std::map<std::string, long> m;
    long n = argc > 1 ? std::atol(argv[1]) : 1000;
    for (long i = 0; i < n; i++) m[std::to_string(i % 97)] += i;
    std::printf("pointer: %zu\\nsum: %ld\\n", sizeof(void *), m["5"]);
    return 0;
}
"""


def test_a_cxx_source_builds_with_the_abis_gxx_and_runs(cli: Cli, tmp_path: Path) -> None:
    suffix = ".cpp"
    (tmp_path / f"maps{suffix}").write_text(CXX)
    prof = tmp_path / "maps.toml"
    prof.write_text(f'id = "maps"\ntitle = "t"\n[source]\nfiles = ["maps{suffix}"]\n'
                    'artifacts = ["maps"]\n[run]\ncommand = ["{bin}/maps", "2000"]\n'
                    '[validate]\nstdout_match = \'(?m)^sum: (\\S+)$\'\n')
    # --abi repeated is the same as one comma-separated list.
    r = cli("run", str(prof), "--abi", "i386", "--abi", "x86_64", *RUN, "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    arts = {a["abi"]: a for a in doc["artifacts"]}
    assert set(arts) == {"i386", "x86_64"}
    assert all(a["compiler"].endswith("g++") for a in arts.values()), arts
    samples = {s["target"]: s for s in doc["samples"] if not s["warmup"]}
    assert {t: s["status"] for t, s in samples.items()} == {"i386": "ok", "x86_64": "ok"}


_NAMES = st.lists(st.sampled_from(sorted(ABIS)), min_size=1, max_size=6)


@settings(max_examples=100 * SCALE, deadline=None)
@given(_NAMES)
def test_an_abi_list_names_each_abi_once(names: list[str]) -> None:
    dups = {n for n in names if names.count(n) > 1}
    if not dups:
        assert [a.name for a in parse_abi_list(",".join(names))] == names
        return
    with pytest.raises(UsageError) as info:
        parse_abi_list(" , ".join(names))
    first = next(n for i, n in enumerate(names) if n in names[:i])
    assert f"names {first} twice" in str(info.value)


@pytest.mark.parametrize("abis", [("i386,i386,x86_64",), ("i386", "x86_64,i386")],
                         ids=["in-one-list", "across-repeats"])
def test_a_duplicate_abi_is_refused_in_one_line(cli: Cli, tmp_path: Path,
                                                abis: tuple[str, ...]) -> None:
    prof = _swept(tmp_path, "fine", "int main(void) { return 0; }\n")
    r = cli("run", str(prof), *(x for a in abis for x in ("--abi", a)), *RUN)
    assert r.returncode == 2, r.stdout[-800:] + r.stderr
    assert r.stderr.count("\n") == 1 and "names i386 twice" in r.stderr, r.stderr


@pytest.fixture(scope="module")
def metric_programs(tmp_path_factory: pytest.TempPathFactory, fixtures: Path) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("check")
    out = {}
    for abi, flags in (("i386", ("-m32", "-static")), ("x86_64", ("-m64",))):
        out[abi] = d / f"metric-{abi}"
        subprocess.run(["gcc", *flags, "-O2", "-o", str(out[abi]), str(fixtures / "metric.c")],
                       check=True)
    return out


def test_check_validates_one_line_of_a_prebuilt_programs_output(
        cli: Cli, metric_programs: dict[str, Path]) -> None:
    progs = ("--binary", f"i386={metric_programs['i386']}", "--binary",
             f"x86_64={metric_programs['x86_64']}")
    # The value line differs on every run (a 50% spread): the whole output would miscompare.
    r = cli("run", *progs, *RUN, "--check", r"(?m)^checksum: (\S+)$", "--", "50")
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    assert "output check: identical" in r.stdout
    r = cli("run", *progs, *RUN, "--check", r"(?m)^value: (\S+)$", "--", "50")
    assert r.returncode == 1 and "MISCOMPARE" in r.stdout, r.stdout[-1500:]
    r = cli("run", *progs, *RUN, "--check", "checksum", "--", "50")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "capture group" in r.stderr


@settings(max_examples=60 * SCALE, deadline=None)
@given(st.sampled_from(sorted(ABIS)), st.one_of(st.none(), st.just("/lib/ld-linux.so.2")),
       st.booleans(), st.sampled_from(["x86_64", "aarch64", "i686", "armv7l", "s390x"]),
       st.booleans())
def test_a_prebuilt_programs_runnability_is_its_own(name: str, interp: str | None,
                                                     can_run: bool, machine: str,
                                                     loader: bool) -> None:
    abi = ABIS[name]
    # What a host without the ABI's multilib C library says: it cannot build, so its probe
    # never ran a program of the ABI.
    status = AbiStatus(name, False, can_run, None, None if can_run else
                       f"no {name} C library or multilib support installed", "apt-get ...")
    why = program_cannot_run(abi, interp, status, machine, loader_exists=loader)
    if can_run:
        assert why is None
    elif machine not in abi.run_on:
        assert why is not None
    elif interp is not None and not loader:
        assert why is not None and (interp in why or "kernel" in why)
    else:
        # A static program, or one whose loader is here: the missing build support is no
        # reason (only a kernel configured without the ABI is).
        assert why is None or "kernel" in why


@settings(max_examples=60 * SCALE, deadline=None)
@given(st.lists(st.sampled_from(["a.c", "b.h", "c.cc", "d.cpp", "e.cxx", "f.C", "g.s"]),
                min_size=1, max_size=4),
       st.sampled_from(["/usr/bin/gcc", "gcc", "/usr/bin/i686-linux-gnu-gcc", "clang"]))
def test_any_cxx_file_makes_the_build_a_cxx_link(files: list[str], cc: str) -> None:
    wl = replace(_EMPTY, source=replace(_EMPTY.source, files=tuple(files)))
    driver = compiler_of(wl, cc)
    if any(f.endswith(CXX_SUFFIXES) for f in files):
        assert driver == cxx_for(cc) and driver.endswith(("g++", "clang++"))
        assert Path(driver).parent == Path(cc).parent  # the same toolchain
    else:
        assert driver == cc


def test_a_missing_cxx_driver_names_the_package(cli: Cli, tmp_path: Path) -> None:
    # A C compiler with no C++ driver beside it (a gcc installed without g++).
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "onlygcc").symlink_to("/usr/bin/gcc")
    (tmp_path / "maps.cpp").write_text(CXX)
    prof = tmp_path / "maps.toml"
    prof.write_text('id = "maps"\ntitle = "t"\n[source]\nfiles = ["maps.cpp"]\n'
                    'artifacts = ["maps"]\n[run]\ncommand = ["{bin}/maps"]\n')
    r = cli("run", str(prof), "--abi", "i386,x86_64", "--cc", str(bindir / "onlygcc"), *RUN)
    assert r.returncode == 1, r.stderr[-1500:]
    last = r.stderr.splitlines()[-1]
    assert f"no C++ compiler {bindir / 'onlyg++'} for i386" in last, last
    assert "apt-get install g++-12-multilib" in last, last


@settings(max_examples=40 * SCALE, deadline=None)
@given(st.sampled_from(sorted(ABIS)), st.sampled_from(["x86_64", "aarch64", "i686", "s390x"]))
def test_every_abi_names_the_cxx_packages_of_its_compiler(name: str, machine: str) -> None:
    abi = ABIS[name]
    pkgs = abi.cxx_packages(machine)
    assert pkgs and all(p.startswith("g++") for p in pkgs)
    # One g++ package per gcc package of the same compiler, never another toolchain's.
    gcc = [p for p in abi.compiler_packages(machine) if p.startswith("gcc-")]
    assert len(pkgs) == max(len(set(gcc)), 1)
