"""Footprint curves and the XBench-style index in the HTML, Markdown and terminal reports."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from abibench.analyse import report as analysis
from abibench.analyse import sweeps
from abibench.records import RunDoc
from abibench.report import charts, html, markdown, terminal
from abibench.report import formatting as fmt
from abibench.store.exchange import document

MakeDoc = Callable[..., dict[str, Any]]


EVIL_FP = "footprint-<i>x&y</i>"  # a structure name that must stay text
EVIL_MICRO = "cpu-<b>int</b>"
SIZES = (10_000, 1_000_000)
BYTES = {"i386": 16.0, "x86_64": 32.0}  # bytes per element above a 1000 KiB baseline


def _with_footprint(doc: dict[str, Any], structure: str) -> None:
    """Add one footprint instance per N, shaped like the footprint profiles' samples."""
    template = next(s for s in doc["samples"])
    for n in SIZES:
        wid = f"{structure}[n={n}]"
        doc["run"]["config"]["workloads"][wid] = {
            "title": f"{structure} with N={n}", "primary": "ns_per_element",
            "params": {"n": str(n)}, "seeds": [], "targets": ["i386", "x86_64"],
            "metrics": {"ns_per_element": {"unit": "ns", "better": "lower"},
                        "baseline_kb": {"unit": "KiB", "better": "lower"},
                        "wall": {"unit": "s", "better": "lower"},
                        "max_rss": {"unit": "KiB", "better": "lower"}}}
        doc["outcomes"][wid] = {"rounds": 4, "stop_reason": "fixed rounds"}
        for rnd in range(5):
            for pos, target in enumerate(("i386", "x86_64")):
                rss = 1000 + int(n * BYTES[target] / 1024) + rnd  # whole KiB
                doc["samples"].append({
                    **template, "workload": wid, "target": target, "round": rnd,
                    "position": pos, "warmup": rnd == 0, "max_rss_kb": rss,
                    "metrics": {"ns_per_element": 40.0 + rnd + pos * 5, "baseline_kb": 1000.0}})


@pytest.fixture(scope="module")
def doc(make_doc: MakeDoc) -> RunDoc:
    d = make_doc(workloads={EVIL_MICRO: {"i386": 90.0, "x86_64": 100.0},
                            "mem-copy": {"i386": 110.0, "x86_64": 100.0}})
    _with_footprint(d, EVIL_FP)
    _with_footprint(d, "footprint-tree")
    # Built as a record, not imported: an import refuses the id (ids.check_id); the reports
    # escape it all the same.
    return RunDoc.from_dict(d)


@pytest.fixture(scope="module")
def report(doc: RunDoc) -> analysis.Report:
    return analysis.from_run(doc)


def test_report_holds_curves_differences_and_index(report: analysis.Report) -> None:
    assert {(c.structure, c.abi) for c in report.footprint_series} == {
        (s, a) for s in (EVIL_FP, "footprint-tree") for a in ("i386", "x86_64")}
    diffs = {d.structure: d for d in report.footprint_diffs}
    assert set(diffs) == {EVIL_FP, "footprint-tree"}
    d = diffs["footprint-tree"]
    assert (d.n, d.a, d.b) == (1_000_000, "i386", "x86_64")
    # Per round (1000 + 15625 + r) / (1000 + 31250 + r) KiB: 16 against 32 bytes per element.
    assert d.percent == pytest.approx((16626 / 32251 - 1) * 100, abs=0.01)
    assert d.ratio.ci_low <= d.ratio.ratio <= d.ratio.ci_high < 1
    assert fmt.footprint_percent(d).startswith(f"{d.percent:+.1f}% [")
    assert report.index is not None
    assert {t.workload for t in report.index.tests} == {EVIL_MICRO, "mem-copy"}
    rows = fmt.index_rows(report.index)
    assert [k for k, _, _ in rows] == ["total", "group", "test", "group", "test"]
    # i386 does 90% of x86_64's rate on the CPU test: a score near 90, with a CI.
    cpu = next(cells for kind, name, cells in rows if name == EVIL_MICRO)
    assert re.fullmatch(r"(89|90)\.\d \[\d+\.\d, \d+\.\d\]", cpu[0]), cpu


def test_html_has_both_sections_with_honest_escaped_charts(report: analysis.Report) -> None:
    page = html.render(report)
    for section in ("footprint", "xbench"):
        assert f'<section id="{section}">' in page and f'href="#{section}"' in page
    assert "Memory footprint curves" in page and "XBench-style index" in page
    svgs = re.findall(r"<svg .*?</svg>", page, flags=re.S)
    panels = sum(len(b.panels) for b in report.workloads)
    # + difference chart + two per structure + one curve per swept structure (sweepview.py)
    assert len(svgs) == panels + 1 + 2 * 2 + len(sweeps.curves(report))
    footprint = page[page.index('<section id="footprint">'):]
    footprint = footprint[:footprint.index("</section>")]
    curves = re.findall(r"<svg .*?</svg>", footprint, flags=re.S)
    assert len(curves) == 4
    for svg in curves:
        charts.check_svg(svg)
        assert "lower is better" in svg and "log scale" in svg
    # Strings from results are escaped everywhere, in charts and tables alike.
    assert "<i>x" not in page and "<b>int" not in page
    assert "&lt;i&gt;x&amp;y&lt;/i&gt;" in footprint
    xb = page[page.index('<section id="xbench">'):]
    xb = xb[:xb.index("</section>")]
    assert "&lt;b&gt;int&lt;/b&gt;" in xb and "x86_64 = 100" in xb and "higher is better" in xb
    diff = next(d for d in report.footprint_diffs if d.structure == "footprint-tree")
    assert fmt.footprint_percent(diff) in footprint


def test_markdown_has_both_tables_escaped(report: analysis.Report) -> None:
    md = markdown.render(report)
    assert "## XBench-style index" in md and "## Memory footprint" in md
    assert not re.search(r"(?<!\\)<[a-zA-Z/!]", md)
    assert "footprint-\\<i\\>x&amp;y\\</i\\>" in md
    diff = next(d for d in report.footprint_diffs if d.structure == "footprint-tree")
    row = next(line for line in md.splitlines() if line.startswith("| footprint-tree | "))
    assert "1,000,000" in row and fmt.footprint_percent(diff) in row
    index = md[md.index("## XBench-style index"):].split("\n\n")[2].splitlines()
    assert index[0].startswith("| group / test | i386 | x86\\_64 (reference) |")
    assert any("cpu-\\<b\\>int\\</b\\>" in line for line in index)
    assert len({len(re.findall(r"(?<!\\)\|", line)) for line in index}) == 1


def test_terminal_summary_prints_the_largest_n_difference(report: analysis.Report) -> None:
    text = terminal.render(report)
    assert "memory footprint" in text
    for d in report.footprint_diffs:
        assert d.text in text


def test_runs_without_footprint_or_micro_tests_have_neither_section(make_doc: MakeDoc) -> None:
    plain = document(make_doc(), "plain")  # alpha and beta: no footprint, not micro tests
    rep = analysis.from_run(plain)
    assert rep.footprint_series == [] and rep.footprint_diffs == [] and rep.index is None
    page = html.render(rep)
    assert 'id="footprint"' not in page and 'id="xbench"' not in page
    assert 'href="#footprint"' not in page and 'href="#xbench"' not in page
    md = markdown.render(rep)
    assert "XBench-style" not in md and "Memory footprint" not in md
    assert "memory footprint" not in terminal.render(rep)
    # A single micro test is no index (as the CLI prints it: two or more workloads).
    one = document(make_doc(workloads={"cpu-a": {"i386": 1.0, "x86_64": 1.0}}), "one")
    assert analysis.from_run(one).index is None
