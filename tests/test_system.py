"""abibench system: whole Debian systems booted per kernel/userspace combination.

The fast tests generate what the guest's measuring service writes (native/sysreport.c's frames)
and damage it anywhere: only verified whole frames count, and a report cut short is never
complete. Module load orders are generated as dependency graphs; profiles and apt sources as
text. The slow tests (tests/test_system_boot.py) boot real systems.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.system import (
    LARGEST_ANON,
    analyse,
    combo_result,
    compare,
    figures,
    units,
)
from abibench.errors import ProfileError
from abibench.obtain.apt import PackageError
from abibench.obtain.sysimage import archive_uri
from abibench.obtain.syskernel import load_order, modinfo_depends
from abibench.report import system as shown
from abibench.run.sysboot import (
    X86,
    Combination,
    SysBoot,
    boot_order,
    parse_combinations,
    parse_sysreport,
)
from abibench.run.sysrecord import boot_record, phase_record, system_config
from abibench.sysrecords import SystemBoot, SystemConfig
from abibench.workloads.system import load_system, parse_system

from .sysframes import GuestPhase, guest_report, hashed

# ------------------------------------------------------------------------------ report frames


_KEYS = st.sampled_from(["MemTotal", "MemAvailable", "Slab", "PageTables", "KernelStack",
                         "Cached", "Buffers", "Shmem", "AnonPages"])
_PROCS = st.lists(st.tuples(st.integers(1, 10**6), st.integers(0, 10**7), st.integers(0, 10**7),
                            st.binary(max_size=20), st.binary(max_size=60)), max_size=12)


def report_bytes(meminfo: dict[str, int], procs: list[tuple[int, int, int, bytes, bytes]],
                 image: list[int], state: bytes = b"running") -> bytes:
    """A whole report as native/sysreport.c writes it (idle phase only)."""
    return guest_report({"idle": GuestPhase(
        meminfo, state, 61234, [(f"Kernel part{i}".encode(), n) for i, n in enumerate(image)],
        procs)})


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(_KEYS, st.integers(0, 10**9)), _PROCS,
       st.lists(st.integers(1, 10**8), max_size=4))
def test_every_figure_reads_back_exactly(meminfo: dict[str, int],
                                         procs: list[tuple[int, int, int, bytes, bytes]],
                                         image: list[int]) -> None:
    rep = parse_sysreport(report_bytes(meminfo, procs, image))
    assert rep.complete and rep.machine == "x86_64"
    ph = rep.phases["idle"]
    assert ph.meminfo == meminfo and ph.uptime_s == 61.234 and ph.state == "running"
    assert [(p.pid, p.pss_kb, p.rss_kb) for p in ph.processes] == [p[:3] for p in procs]
    assert sum(ph.kernel_image.values()) == sum(image)
    got = figures(phase_record(ph))
    assert all(math.isfinite(v) and v >= 0 for v in got.values())
    if procs:
        assert got["userspace"] == pytest.approx(sum(p[1] for p in procs) / 1024)


@settings(max_examples=60, deadline=None)
@given(_PROCS, st.data())
def test_a_report_cut_or_garbled_anywhere_is_never_complete(
        procs: list[tuple[int, int, int, bytes, bytes]], data: st.DataObject) -> None:
    # The family: any damage to the byte stream (a deadline cuts it, a stray byte lands in it).
    whole = report_bytes({"MemTotal": 1000, "MemAvailable": 500}, procs, [4096])
    at = data.draw(st.integers(0, len(whole) - 1))
    junk = data.draw(st.binary(min_size=1, max_size=8))
    for damaged in (whole[:at], whole[:at] + junk + whole[at + 1:]):
        if damaged == whole:
            continue
        try:
            rep = parse_sysreport(damaged)
        except ValueError:
            continue  # no BEGIN frame survived: reported nothing
        assert not rep.complete or damaged.endswith(whole[-30:])
        idle = rep.phases.get("idle")
        for p in idle.processes if idle is not None else []:
            assert (p.pid, p.pss_kb, p.rss_kb) in [q[:3] for q in procs]


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=80))
def test_what_a_process_calls_itself_cannot_forge_a_frame(comm: str) -> None:
    forged = f"x\nM idle MemTotal 1\n{comm}".encode()
    rep = parse_sysreport(report_bytes({"MemTotal": 7, "MemAvailable": 3},
                                       [(1, 10, 20, forged, b"/init.scope")], []))
    assert rep.phases["idle"].meminfo["MemTotal"] == 7
    assert "\n" not in rep.phases["idle"].processes[0].comm


# ----------------------------------------------------------------------------- kernel modules


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.lists(st.integers(0, n - 1), max_size=3), min_size=n, max_size=n))))
def test_every_module_loads_after_what_it_needs(graph: tuple[int, list[list[int]]]) -> None:
    n, deps = graph
    # acyclic by construction: module i may depend only on modules of lower number
    edges = {f"m{i}": sorted({f"m{d % i}" for d in deps[i]}) if i else [] for i in range(n)}
    blobs = {m: b"\x7fELF..\0license=GPL\0depends=" + ",".join(d).encode() + b"\0name=" +
             m.encode() + b"\0" for m, d in edges.items()}
    assert all(modinfo_depends(blobs[m]) == edges[m] for m in edges)
    order = load_order((f"m{n - 1}", "m0"), blobs)
    assert len(order) == len(set(order))
    for m in order:
        assert all(order.index(d) < order.index(m) for d in edges[m])


def test_a_module_the_package_lacks_is_named() -> None:
    with pytest.raises(PackageError, match="no module jbd2"):
        load_order(("ext4",), {"ext4": b"\0depends=jbd2,mbcache\0", "mbcache": b""})


# ------------------------------------------------------------------ profiles, sources, options


def test_the_builtin_systems_load() -> None:
    minimal, server = load_system("minimal"), load_system("server")
    assert "systemd-sysv" in minimal.packages and server.load
    fedora = next(p for p in minimal.published if not p.mb_32)
    assert fedora.increase_pct == 60.0  # the Pi 400's: tests/test_system_desktop.py


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["packages", "services", "settle", "memory_mb", "release", "nonsense",
                        "published"]),
       st.one_of(st.integers(-10, 10**9), st.text(max_size=20), st.lists(st.text(max_size=5)),
                 st.booleans()))
def test_a_bad_system_table_is_one_line_naming_the_key(key: str, value: object) -> None:
    try:
        parse_system("t", {key: value}, "t.toml")
    except ProfileError as exc:
        msg = str(exc)
        assert "\n" not in msg and msg.startswith("t.toml: ")
        assert key in msg or key == "published"


def test_the_archive_is_read_from_apt_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "d.sources").write_text(
        "Types: deb\nURIs: http://example.invalid/sec\nSuites: bookworm-security\n\n"
        "Types: deb-src\nURIs: http://example.invalid/src\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://example.invalid/debian/\nSuites: bookworm bookworm-updates\n")
    assert archive_uri("bookworm", tmp_path) == "http://example.invalid/debian"
    (tmp_path / "sources.list.d" / "d.sources").unlink()
    (tmp_path / "sources.list").write_text("deb [arch=amd64] file:///srv/mirror bookworm main\n")
    assert archive_uri("bookworm", tmp_path) == "file:///srv/mirror"
    with pytest.raises(Exception, match="no Debian archive for trixie"):
        archive_uri("trixie", tmp_path)


def test_combinations_and_their_order() -> None:
    assert parse_combinations(None) == X86
    assert parse_combinations("amd64:i386") == (Combination("amd64", "i386"),)
    with pytest.raises(Exception, match="abibench boots"):
        parse_combinations("amd64:armhf")
    order = boot_order(X86, 4, seed=1)
    assert sorted(order, key=str) == sorted(X86 * 4, key=str)
    assert all(set(order[i:i + 3]) == set(X86) for i in range(0, 12, 3))


# ---------------------------------------------------------------------------- analysis, report


def _run(used: dict[Combination, list[int]]) -> tuple[SystemConfig, list[SystemBoot]]:
    boots: list[SystemBoot] = []
    for combo, values in used.items():
        for v in values:
            rep = parse_sysreport(report_bytes(
                {"MemTotal": 1_000_000, "MemAvailable": 1_000_000 - v, "Slab": 20000,
                 "PageTables": 1000, "KernelStack": 1500, "Cached": 30000, "Buffers": 1000},
                [(1, v // 2, v, b"systemd", b"/init.scope")], [1 << 20]))
            boots.append(boot_record(len(boots), SysBoot(combo, rep, 100.0, "powered off", "")))
    # desktop names both published figures (the Pi 400's and Fedora's)
    return system_config(load_system("desktop"), tuple(used), 3, 0, {}, {}), boots


def test_a_clear_difference_is_a_verdict_with_its_interval() -> None:
    a, b = X86[2], X86[1]
    config, boots = _run({b: [60000, 61000, 60500], a: [95000, 96000, 95500]})
    cmp = compare(combo_result(boots, a, "idle"), combo_result(boots, b, "idle"))
    assert cmp is not None and cmp.significant and 55 < cmp.percent < 60
    assert cmp.low < cmp.percent < cmp.high
    assert cmp.sentence.startswith("the amd64 kernel + x86_64 system uses 58% more memory")
    result = analyse(config, boots)
    text = "\n".join(shown.text_lines(result))
    assert "someone else's hardware: Raspberry Pi 400" in text and "103 vs 196 MB" in text
    assert "<svg" in shown.to_html(result) and "| amd64 kernel + i386 |" in shown.to_markdown(
        result)
    assert shown.to_json(result)["published"][0]["someone_elses_hardware"] is True  # type: ignore[index]


def test_the_harness_and_the_load_driver_are_not_the_system() -> None:
    rep = parse_sysreport(report_bytes(
        {"MemTotal": 1000, "MemAvailable": 400},
        [(1, 2048, 4096, b"systemd", b"/init.scope"),
         (90, 1024, 2048, b"curl", b"/system.slice/abibench-report.service")], []))
    ph = phase_record(rep.phases["idle"])
    assert figures(ph)["userspace"] == 2.0 and "abibench-report.service" not in units(ph)


def test_a_boot_that_reported_nothing_is_a_problem_not_a_zero() -> None:
    config, boots = _run({X86[1]: [60000, 61000]})
    bad = boot_record(2, SysBoot(X86[1], None, 900.0, "deadline of 900 s", "Kernel panic"))
    result = analyse(config, [*boots, bad])
    r = result.results[0]
    assert (r.boots, r.ok) == (3, 2) and min(r.used) > 0
    assert any("deadline of 900 s" in p for p in result.problems)


@pytest.mark.parametrize(("args", "words"), [
    (["nosuch"], "no system profile 'nosuch': choose one of desktop, minimal, server"),
    (["minimal", "--combo", "amd64:armhf"], "abibench boots 686-pae:i386"),
    (["minimal", "--boots", "0"], "--boots takes a positive number"),
    (["minimal", "--family", "mips"], "abibench boots whole systems of x86, arm, all"),
])
def test_what_no_system_run_can_do_is_refused_in_one_line(cli: Any, args: list[str],
                                                          words: str) -> None:
    done = cli("system", "run", *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("abibench: error: ")
    assert words in done.stderr


_MAPS = st.lists(st.tuples(st.sampled_from([b"[heap]", b"[anon]", b"[anon 131072 kB]",
                                            b"/usr/sbin/mariadbd"]) | st.binary(max_size=40),
                           *(st.integers(0, 10**9) for _ in range(5))), max_size=10)


@settings(max_examples=40, deadline=None)
@given(_MAPS, st.integers(1, 500))
def test_a_big_processs_mappings_read_back_and_sum_per_name(
        maps: list[tuple[bytes, int, int, int, int, int]], threads: int) -> None:
    # native/sysreport.c's breakdown: "G" frames per mapping name, "T" the thread count.
    frames = [f"ABIBENCH-SYS 1 BEGIN {b'6.1'.hex()} {b'i686'.hex()}", "Y idle 72756e6e696e67",
              "S idle 1000", "M idle MemTotal 1000", "M idle MemAvailable 10",
              f"P idle 300 {10**6} {10**6} {b'mariadbd'.hex()} {b'/m.service'.hex()}"]
    frames += [f"G idle 300 {name.hex() or '-'} " + " ".join(map(str, nums))
               for name, *nums in maps]
    frames += [f"T idle 300 {threads}", f"ABIBENCH-SYS 1 END {len(frames) + 1}"]
    rep = parse_sysreport(b"".join(hashed(f) for f in frames))
    assert rep.complete
    ph = phase_record(rep.phases["idle"])
    assert [(m.count, m.size_kb, m.rss_kb, m.pss_kb, m.anon_kb) for m in ph.mappings] == \
        [tuple(nums) for _, *nums in maps]
    assert ph.threads == {"300": threads}
    boot = boot_record(0, SysBoot(Combination("amd64", "i386"), rep, 1.0, "powered off", ""))
    r = combo_result([boot], Combination("amd64", "i386"), "idle")
    total = sum(nums[3] for _, *nums in maps) / 1024
    kinds = {k: e for k, e in r.breakdown.items() if LARGEST_ANON not in k}
    assert sum(e.median for e in kinds.values()) == pytest.approx(
        total, abs=0.5 * (len(maps) + 1))  # kinds below 0.5 MiB are not listed
    assert r.threads["mariadbd"].median == threads
