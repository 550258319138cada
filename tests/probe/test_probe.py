from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

Cli = Callable[..., subprocess.CompletedProcess[str]]



def test_probe_json_reports_each_abi(cli: Cli) -> None:
    r = cli("probe", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    abis = {a["abi"]: a for a in data["abis"]}
    assert abis["i386"]["can_build"] and abis["i386"]["can_run"]
    assert abis["x86_64"]["can_build"] and abis["x86_64"]["can_run"]
    assert abis["x32"]["can_build"]
    # This machine's kernel has no x32: the probe must say so and name the fix.
    if not abis["x32"]["can_run"]:
        assert "kernel lacks x32 support" in abis["x32"]["reason"]
        assert "CONFIG_X86_X32_ABI" in abis["x32"]["fix"]
    # setup.sh installs the ARM cross compilers and qemu-user: on this x86 host both ARM ABIs
    # build, and run under the emulator, marked so.
    for arm, qemu in (("armhf", "qemu-arm"), ("aarch64", "qemu-aarch64")):
        assert abis[arm]["can_build"] and abis[arm]["can_run"], abis[arm]
        assert abis[arm]["emulated"] and abis[arm]["emulator"]["command"].endswith(qemu)
        assert "measures QEMU, not an ARM CPU" in abis[arm]["note"]
        assert abis[arm]["emulator"]["version"].startswith(f"{qemu} version ")
    for x86 in ("i386", "x86_64"):
        assert not abis[x86]["emulated"] and abis[x86]["emulator"] is None
    host = data["host"]
    for key in ("cpu_model", "cpus_online", "kernel_release", "kernel_bits", "compilers", "libc",
                "load_average", "governor"):
        assert key in host
    assert host["kernel_bits"] == 64
    assert "gcc" in host["compilers"]


def test_probe_text(cli: Cli) -> None:
    r = cli("probe")
    assert r.returncode == 0
    assert "i386" in r.stdout and "x32" in r.stdout and "armhf" in r.stdout
    assert "runs emulated" in r.stdout and "runs under qemu-arm version" in r.stdout
