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
    for arm in ("armhf", "aarch64"):
        assert not abis[arm]["can_run"] and "needs an ARM host" in abis[arm]["reason"]
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
