"""The server's load as fixed work, the guest's zoneinfo, and mmdebstrap's cached trees.

The family of the load's bug: a system measured "after load" at a moment that is not the end of
the same work everywhere (a load cut by its time limit under TCG, a load that failed part-way,
or a record from before the load was fixed work). The tests generate load outcomes (exit
status, guard, duration, what was counted) and hold the invariant "after load means after the
same whole work" (analyse/system.counted) for every one of them.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.system import (
    analyse,
    available_parts,
    combo_result,
    counted,
    load_done,
)
from abibench.codec import decoder, encode
from abibench.obtain.sysimage import image_key, mmdebstrap_argv, root_key
from abibench.run.sysboot import Combination, SysBoot, parse_sysreport
from abibench.run.sysrecord import boot_record, system_config
from abibench.run.vm import fnv1a
from abibench.sysrecords import SystemBoot, SystemPhase, check_system
from abibench.workloads.system import SystemProfile, load_system, parse_system

COMBO = Combination("amd64", "i386")
ZONE_FIELDS = ("min", "low", "high", "spanned", "present", "managed", "protection")


def hashed(body: str) -> bytes:
    return f"{body} {fnv1a(body.encode()):08x}\n".encode()


_WORK = st.dictionaries(st.sampled_from(["requests", "inserts", "selects", "x_y"]),
                        st.integers(0, 10**6), max_size=4)
# (exit status, guard seconds or 0, duration ms, counted work), or None: no load frames at all
_LOAD = st.none() | st.tuples(st.sampled_from([0, 0, 0, 1, 2, 3, 137]),
                              st.sampled_from([0, 0, 0, 1200]), st.integers(0, 10**7), _WORK)
_ZONES = st.dictionaries(st.sampled_from(["DMA", "DMA32", "Normal", "HighMem", "Movable"]),
                         st.tuples(*(st.integers(0, 10**8) for _ in ZONE_FIELDS)), max_size=4)


def report(used_kb: int, load: tuple[int, int, int, dict[str, int]] | None,
           zones: dict[str, tuple[int, ...]], duration: bool = True) -> bytes:
    """A whole report as native/sysreport.c writes it: idle, the load's frames, then "load"."""
    frames = [f"ABIBENCH-SYS 1 BEGIN {b'6.1.0-50-amd64'.hex()} {b'x86_64'.hex()}"]
    phases = ["idle"] + (["load"] if load is not None else [])
    for i, ph in enumerate(phases):
        if ph == "load" and load is not None:
            status, guard, ms, work = load
            frames += [f"C load {k.encode().hex()} {v}" for k, v in work.items()]
            frames += [f"D load {ms} {guard}"] * duration + [f"X load {status}"]
        frames += [f"Y {ph} {b'running'.hex()}", f"S {ph} {1000 + i}",
                   f"M {ph} MemTotal 1000000", f"M {ph} MemAvailable {1_000_000 - used_kb - i}"]
        frames += [f"Z {ph} {z.encode().hex()} {f} {v}"
                   for z, vals in zones.items() for f, v in zip(ZONE_FIELDS, vals, strict=True)]
    frames.append(f"ABIBENCH-SYS 1 END {len(frames)}")
    return b"".join(hashed(f) for f in frames)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1000, 500_000), _LOAD), min_size=1, max_size=6), _ZONES)
def test_after_load_holds_exactly_the_boots_that_did_the_whole_work(
        boots_in: list[tuple[int, tuple[int, int, int, dict[str, int]] | None]],
        zones: dict[str, tuple[int, ...]]) -> None:
    boots: list[SystemBoot] = []
    for used, load in boots_in:
        rep = parse_sysreport(report(used, load, zones))
        assert rep.complete
        if load is not None:  # the load's frames read back exactly
            assert (rep.load_status, rep.load_guard_s, rep.load_work) == \
                (load[0], load[1], load[3])
            assert rep.load_s == load[2] / 1000
        for ph in rep.phases.values():  # and the zones
            assert ph.zoneinfo == {f"{z}.{f}": v for z, vals in zones.items()
                                   for f, v in zip(ZONE_FIELDS, vals, strict=True)}
        b = boot_record(len(boots), SysBoot(COMBO, rep, 100.0, "powered off", ""))
        # what the store and an import read back is the same record, and a guest's
        again = decoder(SystemBoot)(encode(b))
        assert again == b
        boots.append(b)
    config = system_config(load_system("server"), (COMBO,), len(boots), 0, {}, {})
    check_system(config, boots)
    whole = [b for b, (_, load) in zip(boots, boots_in, strict=True)
             if load is not None and load[0] == 0 and load[1] == 0]
    result = combo_result(boots, COMBO, "load")
    assert result.ok == len(whole) == sum(counted(b, "load") for b in boots)
    assert all(load_done(b) for b in whole)
    analysis = analyse(config, boots)
    cut = [b for b in boots if "load" in b.phases and b not in whole]
    for b in cut:  # every boot left out is said, by its number
        assert any(f"boot {b.index + 1}'s load" in p for p in analysis.problems)
    assert ("load" in analysis.provenance) == bool(whole)
    assert combo_result(boots, COMBO, "idle").ok == len(boots)  # idle keeps every boot


def test_a_record_from_before_fixed_work_is_not_counted_after_load() -> None:
    # No D frame: the old measuring service measured while the load ran.
    rep = parse_sysreport(report(5000, (0, 0, 0, {}), {}, duration=False))
    assert rep.complete
    b = boot_record(0, SysBoot(COMBO, rep, 1.0, "powered off", ""))
    assert "load" in b.phases and b.load_s is None and not load_done(b)
    config = system_config(load_system("server"), (COMBO,), 1, 0, {}, {})
    assert any("while it ran" in p for p in analyse(config, [b]).problems)


_PACKAGES = st.lists(st.sampled_from(["systemd-sysv", "cron", "curl", "nginx-light"]),
                     min_size=1, max_size=4)


@settings(max_examples=30, deadline=None)
@given(_PACKAGES, st.text("abc ;\n", max_size=20), st.sampled_from(["i386", "armhf"]))
def test_the_tree_depends_on_the_packages_alone_the_disk_on_everything(
        packages: list[str], load: str, arch: str) -> None:
    def profile(load_: str) -> SystemProfile:
        return parse_system("p", {"packages": packages, "load": load_}, "p.toml")
    a, b = profile(""), profile(load or "x")
    assert root_key(arch, "bookworm", packages) == \
        root_key(arch, "bookworm", list(reversed(packages)) * 2)
    assert root_key(arch, "bookworm", packages) != root_key("arm64", "bookworm", packages)
    reporter = Path("/c/sysreport-abc/sysreport")
    assert image_key(a, arch, reporter) != image_key(b, arch, reporter)


def test_mmdebstrap_writes_the_tree_as_a_tarball() -> None:
    argv = mmdebstrap_argv("/usr/bin/mmdebstrap", "armhf", "bookworm", ["curl", "cron"],
                           Path("/c/.root-x/root.tar"), "http://archive.example/debian",
                           "qemu-arm")
    assert argv[-3:] == ["bookworm", "/c/.root-x/root.tar",
                         "deb http://archive.example/debian bookworm main"]
    assert "--include=cron,curl" in argv and "--arch=armhf" in argv


def test_the_server_load_is_fixed_work_that_it_counts() -> None:
    server = load_system("server")
    # a guard far beyond what the work takes, and the counts the report and analysis name
    assert server.load_seconds >= 600 and server.load_after_s <= 30
    for name in ("requests", "inserts", "selects"):
        assert f'echo "{name} ' in server.load
    assert "exit 3" in server.load  # the load fails unless it did all its work


def _host_phase() -> SystemPhase:
    """This host's own /proc/meminfo and /proc/zoneinfo as a guest would report them."""
    meminfo = {re.sub(r"[^A-Za-z0-9_]", "_", k): int(v.split()[0]) for k, v in
               (line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())}
    zoneinfo: dict[str, int] = {}
    zone = ""
    page_kb = os.sysconf("SC_PAGESIZE") // 1024
    for line in Path("/proc/zoneinfo").read_text().splitlines():
        if m := re.match(r"Node \d+, zone\s+(\S+)", line):
            zone = m[1]
        elif m := re.match(r"\s+(min|low|high|spanned|present|managed)\s+(\d+)$", line):
            zoneinfo[f"{zone}.{m[1]}"] = int(m[2]) * page_kb
        elif m := re.match(r"\s+protection: \((.*)\)", line):
            zoneinfo[f"{zone}.protection"] = max(map(int, m[1].split(","))) * page_kb
    return SystemPhase("running", 1.0, meminfo=meminfo, zoneinfo=zoneinfo)


def test_memavailable_taken_apart_adds_up_on_this_hosts_kernel() -> None:
    # The decomposition is Linux's own formula: on the running kernel its parts add up to
    # MemTotal - MemAvailable (to what moves between two reads of /proc).
    parts = available_parts(_host_phase())
    assert parts and all(math.isfinite(v) and v >= 0 for v in parts.values())
    assert abs(parts["model"] - parts["used"]) < 64
    assert parts["reserve"] > 0 and parts["kept"] >= 0
    assert available_parts(SystemPhase("running", 1.0, meminfo={"MemTotal": 1})) == {}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([Combination("686-pae", "i386"), Combination("amd64", "i386"),
                        Combination("armmp-lpae", "armhf"), Combination("arm64", "armhf")]),
       st.integers(0, 400_000))
def test_a_32_bit_kernels_huge_pages_missing_from_pss_are_said(combo: Combination,
                                                               huge_kb: int) -> None:
    frames = [f"ABIBENCH-SYS 1 BEGIN {b'6.1'.hex()} {b'x'.hex()}", "Y idle 72756e6e696e67",
              "S idle 1000", "M idle MemTotal 1000000", "M idle MemAvailable 900000",
              f"M idle AnonHugePages {huge_kb}"]
    frames.append(f"ABIBENCH-SYS 1 END {len(frames)}")
    rep = parse_sysreport(b"".join(hashed(f) for f in frames))
    b = boot_record(0, SysBoot(combo, rep, 1.0, "powered off", ""))
    config = system_config(load_system("minimal"), (combo,), 1, 0, {}, {})
    said = [n for n in analyse(config, [b]).notes if "transparent huge pages" in n]
    assert bool(said) == (combo.bits[0] == 32 and huge_kb >= 1024)
