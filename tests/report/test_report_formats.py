"""The report's content and its HTML, Markdown, CSV and JSON renderings, on synthetic runs."""

from __future__ import annotations

import base64
import csv
import io
import json
import math
import re
from collections.abc import Callable
from typing import Any

import pytest

from abibench import stats
from abibench.analyse import report as analysis
from abibench.records import RunDoc
from abibench.report import charts, csvout, html, jsonout, markdown
from abibench.store.exchange import document

MakeDoc = Callable[..., dict[str, Any]]


@pytest.fixture(scope="module")
def report(make_doc: MakeDoc) -> analysis.Report:
    # alpha: x86_64 10/9 faster; beta: i386 20% faster; x32 never ran.
    doc = make_doc(targets=("i386", "x86_64", "x32"),
                   workloads={"alpha": {"i386": 90.0, "x86_64": 100.0},
                              "beta": {"i386": 120.0, "x86_64": 100.0}})
    return analysis.from_run(document(doc, "synthetic"))


def test_differences_read_as_better_for_both_directions(report: analysis.Report) -> None:
    diffs = {(d.workload, d.metric): d for b in report.workloads for d in b.diffs}
    assert set(diffs) == {("alpha", "rate"), ("alpha", "time"), ("beta", "rate"),
                          ("beta", "time")}
    # Higher is better: i386 has 0.9x the rate: -10%; lower is better: 1/0.9 of the time,
    # which is the same -10% of speed. Both directions say "worse" with the same sign.
    for metric in ("rate", "time"):
        a = diffs[("alpha", metric)]
        assert a.label == "i386" and a.reference == "x86_64"
        assert a.percent == pytest.approx(-10, abs=1.5) and a.significant
        assert a.pct_low <= a.percent <= a.pct_high
        b = diffs[("beta", metric)]
        assert b.percent == pytest.approx(20, abs=2) and b.significant
    assert diffs[("alpha", "rate")].primary and not diffs[("alpha", "time")].primary
    assert diffs[("beta", "time")].verdict.startswith("i386 is") and "faster" in \
        diffs[("beta", "time")].verdict


def test_percent_better_transforms_the_interval() -> None:
    assert stats.percent_better(1.25, 1.2, 1.3, "higher") == pytest.approx((25, 20, 30))
    # a takes 1.25x b's time: b is 25% faster, so a is "25% slower", the same figure (issue
    # 29), and the CI's ends map to its ends.
    pct, lo, hi = stats.percent_better(1.25, 1.2, 1.3, "lower")
    assert (pct, lo, hi) == pytest.approx((-25, -30, -20))
    assert stats.percent_better(0.8, 0.7, 1.1, "lower") == pytest.approx(
        (25, -(1.1 - 1) * 100, (1 / 0.7 - 1) * 100))
    assert stats.difference(pct, lo, hi, ("faster", "slower")) == "25.0% slower [20.0%, 30.0%]"
    assert stats.difference(*stats.percent_better(1 / 15.925, 1 / 16.6, 1 / 15.2, "higher"),
                            ("faster", "slower")) == "15.9× slower [15.2×, 16.6×]"


def test_bars_carry_the_ci_of_the_median_and_missing_targets(report: analysis.Report) -> None:
    alpha = report.workloads[0]
    assert [p.metric for p in alpha.panels] == ["rate", "time", "max_rss"]
    bars = {b.label: b for b in alpha.panels[0].bars}
    assert bars["x86_64"].low <= bars["x86_64"].median <= bars["x86_64"].high
    assert bars["x86_64"].median == pytest.approx(100, rel=0.02)
    assert math.isnan(bars["x32"].median) and bars["x32"].state == "not run"


def test_json_is_strict_and_complete(report: analysis.Report) -> None:
    data = json.loads(jsonout.render(report))  # json_text refuses NaN
    assert data["format"] == "abibench-report" and data["version"] == 1
    alpha = data["workloads"][0]
    assert alpha["reference"] == "x86_64"
    assert {c["metric"] for c in alpha["comparisons"]} == {"rate", "time"}
    x32 = next(t for t in alpha["targets"] if t["label"] == "x32")
    assert x32["summary"] is None and x32["state"] == "not run"
    assert len(data["samples"]) == len(report.samples)
    assert data["suite"][0]["a"] == "i386" and data["suite"][0]["b"] == "x86_64"


def test_results_csv_has_one_row_per_workload_metric_and_target(report: analysis.Report) -> None:
    rows = list(csv.DictReader(io.StringIO(csvout.render(report))))
    assert len(rows) == 2 * 3 * 3  # workloads x (rate, time, max_rss) x targets
    r = next(r for r in rows if r["workload"] == "beta" and r["metric"] == "rate"
             and r["target"] == "i386")
    assert float(r["percent_better"]) == pytest.approx(20, abs=2)
    assert r["significant"] == "true" and r["p_adjustment"] == "holm"
    assert float(r["median_ci_low"]) <= float(r["median"]) <= float(r["median_ci_high"])
    samples = list(csv.DictReader(io.StringIO(csvout.render_samples(report))))
    assert len(samples) == len(report.samples)
    assert {"metric:rate", "metric:time"} <= set(samples[0])


def test_csv_cells_cannot_become_formulas() -> None:
    assert csvout.cell("=HYPERLINK(\"http://x\")") == "'=HYPERLINK(\"http://x\")"
    assert csvout.cell("@SUM(A1)") == "'@SUM(A1)" and csvout.cell("+1+1") == "'+1+1"
    assert csvout.cell("-0.169004578") == "-0.169004578"  # a number stays a number
    assert csvout.cell(-2.5) == "-2.5" and csvout.cell(float("nan")) == ""


def test_markdown_escapes_markup_and_keeps_tables_intact(make_doc: MakeDoc) -> None:
    evil = "<b>x</b>|[link](javascript:alert(1))`code`\n# head"
    doc = make_doc(workloads={evil: {"i386": 90.0, "x86_64": 100.0}})
    doc["host"]["hostname"] = "h|<img src=x onerror=alert(1)>"
    # Built as a record: an import refuses the id (ids.check_id); Markdown escapes it anyway.
    md = markdown.render(analysis.from_run(RunDoc.from_dict(doc)))
    # No tag can open: every < is backslash-escaped; no link can form either.
    assert not re.search(r"(?<!\\)<[a-zA-Z/!]", md) and "](javascript" not in md
    assert "\\<b\\>x\\</b\\>\\|\\[link\\]" in md
    # Every table keeps its shape: as many unescaped pipes in each row as in its header.
    tables: list[list[str]] = [[]]
    for line in md.splitlines():
        if line.startswith("|"):
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])
    assert len(tables) > 5
    for table in tables:
        widths = {len(re.findall(r"(?<!\\)\|", row)) for row in table}
        assert len(widths) <= 1, table
    assert markdown._code("a`b|c") == "``a`b\\|c``"


def test_html_has_every_section_and_honest_charts(report: analysis.Report) -> None:
    page = html.render(report)
    for section in ("summary", "context", "workloads", "differences", "memory", "sizes",
                    "provenance", "samples"):
        assert f'<section id="{section}">' in page
    svgs = re.findall(r"<svg .*?</svg>", page, flags=re.S)
    panels = sum(len(b.panels) for b in report.workloads)
    assert len(svgs) == panels + 1  # + the difference chart
    for svg in svgs:
        charts.check_svg(svg)
        assert "higher is better" in svg or "lower is better" in svg
    # Offline: nothing refers to another file or host; only data: links and anchors.
    for url in re.findall(r'(?:src|href)="([^"]*)"', page):
        assert url.startswith(("#", "data:")), url
    assert "<script" not in page.lower() and "http-equiv=\"Content-Security-Policy\"" in page
    href = re.search(r'href="data:text/csv;charset=utf-8;base64,([^"]+)"', page)
    assert href is not None
    rows = list(csv.DictReader(io.StringIO(base64.b64decode(href.group(1)).decode())))
    assert len(rows) == len(report.samples)


def test_check_svg_refuses_active_content() -> None:
    ns = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'
    for bad in (f"<svg {ns}><script>alert(1)</script></svg>",
                f'<svg {ns} onload="alert(1)"></svg>',
                f'<svg {ns}><use xlink:href="http://x/y#z"/></svg>',
                f'<svg {ns}><foreignObject><p>x</p></foreignObject></svg>',
                f'<svg {ns}><path fill="url(http://x/p)"/></svg>',
                f"<svg {ns}><style>@import url(http://x/a.css);</style></svg>"):
        with pytest.raises(charts.UnsafeSvgError):
            charts.check_svg(bad)
    charts.check_svg(f'<svg {ns}><path clip-path="url(#p1)" d="M0 0"/></svg>')


def test_chart_text_is_escaped_and_dollars_are_not_math() -> None:
    panel = analysis.Panel("a<b>&$x^2$", "u", "higher", True,
                          (analysis.Bar("<script>", "ok", 3, 1.0, 0.9, 1.1),
                           analysis.Bar("t\"'", "not run", 0, math.nan, math.nan, math.nan)))
    svg = charts.bars_svg(panel, "<img src=x onerror=alert(1)> $x^2$", {}, salt="t")
    charts.check_svg(svg)
    assert "<script>" not in svg and "<img" not in svg
    assert "&lt;script&gt;" in svg and "$x^2$" in svg


def test_a_runner_metric_as_primary_keeps_its_unit_even_if_the_document_omits_it(make_doc: MakeDoc) -> None:
    from abibench.analyse.results import analyse

    doc = make_doc()
    for meta in doc["run"]["config"]["workloads"].values():
        meta["primary"] = "user"  # runs before this fix listed only wall and max_rss
        meta["metrics"].pop("user", None)
    results = analyse(document(doc, "t"))
    assert results and all((r.unit, r.better) == ("s", "lower") for r in results)


def test_formatters_never_overflow_or_print_inf() -> None:
    from abibench.report import formatting as fmt

    assert fmt.number(math.inf) == "-" and fmt.number(math.nan, "+.1f") == "-"
    assert fmt.number(12.345) == "12.3" and fmt.number(1e308, "+.1f") == "+1e+308"
    assert fmt.number(-2.5e9, "6.1f") == "-2.5e+09"
    assert fmt.ratio(1e306, 1e305, math.inf) == "1e+306"
    assert [fmt.kib(v) for v in (None, math.nan, 845, 1536, 3 * 1024**2, 2**62, -5000)] == \
        ["-", "-", "845 KiB", "1.5 MiB", "3.00 GiB", "4.00 ZiB", "-4.9 MiB"]
    assert fmt.kib(1e308) == "8.47e+286 YiB"
    assert [fmt.size(v) for v in (None, 0, 1023, 1536, 5 << 20, 2**63 - 1, -(2**63))] == \
        ["-", "0 B", "1023 B", "1.5 KiB", "5.00 MiB", "8.00 EiB", "-8.00 EiB"]
    assert fmt.si(math.nan, "s") == "-" and fmt.si(-1e308, "ops/s") == "-1e+296T ops/s"
