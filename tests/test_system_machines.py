"""abibench system's machines, per combination of every family (x86 and ARM), as pure functions.

The combinations, their kernels, images and QEMU command lines are generated from the ABI
table (a new row with a `system_kernel` is covered without a change here); paths are generated
text, commas included: none of them can add an option to QEMU's. No boot here (ARM boots take
minutes of TCG: bench/system_matrix.py --family arm).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.abi import ABIS
from abibench.errors import HostError, UsageError
from abibench.obtain import nsbinfmt
from abibench.obtain.sysimage import foreign_emulator, mmdebstrap_argv
from abibench.obtain.syskernel import KERNELS, ROOT_MODULES, guest_compiler, wanted_modules
from abibench.run import qemuargs
from abibench.run.sysboot import (
    ARM,
    FAMILIES,
    X86,
    Combination,
    cmdline,
    every_combination,
    family_combinations,
    kernel_abi,
    parse_combinations,
)
from abibench.workloads.system import load_system

from .processes import alive, ours, wait_until

COMBOS = every_combination()
_PATHS = st.text(st.characters(codec="utf-8", exclude_characters="\0"),
                 min_size=1, max_size=40).map(lambda t: Path("/tmp") / t.replace("/", "_"))


def split_options(value: str) -> list[str]:
    """QEMU's key=value,... parser: a doubled comma is a comma, a single one ends an option."""
    out, cur, i = [], "", 0
    while i < len(value):
        if value[i] == ",":
            if value[i + 1:i + 2] == ",":
                cur += ","
                i += 2
                continue
            out.append(cur)
            cur = ""
        else:
            cur += value[i]
        i += 1
    return [*out, cur]


def argv_for(combo: Combination, disk: Path, console: Path, report: Path) -> list[str]:
    kabi = kernel_abi(combo.kernel)
    machine = qemuargs.machine_of(kabi, f"/usr/bin/{kabi.system_emulator}")
    return qemuargs.qemu_argv(machine, 1024, console, report, Path("/k/vmlinuz"),
                              Path("/k/initrd.gz"), "quiet", disk=disk)


def test_the_studies_three_systems_per_family() -> None:
    assert set(FAMILIES) >= {"x86", "arm"}
    x86 = (Combination("686-pae", "i386"), Combination("amd64", "i386"),
           Combination("amd64", "x86_64"))
    arm = (Combination("armmp-lpae", "armhf"), Combination("arm64", "armhf"),
           Combination("arm64", "aarch64"))
    assert (x86, arm) == (X86, ARM)
    for family in FAMILIES:
        combos = family_combinations(family)
        bits = [c.bits for c in combos]
        assert bits == [(32, 32), (64, 32), (64, 64)], (family, bits)


@given(st.sampled_from(COMBOS))
@settings(max_examples=30, deadline=None)
def test_every_kernel_is_its_family_and_runs_the_userspace(combo: Combination) -> None:
    kabi, user = kernel_abi(combo.kernel), ABIS[combo.userspace]
    assert kabi.family == user.family
    assert kabi.pointer_bits >= user.pointer_bits
    assert any(m in user.run_on for m in kabi.native_on), combo  # the CPU executes it
    assert KERNELS[combo.kernel] is kabi
    assert kabi.system_emulator and kabi.system_emulator_package
    top = wanted_modules(kabi)
    assert top[:len(ROOT_MODULES)] == ROOT_MODULES
    assert ("virtio_console" in top) == (kabi.system_report == "virtio")


@given(st.sampled_from(COMBOS), _PATHS, _PATHS, _PATHS)
@settings(max_examples=60, deadline=None)
def test_every_machine_is_tcg_fixed_snapshot_and_reports_apart(combo: Combination, disk: Path,
                                                              console: Path,
                                                              report: Path) -> None:
    kabi = kernel_abi(combo.kernel)
    argv = argv_for(combo, disk, console, report)
    assert Path(argv[0]).name == kabi.system_emulator
    assert "-enable-kvm" not in argv and argv[argv.index("-accel") + 1] == "tcg"
    assert argv[argv.index("-m") + 1] == "1024" and argv[argv.index("-smp") + 1] == "1"
    assert argv[argv.index("-nic") + 1] == "none" and "-no-reboot" in argv
    # The board and CPU: the table's, once.
    for opt in ("-M", "-cpu"):
        assert argv.count(opt) == (1 if opt in kabi.system_machine else 0)
    if kabi.family == "arm" and kabi.pointer_bits == 32:
        assert "virt,highmem=off" in argv and "cortex-a15" in argv
    # The console is the first serial port; the report has a port of its own.
    serials = [argv[i + 1] for i, a in enumerate(argv) if a == "-serial"]
    assert serials[0] == f"file:{console}"
    if kabi.system_report == "serial":
        assert serials == [f"file:{console}", f"file:{report}"]
    else:
        assert serials == [f"file:{console}"]
        (chardev,) = [argv[i + 1] for i, a in enumerate(argv) if a == "-chardev"]
        opts = split_options(chardev)
        assert opts[0] == "file" and f"path={report}" in opts and len(opts) == 3
    # The disk: exactly the path, read through a snapshot, whatever the path holds.
    (drive,) = [argv[i + 1] for i, a in enumerate(argv) if a == "-drive"]
    assert split_options(drive) == [f"file={disk}", "format=raw", "if=none", "id=root",
                                    "snapshot=on"]
    assert "virtio-blk-pci,drive=root" in argv


@given(st.sampled_from(COMBOS))
@settings(max_examples=20, deadline=None)
def test_the_kernel_console_and_report_port_match_the_machine(combo: Combination) -> None:
    kabi = kernel_abi(combo.kernel)
    machine = qemuargs.machine_of(kabi, kabi.system_emulator)
    params = qemuargs.kernel_cmdline_console(machine)
    assert params[0] == f"console={kabi.system_console}"
    port = [p for p in params if p.startswith("abibench.port=")]
    assert port == ([] if kabi.system_report == "serial"
                    else [f"abibench.port={qemuargs.VIRTIO_REPORT_DEVICE}"])
    line = cmdline(load_system("minimal"), machine)
    assert shlex.split(line)[:len(params)] == list(params)


@given(st.sampled_from(COMBOS), st.sampled_from(["x86_64", "aarch64", "armv7l"]))
@settings(max_examples=40, deadline=None)
def test_an_image_is_its_userspace_and_foreign_roots_go_through_binfmt(combo: Combination,
                                                                        host: str) -> None:
    user = ABIS[combo.userspace]
    if host not in user.run_on and not user.emulator:
        with pytest.raises(HostError, match=user.name):
            foreign_emulator(user, host)
        return
    emulator = foreign_emulator(user, host)
    assert (emulator is None) == (host in user.run_on)
    argv = mmdebstrap_argv("/usr/bin/mmdebstrap", user.debian_arch, "bookworm",
                           ["systemd-sysv"], Path("/tmp/root"), "http://archive.invalid/debian",
                           emulator)
    assert f"--arch={user.debian_arch}" in argv
    if emulator is None:
        assert argv[0] == "unshare"
    else:
        assert argv[1:3] == ["-m", "abibench.obtain.nsbinfmt"]
        arch = argv[argv.index("--arch") + 1]
        assert arch in nsbinfmt.ARCHES and f"qemu-{arch}" == user.emulator
        assert argv[argv.index("--") + 1] == "unshare"


def test_guest_programs_are_built_by_the_abis_own_compiler() -> None:
    for abi in {kernel_abi(c.kernel) for c in COMBOS} | {ABIS[c.userspace] for c in COMBOS}:
        for host in ("x86_64", "aarch64"):
            if host in abi.native_on:
                assert guest_compiler(abi, host) is None  # the host's gcc with the ABI's flags
            else:
                try:
                    cc = guest_compiler(abi, host)
                except HostError as exc:
                    assert abi.cc_prefix in str(exc)
                else:
                    assert cc is not None and Path(cc).name == f"{abi.cc_prefix}gcc"


@given(st.lists(st.sampled_from(COMBOS), min_size=1, max_size=8))
@settings(max_examples=40, deadline=None)
def test_any_list_of_combinations_reads_back(combos: list[Combination]) -> None:
    text = ",".join(f"{c.kernel}:{c.userspace}" for c in combos)
    assert parse_combinations(text) == tuple(dict.fromkeys(combos))


@pytest.mark.parametrize("family", [*FAMILIES, "all"])
def test_a_family_is_its_combinations(family: str) -> None:
    got = parse_combinations(None, family)
    assert got == (COMBOS if family == "all" else family_combinations(family))


@given(st.text(min_size=1, max_size=30))
@settings(max_examples=40, deadline=None)
def test_an_unknown_combination_or_family_is_refused(text: str) -> None:
    if text not in (*FAMILIES, "all"):
        with pytest.raises(UsageError):
            parse_combinations(None, text)
    known = {f"{c.kernel}:{c.userspace}" for c in COMBOS}
    if all(p.strip() not in known for p in text.split(",")):
        with pytest.raises(UsageError):
            parse_combinations(text)


@pytest.mark.needs_setup("gcc-arm-linux-gnueabihf", "gcc-aarch64-linux-gnu", "libc6-dev-i386")
def test_the_guest_programs_build_for_every_combinations_abis(tmp_path: Path) -> None:
    """sysinit for each kernel's ABI, sysreport for each userspace's, with their one frame
    writer (native/frame.h): static, and each file is the ABI it was built for."""
    from abibench.abi import check_artifact
    from abibench.obtain.sysimage import reporter_for
    from abibench.obtain.syskernel import init_for

    for abi in dict.fromkeys(kernel_abi(c.kernel) for c in COMBOS):
        check_artifact(init_for(abi, tmp_path), abi)
    for abi in dict.fromkeys(ABIS[c.userspace] for c in COMBOS):
        check_artifact(reporter_for(abi, tmp_path), abi)


@pytest.mark.needs_setup("qemu-user-static", root=True)
@pytest.mark.parametrize("killed", ["nsbinfmt", "its starter"])
def test_a_killed_foreign_root_build_leaves_no_process_in_its_namespace(killed: str) -> None:
    """nsbinfmt's namespace dies with the process abibench started (a deadline's or Ctrl-C's
    kill of mmdebstrap's wrapper) and with abibench itself (SIGKILL): no emulated dpkg run is
    orphaned."""
    token = f"{os.getpid()}.{time.monotonic_ns()}"
    argv = [sys.executable, "-m", "abibench.obtain.nsbinfmt", "--arch", "arm", "--", "sh", "-c",
            f"sleep 600; : {token}"]
    if killed == "its starter":  # a stand-in for abibench: starts nsbinfmt and waits
        argv = [sys.executable, "-c", f"import subprocess; subprocess.run({argv!r})"]
    outer = subprocess.Popen(argv, stderr=subprocess.PIPE)
    try:
        # Everything up to the command inside the namespace has started.
        if not wait_until(lambda: bool(ours(token, start=b"sh\0-c\0"))
                          or outer.poll() is not None, 30):
            pytest.fail("the command never started in the namespace")
        if outer.poll() is not None:
            err = outer.stderr.read().decode() if outer.stderr else ""
            if "6.7" in err:
                pytest.skip(f"this kernel has no binfmt_misc per namespace: {err.strip()}")
            pytest.fail(err)
        inner = ours(token)
        assert len(inner) >= 4, inner  # nsbinfmt, its middle process, PID 1, the command
    finally:
        outer.kill()
        outer.wait()
    gone = wait_until(lambda: not any(alive(p) for p in inner), 10)
    for pid in [p for p in inner if alive(p)]:  # the test's own leftovers, by PID
        os.kill(pid, 9)
    assert gone, f"left running after a kill of {killed}: {inner}"
