"""abibench vm: programs run in a booted guest (Debian's kernel under TCG).

The report the guest's init writes is read frame by frame, never scraped: the generated tests
encode results as native/vminit.c does, then cut, garble and pad the report anywhere, and the
parser must return exactly the whole frames before the damage. The initramfs writer's archive
reads back entry for entry. The boot test runs ptrtree for x32, i386 and x86_64 in a real
guest, and the interrupt test stops abibench mid-boot: nothing of the guest may be left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.abi import ABIS, vm_kernel_abi
from abibench.errors import UsageError
from abibench.obtain import vmimage
from abibench.obtain.vmimage import S_IFDIR, S_IFREG, Entry, Job, jobs_text, newc, parse_newc
from abibench.run import vm
from abibench.run.vm import GuestResult, ReportError, fnv1a, parse_report
from tests.processes import alive, interrupt_when, ours

# --------------------------------------------------------------------------- the report frames

_LABEL = st.from_regex(r"[A-Za-z0-9_.-]{1,20}", fullmatch=True)
_RESULTS = st.builds(
    GuestResult, label=_LABEL, kind=st.sampled_from(["exit", "signal", "timeout", "spawn"]),
    code=st.integers(0, 255), wall_s=st.integers(0, 10**12).map(lambda n: n / 1e9),
    max_rss_kb=st.integers(0, 2**40), user_s=st.integers(0, 10**9).map(lambda n: n / 1e6),
    sys_s=st.integers(0, 10**9).map(lambda n: n / 1e6), minflt=st.integers(0, 2**31),
    majflt=st.integers(0, 2**31), stdout=st.binary(max_size=200), stderr=st.binary(max_size=50))


def _hex(data: bytes) -> str:
    return data.hex() or "-"


def hashed(body: str) -> bytes:
    """One frame as native/vminit.c ends it: its FNV-1a hash, then a newline."""
    return f"{body} {fnv1a(body.encode()):08x}\n".encode()


def frame(r: GuestResult) -> bytes:
    """One result line as native/vminit.c prints it."""
    return hashed(f"R {r.label} {r.kind} {r.code} {round(r.wall_s * 1e9)} {r.max_rss_kb} "
                  f"{round(r.user_s * 1e6)} {round(r.sys_s * 1e6)} {r.minflt} {r.majflt} "
                  f"{_hex(r.stdout)} {_hex(r.stderr)}")


def report_of(results: list[GuestResult]) -> bytes:
    head = hashed(f"ABIBENCH-VM 1 BEGIN {b'6.1.0'.hex()} {b'x86_64'.hex()}")
    return head + b"".join(frame(r) for r in results) + \
        hashed(f"ABIBENCH-VM 1 END {len(results)}")


def test_the_hash_is_fnv1a_32() -> None:
    # The published FNV-1a test vectors: the C side computes the same function.
    assert (fnv1a(b""), fnv1a(b"a"), fnv1a(b"foobar")) == (0x811C9DC5, 0xE40C292C, 0xBF9CF968)


@settings(max_examples=80, deadline=None)
@given(st.lists(_RESULTS, max_size=6))
def test_every_result_reads_back_exactly(results: list[GuestResult]) -> None:
    rep = parse_report(report_of(results))
    assert rep.complete and rep.release == "6.1.0" and rep.machine == "x86_64"
    assert list(rep.results) == results


@settings(max_examples=150, deadline=None)
@given(st.lists(_RESULTS, min_size=1, max_size=5), st.data())
def test_a_report_cut_and_garbled_anywhere_gives_only_whole_frames(
        results: list[GuestResult], data: st.DataObject) -> None:
    # The family: every way a report can end early or carry bytes the guest did not frame (a
    # deadline's kill mid-line, noise on the port). Each member gives the whole frames before
    # the damage, exactly, and is never complete.
    whole = report_of(results)
    cut = data.draw(st.integers(0, len(whole) - 1), label="cut")
    noise = data.draw(st.binary(max_size=30), label="noise")
    if (whole[:cut] + noise).startswith(whole):
        return  # the noise put back exactly the bytes cut (a cut at the last "\n"): no damage
    try:
        rep = parse_report(whole[:cut] + noise)
    except ReportError:
        assert cut < len(report_of([]).split(b"\n")[0]) + 1
        return
    whole_frames_kept = whole[:cut].count(b"\n") - 1
    assert list(rep.results) == results[:len(rep.results)]
    assert len(rep.results) >= min(whole_frames_kept, len(results))
    assert not rep.complete


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_what_a_program_prints_cannot_forge_a_frame(printed: bytes) -> None:
    # A program printing frames of its own reaches the report as hex: one result, its bytes.
    forged = printed + b"\n" + hashed("R x exit 0 1 1 1 1 1 1 - -") + \
        hashed("ABIBENCH-VM 1 END 9")
    one = GuestResult("p.i386.0", "exit", 0, 1.0, 10, 0.0, 0.0, 0, 0, forged, b"")
    rep = parse_report(report_of([one]))
    assert list(rep.results) == [one] and rep.complete


# ------------------------------------------------------------------------ initramfs and jobs

_NAME = st.from_regex(r"[a-z0-9_]{1,8}(/[a-z0-9_.]{1,8}){0,3}", fullmatch=True)


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(_NAME, st.binary(max_size=300), max_size=8))
def test_the_initramfs_archive_reads_back(files: dict[str, bytes]) -> None:
    entries = [Entry("d", S_IFDIR | 0o755),
               *(Entry(n, S_IFREG | 0o644, b) for n, b in sorted(files.items()))]
    blob = newc(entries)
    assert len(blob) % 4 == 0
    assert parse_newc(blob) == entries


@settings(max_examples=100, deadline=None)
# Arguments come from profiles and --set values: text a TOML file or a command line can hold,
# never a lone surrogate (which no encoding can put on a command line).
@given(st.lists(st.text(st.characters(blacklist_characters="\0", codec="utf-8"),
                        max_size=30), min_size=1, max_size=5))
def test_job_arguments_pass_as_hex(argv: list[str]) -> None:
    text = jobs_text([Job("w.x32.0", tuple(argv), 12.5)])
    args = [bytes.fromhex(ln[2:]).decode() for ln in text.splitlines() if ln.startswith("A ")]
    assert args == argv and text.endswith("E\n")


@pytest.mark.parametrize("label", ["", "a b", "x\ny", "é", "a" * 101])
def test_a_label_that_could_break_a_frame_is_refused(label: str) -> None:
    with pytest.raises(ValueError):
        jobs_text([Job(label, ("/bin/true",), 1.0)])


# ------------------------------------------------------------------------------- a real guest


def _vm_env(cli_env: dict[str, str], debian_cache: Path, tmp: Path) -> dict[str, str]:
    # The kernel .deb is content-keyed: the abibench cache shared by the Debian tests keeps it.
    (tmp / "t").mkdir()
    return {**cli_env, "ABIBENCH_CACHE": str(debian_cache), "TMPDIR": str(tmp / "t")}


@pytest.mark.needs_setup("qemu-system-x86")
def test_ptrtree_in_a_booted_guest(cli_env: dict[str, str], debian_cache: Path,
                                   tmp_path: Path) -> None:
    env = _vm_env(cli_env, debian_cache, tmp_path)
    out = tmp_path / "vm.json"
    done = subprocess.run([sys.executable, "-m", "abibench", "vm", "run", "ptrtree",
                           "--abi", "x32,i386,x86_64", "--set", "nodes=20000", "--counters",
                           "--json", str(out)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["placement"] == "vm: emulated" and doc["boots"][0]["ended"] == "powered off"
    assert doc["guest"][0]["machine"] == "x86_64"
    by_abi = {t["abi"]: t for t in doc["targets"]}
    assert {a: t["runs_ok"] for a, t in by_abi.items()} == {"x32": 1, "i386": 1, "x86_64": 1}
    checks = {a: t["checks"] for a, t in by_abi.items()}
    assert checks["x32"] == checks["i386"] == checks["x86_64"] and len(checks["x32"]) == 1
    x32, i386, lp64 = (by_abi[a]["max_rss_kb_median"] for a in ("x32", "i386", "x86_64"))
    # 20,000 nodes of 20 bytes (ILP32) and 32 (LP64): x32 is i386's size, not x86_64's.
    assert abs(x32 - i386) < 0.1 * i386 and x32 < lp64
    # Counted in the guest, user space only, between the init's marks around each program.
    counts = {a: t["instructions"] for a, t in by_abi.items()}
    assert all(len(c) == 1 and c[0] > 5_000_000 for c in counts.values()), counts
    assert counts["i386"][0] > counts["x86_64"][0]  # 32-bit x86 pays for its 8 registers
    assert "instructions " in done.stdout and "user space" in done.stdout
    assert "emulated: measures QEMU" in done.stdout
    assert ours(str(tmp_path)) == []
    assert list((tmp_path / "t").rglob("*vm*")) == []


@pytest.mark.needs_setup("qemu-system-x86")
def test_an_interrupted_boot_leaves_nothing(cli_env: dict[str, str], debian_cache: Path,
                                            tmp_path: Path) -> None:
    env = _vm_env(cli_env, debian_cache, tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "abibench", "vm", "run", "ptrtree",
                             "--abi", "x32", "--set", "nodes=20000"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    qemu: list[int] = []

    def booting() -> bool:  # the guest's qemu runs (polled, no fixed sleep)
        qemu[:] = ours(str(tmp_path / "t"), "qemu-system")
        return bool(qemu)
    err = interrupt_when(proc, booting, signal.SIGINT, "the guest's qemu", deadline_s=600)
    assert proc.returncode == 130, err
    assert not any(alive(p) for p in qemu)
    assert ours(str(tmp_path)) == []
    assert list((tmp_path / "t").rglob("*vm*")) == []


@pytest.mark.parametrize(("args", "words"), [
    (["ptrtree", "--abi", "armhf"], "no booted system runs armhf"),
    (["flac-decode"], "cannot run in a booted guest: it has [run] setup, after or stdin"),
    (["ptrtree", "--boots", "0"], "--boots and --rounds take a positive number"),
])
def test_what_no_guest_can_run_is_refused_in_one_line(cli: Any, args: list[str],
                                                      words: str) -> None:
    done = cli("vm", "run", *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("abibench: error: ")
    assert words in done.stderr


@pytest.fixture
def guest_parts(debian_cache: Path, shared_cache: Path) -> tuple[str, Path, bytes]:
    """The emulator, Debian's kernel and an initramfs of abibench's init with no jobs."""
    kernel_abi = vm.vm_abis([a for a in ABIS.values() if vm_kernel_abi(a) is not None])
    kernel = vmimage.kernel(kernel_abi, debian_cache)
    image = vmimage.initramfs(vmimage.init_program(shared_cache), {}, vmimage.jobs_text([]))
    return vm.emulator_of(kernel_abi), kernel.path, image


@pytest.mark.needs_setup("qemu-system-x86")
@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.floats(0.0, 3.0))
def test_qemu_stopped_at_any_point_of_a_boot_leaves_nothing(
        guest_parts: tuple[str, Path, bytes], tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch, deadline: float) -> None:
    # The family: qemu ended by the deadline wherever it is (starting, firmware, kernel, init).
    emulator, kernel, image = guest_parts
    tmp = tmp_path_factory.mktemp("vmdeadline")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    started: list[int] = []
    done = vm.boot(emulator, kernel, image, vm.cmdline([]), deadline, started.append)
    assert done.ended.startswith("deadline") or done.ended == "powered off"
    assert started and not alive(started[0])
    assert [p.name for p in (tmp / f"abibench-{os.getuid()}").iterdir()] == []


@pytest.mark.needs_setup("qemu-system-x86")
def test_a_guest_of_a_killed_abibench_is_stopped_by_the_next(cli_env: dict[str, str],
                                                             debian_cache: Path,
                                                             tmp_path: Path) -> None:
    # SIGKILL leaves abibench no way out: its qemu (a session of its own) lives on until the
    # next abibench's clean_stale finds its directory's owner gone.
    env = _vm_env(cli_env, debian_cache, tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "abibench", "vm", "run", "ptrtree",
                             "--abi", "x32", "--set", "nodes=20000"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    qemu: list[int] = []
    try:
        while not qemu and proc.poll() is None:
            qemu = ours(str(tmp_path / "t"), "qemu-system")
            time.sleep(0.05)
        assert qemu
    finally:
        proc.kill()
        proc.wait()
    try:
        done = subprocess.run([sys.executable, "-m", "abibench", "vm", "run", "ptrtree",
                               "--boots", "0"], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 2  # refused, but only after the sweep
    finally:
        survivors = [p for p in qemu if alive(p)]
        for p in survivors:
            os.kill(p, signal.SIGKILL)
    assert survivors == []
    assert list((tmp_path / "t").rglob("*vm*")) == []


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 2**63), max_size=8), st.data())
def test_the_counters_marks_cut_anywhere_give_only_whole_counts(counts: list[int],
                                                                 data: st.DataObject) -> None:
    # Family "a count read from a file qemu was killed while writing": only whole lines count,
    # in order; a cut line or garbage ends the list, never yields a wrong number.
    text = "".join(f"mark insns={n}\n" for n in counts)
    cut = data.draw(st.integers(0, len(text)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "marks"
        path.write_text(text[:cut])
        got = vm.read_marks(path)
    assert list(got) == counts[:len(got)]
    assert len(got) == text[:cut].count("\n")


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.lists(st.sampled_from(["a", "b", "c.lua", "d e"]), min_size=1,
                                max_size=3).map("/".join),
                       st.binary(max_size=64), max_size=6))
def test_an_input_directory_reaches_the_guest_file_by_file(tree: dict[str, bytes]) -> None:
    # Family "a workload's input the guest does not get whole": every regular file of an input
    # directory is in the image under the input's guest path, and nothing else is.
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "scripts"
        root.mkdir()
        written = {}
        for rel, data in tree.items():
            path = root / rel
            if any(p.is_file() for p in path.parents) or path.is_dir():
                continue  # a name that is already a file's or a directory's
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            written[rel] = data
        got = vm.input_files("inputs/lua/scripts", root)
        assert {g: p.read_bytes() for g, p in got.items()} == \
            {f"inputs/lua/scripts/{rel}": data for rel, data in written.items()}
        (root / "link").symlink_to("/etc/passwd")
        with pytest.raises(UsageError, match="not a regular file"):
            vm.input_files("inputs/lua/scripts", root)
