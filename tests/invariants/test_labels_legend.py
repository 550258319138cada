"""Invariant "a label that carries provenance is shown short, its provenance said once"
(docs/reliability.md): generated over runs with targets of every kind (built from source,
prebuilt, Debian's binaries, any mix of them on any ABIs) and workloads that are one program or
the points of a sweep. Every label a report shows is short (its ABI, unless two targets share
it), unique in the run, and the legend names each one's provenance, in the terminal, Markdown
and HTML alike."""

from __future__ import annotations

import html
import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse import report as analysis
from abibench.labels import abi_of, short_labels
from abibench.records import Artifact, RunDoc
from abibench.report import html as html_report
from abibench.report import markdown, terminal
from tests.documents import partial_doc

SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))
ABIS = ("i386", "x86_64", "x32", "armhf", "aarch64")
KINDS = ("source", "prebuilt", "debian")


def _label(abi: str, kind: str) -> str:
    return abi if kind == "source" else f"{abi}/{kind}"


def _artifact(workload: str, target: str, kind: str) -> Artifact:
    abi = abi_of(target)
    common: dict[str, Any] = {"workload": workload, "abi": abi, "target": target,
                              "provenance": kind, "files": (f"prog-{abi}",)}
    if kind == "prebuilt":
        return Artifact(bin_dir=f"/given/{abi}-dir", **common)
    if kind == "debian":
        return Artifact(bin_dir="/usr/bin", compiler_version=f"Debian {abi} build",
                        debian_packages={f"pkg-{abi}": "1.2-3"}, **common)
    # a build system whose version line lacks its name (meson prints "1.0.1"), and a compiler
    return Artifact(bin_dir=f"/cache/{abi}/bin", compiler=f"cc-{abi}",
                    compiler_version=f"1.0.1; cc-{abi} (Tool) 9.9",
                    toolchain={"/opt/bin/meson": "1.0.1", "cc": f"cc-{abi} (Tool) 9.9"}, **common)


def _doc(targets: list[tuple[str, str]], points: list[str]) -> RunDoc:
    labels = [_label(a, k) for a, k in targets]
    workloads = {p: {"primary": "wall", "targets": labels} for p in points}
    samples = [{"workload": p, "target": t, "round": r, "wall_s": 1.0 + 0.1 * i + 0.01 * r,
                "user_s": 1.0, "check": "same"}
               for p in points for i, t in enumerate(labels) for r in range(1, 4)]
    doc = partial_doc(workloads, samples)
    arts = tuple(_artifact(p, _label(a, k), k) for p in points for a, k in targets)
    return RunDoc(doc.run, doc.host, doc.samples, artifacts=arts)


targets_st = st.lists(st.tuples(st.sampled_from(ABIS), st.sampled_from(KINDS)), min_size=1,
                      max_size=5, unique=True)
# one program, or the points of a sweep over n
points_st = st.one_of(st.just(["w"]), st.lists(st.sampled_from(["10", "100", "1000"]),
                                               min_size=2, max_size=3, unique=True)
                      .map(lambda ns: [f"w[n={n}]" for n in ns]))


@settings(max_examples=6 * SCALE, deadline=None)
@given(targets_st, points_st)
def test_labels_are_short_unique_and_the_legend_names_each_provenance(
        targets: list[tuple[str, str]], points: list[str]) -> None:
    rep = analysis.from_run(_doc(targets, points))
    stored = [_label(a, k) for a, k in targets]
    shown = {x.target: x.label for x in rep.legend}
    # one legend entry per target, with the one rule's short label
    assert list(shown) == stored and shown == short_labels(stored)
    assert len(set(shown.values())) == len(shown)  # unique in the run
    abis = [a for a, _ in targets]
    for (abi, kind), target in zip(targets, stored, strict=True):
        label = shown[target]
        assert abi_of(label) == abi and len(label) <= len(target)
        assert label == (abi if abis.count(abi) == 1 else target)
        words = next(x.provenance for x in rep.legend if x.target == target)
        detail = {"source": f"meson 1.0.1; cc-{abi} (Tool) 9.9", "prebuilt": f"/given/{abi}-dir/prog-{abi}",
                  "debian": f"pkg-{abi} 1.2-3"}[kind]
        assert detail in words, (target, words)
    # every label the report shows is one of the legend's; each series keeps its stored target
    assert {s.label for s in rep.series} <= set(shown.values())
    assert all(shown[s.target] == s.label for s in rep.series)
    for block in rep.workloads:
        assert {r.label for r in block.result.rows} <= set(shown.values())
        assert {d.label for d in block.diffs} | {d.reference for d in block.diffs} \
            <= set(shown.values())
    # the legend in every format, and no ratio named by a stored label a short one replaced
    text, md, page = terminal.render(rep), markdown.render(rep), html_report.render(rep)
    for x in rep.legend:
        assert " ".join(x.text.split()) in " ".join(text.split())
        assert f"- `{x.label}`: {markdown._esc(x.provenance)}" in md
        assert x.provenance in html.unescape(page)
        if x.label != x.target:
            assert x.target not in text, x.target
