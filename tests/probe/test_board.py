"""A single-board computer's context and its throttling, and the ARM-host probe paths that
this x86 machine can take for real (an armhf exec the kernel refuses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from abibench.abi import ABIS
from abibench.analyse.results import board_conditions
from abibench.probe import board
from abibench.probe.abis import probe_abi
from abibench.probe.host import board_context, userspace_abi
from abibench.records import Sample


def _pi(root: Path, *, cur_khz: tuple[int, ...], temp_milli: int, throttled: str | None) -> Path:
    """A directory laid out like a Raspberry Pi 4's /proc and /sys (the files a kernel has)."""
    (root / "proc/device-tree").mkdir(parents=True, exist_ok=True)
    (root / "proc/device-tree/model").write_bytes(b"Raspberry Pi 4 Model B Rev 1.4\0")
    for i, khz in enumerate(cur_khz):
        d = root / f"sys/devices/system/cpu/cpu{i}/cpufreq"
        d.mkdir(parents=True, exist_ok=True)
        (d / "cpuinfo_max_freq").write_text("1500000\n")
        (d / "scaling_cur_freq").write_text(f"{khz}\n")
    zone = root / "sys/class/thermal/thermal_zone0"
    zone.mkdir(parents=True, exist_ok=True)
    (zone / "temp").write_text(f"{temp_milli}\n")
    if throttled is not None:
        node = root / board.FIRMWARE_THROTTLED
        node.parent.mkdir(parents=True, exist_ok=True)
        node.write_text(f"{throttled}\n")
    return root


def test_a_pi_is_read_from_its_files(tmp_path: Path) -> None:
    root = _pi(tmp_path, cur_khz=(1500000, 1200000), temp_milli=67500, throttled="50005")
    assert board.board_model(root) == "Raspberry Pi 4 Model B Rev 1.4"
    assert board.max_clock_mhz(root) == 1500.0
    now = board.read_now(root)
    assert (now.clock_mhz, now.temp_c, now.throttled) == (1200.0, 67.5, 0x50005)
    assert board.throttle_words(0x50005) == ["under-voltage", "throttled"]
    ctx = board_context(root)
    assert ctx == {"board": "Raspberry Pi 4 Model B Rev 1.4", "cpu_max_mhz": 1500.0,
                   "throttled_since_boot": "under-voltage, throttled"}


def test_a_pc_has_no_board_state(tmp_path: Path) -> None:
    assert board.read_now(tmp_path) == board.Reading(None, None, None)
    assert board_context(tmp_path) == {}
    assert userspace_abi() == "x86_64"  # this Python's own ELF header


def _sample(target: str, rnd: int, clock: float | None, throttled: int | None = 0) -> Sample:
    return Sample(run_id="r", workload="w", target=target, round=rnd, position=0, warmup=False,
                  status="ok", exit_code=0, wall_s=1.0, user_s=1.0, sys_s=0.0, max_rss_kb=1,
                  stdout_digest="d", check=None, clock_mhz=clock, temp_c=50.0 + rnd,
                  throttled=throttled)


def test_samples_run_slowed_down_are_a_warning_on_their_result() -> None:
    samples = [_sample("armhf", r, 1500.0) for r in range(5)]
    samples += [_sample("aarch64", r, 1200.0 if r < 2 else 1500.0) for r in range(5)]
    samples.append(_sample("armhf", 5, 1500.0, throttled=0x4))
    warnings, line = board_conditions(samples, 1500.0)
    assert warnings == ["armhf: throttled: the firmware reported it during 17% of samples "
                        "(throttled)",
                        "aarch64: throttled: 1.2 GHz of 1.5 GHz during 40% of samples"]
    assert line == "after each sample: CPU clock 1200–1500 MHz (maximum 1500), temperature " \
                   "50–55 °C"
    quiet = [_sample("armhf", r, 1500.0) for r in range(3)]
    assert board_conditions(quiet, 1500.0)[0] == []
    assert board_conditions([_sample("x", 0, None, None)], None) == ([], "after each sample: "
                                                                        "temperature 50–50 °C")


def test_armhf_on_an_arm64_kernel_without_aarch32_falls_back_to_the_emulator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As an aarch64 host whose CPU has no AArch32 mode: the armhf test program's real exec
    # fails with ENOEXEC (here because the kernel is x86_64), and the probe says why.
    st = probe_abi(ABIS["armhf"], tmp_path, machine="aarch64", cache_root=tmp_path / "c")
    assert st.can_build and st.can_run and st.emulated, st
    assert st.note and st.note.startswith("this CPU (or kernel) has no AArch32 mode")
    assert "runs under qemu-arm" in st.note
    # without qemu-user: the reason and the package
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "arm-linux-gnueabihf-gcc").symlink_to("/usr/bin/arm-linux-gnueabihf-gcc")
    monkeypatch.setenv("PATH", str(bin_dir))
    st = probe_abi(ABIS["armhf"], tmp_path, machine="aarch64", cache_root=tmp_path / "c")
    assert st.can_build and not st.can_run
    assert st.reason and "no AArch32 mode" in st.reason and "qemu-arm is not installed" in \
        st.reason
    assert st.fix == "apt-get install qemu-user"


def test_a_missing_armhf_loader_is_named_even_when_a_binfmt_handler_takes_the_exec(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # On an arm64 host whose armhf programs go to qemu-user-static through binfmt_misc, a
    # program without its loader does not fail with ENOENT: the handler prints its own error
    # and exits 255. That exit is what this host cannot produce, so it stands in for the exec.
    import dataclasses

    from abibench.probe import abis as probe_abis

    monkeypatch.setattr(probe_abis, "_run_probe", lambda argv: 255)
    armhf = dataclasses.replace(ABIS["armhf"], loader=str(tmp_path / "lib/ld-linux-armhf.so.3"))
    st = probe_abi(armhf, tmp_path, machine="aarch64", cache_root=tmp_path / "c")
    # qemu-arm is installed here, so the probe goes on to emulation and keeps the reason.
    assert st.can_run and st.emulated, st
    assert (st.note or "").startswith(f"the armhf loader {armhf.loader} is not installed"), st
