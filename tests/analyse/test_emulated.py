"""The analysis of emulated targets, from stored documents alone: no speed verdict, memory net
of the emulator within the family, instruction counts per family, sizes against the family's
64-bit ABI, and an export of a run by an older abibench still imports."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from abibench.analyse import report as analysis
from abibench.analyse.results import analyse, count_verdict, family_reference
from abibench.analyse.sizes import size_notes, size_rows
from abibench.records import Artifact, RunDoc
from abibench.store.exchange import document

ALL = ("i386", "x86_64", "armhf", "aarch64")
RATES = {"i386": 90.0, "x86_64": 100.0, "armhf": 9.0, "aarch64": 10.0}


def _four_way(make_doc: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    doc = make_doc(targets=ALL, workloads={"tree": RATES}, rounds=4)
    for s in doc["samples"]:
        arm = s["target"] in ("armhf", "aarch64")
        s["emulated"] = arm
        if arm:  # the emulator's 15 MB under a program of 5 (armhf) or 10 MB (aarch64)
            s["max_rss_kb"] = 15_000 + (5_000 if s["target"] == "armhf" else 10_000)
    for t, n in (("i386", 1200), ("x86_64", 1000), ("armhf", 1080), ("aarch64", 1000)):
        base = {k: v for k, v in doc["samples"][0].items()}
        doc["samples"].append({**base, "target": t, "kind": "counters", "instructions": n,
                               "round": 9, "emulated": t in ("armhf", "aarch64")})
    for t, kb in (("armhf", 14_900), ("aarch64", 15_100)):
        for _ in range(3):
            base = {k: v for k, v in doc["samples"][0].items()}
            doc["samples"].append({**base, "target": t, "kind": "baseline", "check": None,
                                   "max_rss_kb": kb, "round": 10, "emulated": True})
    doc["host"]["emulators"] = {"armhf": "qemu-arm version 7.2.22",
                                "aarch64": "qemu-aarch64 version 7.2.22"}
    return doc


def test_emulated_targets_get_no_speed_verdict_but_counts_and_net_memory(
        make_doc: Callable[..., dict[str, Any]]) -> None:
    doc = document(_four_way(make_doc), "four-way")
    (res,) = analyse(doc)
    assert [(c.a, c.b) for c in res.comparisons] == [("i386", "x86_64")]
    assert [(c.a, c.b) for c in res.memory] == [("i386", "x86_64")]
    rows = {r.label: r for r in res.rows}
    assert rows["armhf"].emulated and not rows["x86_64"].emulated
    assert rows["armhf"].net_rss_kb == 20_000 - 14_900
    assert rows["aarch64"].net_rss_kb == 25_000 - 15_100
    (mem,) = res.emulated_memory
    assert (mem.a, mem.b) == ("armhf", "aarch64")
    assert mem.ratio.ratio == pytest.approx((20_000 - 14_900) / (25_000 - 15_100))
    assert mem.verdict.text.startswith("armhf is 48.5% smaller")
    assert mem.verdict.text.endswith("[emulated estimate]")
    assert res.emulation == ["armhf, aarch64: emulated: measures QEMU, not an ARM CPU; times "
                             "are shown, never a speed verdict; peak memory includes the "
                             "emulator's own (net estimate below)"]
    assert [(c.a, c.b, c.text) for c in res.counts] == [
        ("i386", "x86_64", "x86_64 executes 16.7% fewer instructions than i386 [exact]"),
        ("armhf", "aarch64", "aarch64 executes 7.4% fewer instructions than armhf [exact]")]
    rep = analysis.from_run(doc)
    (block,) = rep.workloads
    assert block.reference == "x86_64"
    assert all("arm" not in d.label and "aarch64" not in d.label for d in block.diffs)
    assert [(s.a, s.b) for s in rep.suites] == [("i386", "x86_64")]


def test_only_emulated_targets_compare_nothing_in_time(
        make_doc: Callable[..., dict[str, Any]]) -> None:
    raw = _four_way(make_doc)
    keep = ("armhf", "aarch64")
    raw["samples"] = [s for s in raw["samples"] if s["target"] in keep]
    raw["run"]["config"]["workloads"]["tree"]["targets"] = list(keep)
    raw["artifacts"] = [a for a in raw["artifacts"] if a["target"] in keep]
    rep = analysis.from_run(document(raw, "arm only"))
    (block,) = rep.workloads
    assert block.reference is None and not block.diffs and not rep.suites
    assert len(block.result.emulated_memory) == 1 and len(block.result.counts) == 1


def test_count_words_and_family_references() -> None:
    assert count_verdict("armhf", "aarch64", 100, 100).text == \
        "armhf and aarch64 execute the same number of instructions [exact]"
    assert count_verdict("x32", "x86_64", 100, 110).text == \
        "x86_64 executes 10.0% more instructions than x32 [exact]"
    labels = ["i386", "x86_64", "armhf", "aarch64", "i386/debian", "x86_64/debian"]
    assert family_reference("armhf", labels) == "aarch64"
    assert family_reference("i386", labels) == "x86_64"
    assert family_reference("i386/debian", labels) == "x86_64/debian"
    assert family_reference("armhf", ["armhf", "x86_64"]) is None


def test_sizes_compare_armhf_with_aarch64_and_explain_its_padding() -> None:
    def art(target: str, file: int, text: int, stripped: int) -> Artifact:
        return Artifact.from_dict({"workload": "w", "target": target, "bin_dir": f"/b/{target}",
                                   "files": ["p"], "sizes": {"p": {
                                       "file": file, "text": text, "data": 700, "bss": 8,
                                       "stripped": stripped}}})

    rows = size_rows([art("i386", 15_000, 6_000, 13_000), art("x86_64", 16_000, 6_500, 14_000),
                      art("armhf", 12_000, 6_000, 9_000), art("aarch64", 71_000, 6_700, 67_000)])
    by = {r.target: r for r in rows}
    assert by["armhf"].reference == "aarch64" and by["i386"].reference == "x86_64"
    assert by["armhf"].stripped_larger_pct == round(100 * (67_000 / 9_000 - 1), 2)
    (note,) = size_notes(rows)
    assert note.startswith("aarch64 (64 KiB): even stripped") and "max-page-size" in note


def test_an_export_without_the_new_fields_imports(
        make_doc: Callable[..., dict[str, Any]]) -> None:
    old = copy.deepcopy(make_doc())
    for s in old["samples"]:
        assert "emulated" not in s and "clock_mhz" not in s
    doc: RunDoc = document(old, "old export")
    assert not any(s.emulated for s in doc.samples)
    assert all(s.clock_mhz is None and s.throttled is None for s in doc.samples)
    new = _four_way(make_doc)
    assert document(new, "new export").emulated_targets("tree") == {"armhf", "aarch64"}


def test_a_failed_counting_run_is_a_warning_naming_why(
        make_doc: Callable[..., dict[str, Any]]) -> None:
    raw = _four_way(make_doc)
    for s in raw["samples"]:
        if s["kind"] == "counters" and s["target"] == "armhf":
            s.update(status="failed", instructions=None,
                     error="exit code 127: symbol lookup error: undefined symbol: x")
    (res,) = analyse(document(raw, "failed count"))
    assert "armhf: no instruction count: the counting run failed (exit code 127: symbol " \
        "lookup error: undefined symbol: x)" in res.warnings
    assert [(c.a, c.b) for c in res.counts] == [("i386", "x86_64")]


def test_emulated_targets_of_several_machines_get_a_line_each(
        make_doc: Callable[..., dict[str, Any]]) -> None:
    doc = make_doc(targets=("x86_64", "sparc32plus", "sparc64", "mips64el-n32"),
                   workloads={"tree": {"x86_64": 100.0, "sparc32plus": 9.0, "sparc64": 10.0,
                                       "mips64el-n32": 8.0}}, rounds=3)
    for s in doc["samples"]:
        s["emulated"] = s["target"] != "x86_64"
    (res,) = analyse(document(doc, "machines"))
    assert [line.split(";")[0] for line in res.emulation] == [
        "sparc32plus, sparc64: emulated: measures QEMU, not a SPARC CPU",
        "mips64el-n32: emulated: measures QEMU, not a MIPS CPU"]
    assert family_reference("mips64el-o32", ["mips64el-n32", "mips64el-n64", "x86_64"]) == \
        "mips64el-n64"
