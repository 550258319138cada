"""The XBench-style micro suite: clean builds for every ABI, checksums that agree between i386
and x86_64, one-line errors, a disk test that leaves nothing behind, and the suite end to end."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from abibench.analyse.xbench import group_of, xbench_index
from abibench.locks import made_once
from abibench.paths import MICRO_DIR
from abibench.store.exchange import document
from abibench.workloads.profile import builtin_profiles, load_profile

Cli = Callable[..., subprocess.CompletedProcess[str]]


# Our own micro programs (the older ptrtree, nbody and stream are covered by test_run.py).
PROGRAMS = {"cpu": ["-lm"], "threads": ["-lpthread"], "memory": [], "diskio": [],
            "footprint": []}
ABI_FLAGS = {"i386": "-m32", "x86_64": "-m64", "x32": "-mx32"}

# Every parameter of the micro suite at a size that takes milliseconds.
TINY = {"gcd_ops": "20000", "fp_reps": "2000", "fft_size": "1024", "fft_reps": "3",
        "libm_count": "20000", "compute_items": "2000", "compute_rounds": "50", "locks": "20000",
        "small_allocs": "20000", "large_allocs": "300", "mem_mb": "2", "fill_reps": "2",
        "copy_reps": "2", "blocks_reps": "1", "disk_mb": "4", "disk_ops": "50", "steps": "1000",
        "nodes": "10000", "elements": "10000", "times": "3"}


def _build_all(out: Path) -> None:
    for prog, libs in PROGRAMS.items():
        for abi, flag in ABI_FLAGS.items():
            r = subprocess.run(["gcc", flag, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                                "-o", str(out / f"{prog}-{abi}"), str(MICRO_DIR / f"{prog}.c"),
                                *libs], capture_output=True, text=True, check=False)
            assert r.returncode == 0, f"{prog} for {abi}:\n{r.stderr}"
    (out / ".complete").touch()


@pytest.fixture(scope="session")
def built(shared_cache: Path) -> dict[tuple[str, str], Path]:
    """Each program for each ABI, with warnings as errors: the sources must stay clean.

    Built once per test run, for every worker (15 compiles, about 2.4 CPU s): a module fixture
    was built again by each worker each time the scheduler handed it this module's tests, six
    times in a gate. Made under its entry's lock (abibench.locks), keyed by the sources and the
    flags, in the run's shared cache; a test only runs the programs, never changes them."""
    recipe = json.dumps([PROGRAMS, ABI_FLAGS, {p: hashlib.sha256(
        (MICRO_DIR / f"{p}.c").read_bytes()).hexdigest() for p in PROGRAMS}], sort_keys=True)
    entry = shared_cache / "micro-tests" / hashlib.sha256(recipe.encode()).hexdigest()[:16]

    def make() -> Path:
        work = entry.with_name(f"{entry.name}.part{os.getpid()}")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        _build_all(work)
        os.replace(work, entry)
        return entry

    made = made_once(entry, lambda: entry if (entry / ".complete").is_file() else None, make)
    return {(prog, abi): made / f"{prog}-{abi}" for prog in PROGRAMS for abi in ABI_FLAGS}


def _run(exe: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120,
                          check=False, cwd=cwd)


def _checksum(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("checksum: ")]
    assert len(lines) == 1, r.stdout
    return lines[0]


CASES = [
    ("cpu", ["--test", "gcd", "--ops", "1"]),
    ("cpu", ["--test", "gcd", "--ops", "30001"]),
    ("cpu", ["--test", "fp", "--reps", "1"]),
    ("cpu", ["--test", "fp", "--reps", "12345"]),
    ("cpu", ["--test", "fft", "--size", "16", "--reps", "1"]),
    ("cpu", ["--test", "fft", "--size", "8192", "--reps", "7"]),
    ("cpu", ["--test", "libm", "--count", "1"]),
    ("cpu", ["--test", "libm", "--count", "54321"]),
    ("threads", ["--test", "compute", "--threads", "3", "--items", "999", "--rounds", "17"]),
    ("threads", ["--test", "locks", "--threads", "3", "--locks", "2000"]),
    ("memory", ["--test", "malloc-small", "--allocs", "5000"]),
    ("memory", ["--test", "malloc-large", "--allocs", "100"]),
    ("memory", ["--test", "fill", "--mb", "1", "--reps", "3"]),
    ("memory", ["--test", "copy", "--mb", "2", "--reps", "3"]),
    ("memory", ["--test", "blocks", "--mb", "2", "--reps", "1"]),
    ("footprint", ["--struct", "list", "--n", "1"]),
    ("footprint", ["--struct", "tree", "--n", "5000"]),
    ("footprint", ["--struct", "hash", "--n", "5000"]),
]


@pytest.mark.parametrize(("prog", "args"), CASES, ids=[" ".join(a) for _, a in CASES])
def test_checksums_agree_between_i386_and_x86_64(built: dict[tuple[str, str], Path], prog: str,
                                                  args: list[str]) -> None:
    assert _checksum(_run(built[(prog, "i386")], *args)) == \
        _checksum(_run(built[(prog, "x86_64")], *args))


def test_checksums_depend_on_the_work(built: dict[tuple[str, str], Path]) -> None:
    # A checksum that ignores its input would agree across ABIs and prove nothing.
    cpu = built[("cpu", "x86_64")]
    assert _checksum(_run(cpu, "--test", "gcd", "--ops", "100")) != \
        _checksum(_run(cpu, "--test", "gcd", "--ops", "101"))
    thr = built[("threads", "x86_64")]
    # ... but not on how the work is split among threads.
    assert _checksum(_run(thr, "--test", "compute", "--threads", "1", "--items", "500")) == \
        _checksum(_run(thr, "--test", "compute", "--threads", "4", "--items", "500"))
    assert _checksum(_run(thr, "--test", "locks", "--threads", "2", "--locks", "50")) == \
        _checksum(_run(thr, "--test", "locks", "--threads", "4", "--locks", "25"))


def test_footprint_node_sizes_show_the_pointer_width(built: dict[tuple[str, str], Path]) -> None:
    sizes = {}
    for abi in ("i386", "x86_64"):
        out = _run(built[("footprint", abi)], "--struct", "tree", "--n", "10").stdout
        sizes[abi] = int(next(ln.split()[1] for ln in out.splitlines()
                              if ln.startswith("node_bytes:")))
    assert sizes == {"i386": 20, "x86_64": 32}


BAD = [
    ("cpu", ["--test", "gcd", "--ops", "-5"], "--ops needs an integer"),
    ("cpu", ["--test", "fft", "--size", "1000"], "--size must be a power of two"),
    ("cpu", ["--test", "nope"], "unknown test 'nope'"),
    ("cpu", [], "say which test to run"),
    ("threads", ["--test", "locks", "--threads", "999"], "--threads needs an integer in [0, 256]"),
    ("memory", ["--test", "fill", "--mb", "0"], "--mb needs an integer in [1, 1024]"),
    ("memory", ["--frobnicate"], "unknown option '--frobnicate'"),
    ("diskio", ["--op", "erase", "--pattern", "seq", "--dir", "."], "--op must be read or write"),
    ("diskio", ["--op", "read", "--pattern", "seq", "--dir", "/nonexistent/x"],
     "--dir must name an existing directory"),
    ("diskio", ["--op", "read", "--pattern", "seq", "--block", "5000", "--dir", "."],
     "--block must be a multiple of 4096"),
    ("footprint", ["--struct", "heap"], "unknown structure 'heap'"),
    ("footprint", ["--struct", "list", "--n", "x"], "--n needs an integer"),
]


@pytest.mark.parametrize(("prog", "args", "message"), BAD, ids=[m for _, _, m in BAD])
def test_bad_options_give_one_line_and_exit_2(built: dict[tuple[str, str], Path], prog: str,
                                              args: list[str], message: str) -> None:
    r = _run(built[(prog, "x86_64")], *args)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    assert r.stdout == ""


def test_every_micro_profile_names_its_program_and_suites() -> None:
    for name, path in builtin_profiles().items():
        wl = load_profile(path)
        if name.startswith(("cpu-", "thread-", "mem-", "disk-")):
            assert {"micro", "xbench"} <= set(wl.suites), name
            assert group_of(name) != "other"
        if name.startswith("footprint-"):
            assert wl.sweep["n"] == ("10000", "100000", "1000000", "10000000")
            assert wl.suites == ("footprint",)


# ------------------------------------------------------------------------------------- disk


@pytest.mark.parametrize("pattern", ["seq", "rand"])
@pytest.mark.parametrize("op", ["read", "write"])
def test_disk_checksums_agree_and_nothing_is_left(built: dict[tuple[str, str], Path],
                                                   tmp_path: Path, pattern: str, op: str) -> None:
    sums = []
    for abi in ("i386", "x86_64"):
        d = tmp_path / abi
        d.mkdir()
        r = _run(built[("diskio", abi)], "--op", op, "--pattern", pattern, "--mb", "2",
                 "--ops", "64", "--block", "8192", "--dir", str(d))
        sums.append(_checksum(r))
        assert "mbs: " in r.stdout and "iops: " in r.stdout
        assert list(d.iterdir()) == []
    assert sums[0] == sums[1]


def test_disk_buffered_mode_says_so(built: dict[tuple[str, str], Path], tmp_path: Path) -> None:
    r = _run(built[("diskio", "x86_64")], "--op", "read", "--pattern", "rand", "--mb", "1",
             "--ops", "10", "--buffered", "--dir", str(tmp_path))
    assert "direct: no (--buffered asked for it" in r.stdout
    assert _checksum(r).startswith("checksum: buffered-rand-read-")
    # The mode leads the checksum, so ABIs measured in different modes miscompare.
    direct = _run(built[("diskio", "x86_64")], "--op", "read", "--pattern", "rand", "--mb", "1",
                  "--ops", "10", "--dir", str(tmp_path))
    if "direct: yes" in direct.stdout:
        assert _checksum(direct) != _checksum(r)


def _open_in(pid: int, directory: Path) -> bool:
    """Whether process pid holds a file of `directory` open (its temporary file exists)."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(fd).startswith(str(directory) + "/"):
                return True
        except OSError:
            continue
    return False


def _diskio_running_in(directory: Path) -> bool:
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if b"diskio" in (p / "cmdline").read_bytes() and _open_in(int(p.name), directory):
                return True
        except OSError:
            continue  # the process ended while we looked
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_disk_file_vanishes_when_killed_mid_run(built: dict[tuple[str, str], Path],
                                                tmp_path: Path, sig: signal.Signals) -> None:
    proc = subprocess.Popen([str(built[("diskio", "i386")]), "--op", "read", "--pattern", "rand",
                             "--mb", "16", "--ops", "100000000", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        # By condition: the file exists (held open) before the signal is sent.
        while not _open_in(proc.pid, tmp_path) and time.monotonic() < deadline:
            assert proc.poll() is None, "diskio ended before it could be interrupted"
            time.sleep(0.01)
        assert _open_in(proc.pid, tmp_path)
        # At no point does the file have a name in the directory.
        assert list(tmp_path.iterdir()) == []
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -sig
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------ end to end


def test_micro_suite_end_to_end(cli: Cli, cli_env: dict[str, str], tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"  # abibench's {work} and sample directories live here
    tmp.mkdir()
    env = dict(cli_env, TMPDIR=str(tmp))
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
    # Read for its samples, artifacts and score index, never for the HTML report a run writes
    # by default: --no-html spares the 20 workloads' charts. The run's HTML report
    # is tested where it is read (tests/report).
    r = cli("run", "--suite", "micro", "--abi", "i386,x86_64", "--rounds", "2", "--json", *sets,
            "--no-html", env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    # Work directories, disk files, sample dirs: all gone; abibench's private root stays, empty.
    assert [p.name for p in tmp.rglob("*")] == [f"abibench-{os.getuid()}"]

    workloads = doc["run"]["config"]["workloads"]
    mine = [w for w in workloads if w.startswith(("cpu-", "thread-", "mem-", "disk-"))]
    assert len(mine) == 19
    checks: dict[str, dict[str, set[str]]] = {}
    for s in doc["samples"]:
        assert s["status"] == "ok", s
        checks.setdefault(s["workload"], {}).setdefault(s["target"], set()).add(s["check"])
    for wid in workloads:
        assert set(checks[wid]) == {"i386", "x86_64"}, wid
        assert checks[wid]["i386"] == checks[wid]["x86_64"] and len(checks[wid]["i386"]) == 1, wid
    assert all(next(iter(checks[w]["i386"])).startswith(("direct-", "buffered-"))
               for w in mine if w.startswith("disk-"))

    # Every artifact of the run was inspected, and the inspection is stored with it.
    for art in doc["artifacts"]:
        for f in art["files"]:
            ins = art["inspection"][f]
            assert ins["abi"] == art["target"] and ins["ok"], ins
            assert any(lib["name"] == "libc.so.6" and lib["path"] for lib in ins["libraries"])

    index = xbench_index(document(doc, "run"))
    scored = {t.workload for t in index.tests}
    assert scored == {*mine, "stream"}
    assert {g.group for g in index.groups} == {"cpu", "thread", "mem", "disk"}
    assert index.totals[0].target == "i386" and index.totals[0].tests == len(index.tests)


def test_ctrl_c_during_a_disk_test_leaves_nothing(cli_env: dict[str, str],
                                                  tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(cli_env, TMPDIR=str(tmp))
    proc = subprocess.Popen(
        [sys.executable, "-m", "abibench", "run", "disk-rand-read-4k", "--abi", "i386,x86_64",
         "--rounds", "3", "--set", "disk_mb=8", "--set", "disk_ops=100000000", "--no-html"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        found = False
        while not found and time.monotonic() < deadline and proc.poll() is None:
            found = _diskio_running_in(tmp)
            if not found:
                time.sleep(0.05)
        assert found, "no diskio sample started"
        # What a terminal's Ctrl-C does: SIGINT to the whole foreground process group.
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stderr
    assert [p.name for p in tmp.rglob("*")] == [f"abibench-{os.getuid()}"]
