"""Sweeps are curves: instances grouped by their profile, ratios against the swept value, the
crossover in words, and the suite counting a sweep once."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.sweeps import Axis, RatioPoint, instance_of, once_per_sweep, ordered
from abibench.ids import sweep_value_problem
from abibench.workloads.profile import builtin_profiles, expand_sweep, load_profile

Cli = Callable[..., subprocess.CompletedProcess[str]]
# bench/own_program.py runs the generated tests with more examples.
SCALE = int(os.environ.get("ABIBENCH_TEST_SCALE", "1"))
_BASE = load_profile(builtin_profiles()["cpu-gcd"])
_VALUE = st.text(st.sampled_from("abz019._+:@~-"), min_size=1, max_size=12).filter(
    lambda v: sweep_value_problem(v) is None)
_PARAM = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


@settings(max_examples=80 * SCALE, deadline=None)
@given(_PARAM, st.lists(_VALUE, min_size=1, max_size=5, unique=True))
def test_every_instance_id_names_its_profile_parameter_and_value(param: str,
                                                                 values: list[str]) -> None:
    wl = replace(_BASE, params={**_BASE.params, param: values[0]}, sweep={param: tuple(values)})
    for inst, v in zip(expand_sweep(wl), values, strict=True):
        got = instance_of(inst.id)
        assert got is not None and (got.base, got.param, got.value) == (wl.id, param, v)
    assert instance_of(wl.id) is None  # a plain id is never an instance


_NUM = st.integers(min_value=0, max_value=10**9).map(str)


@settings(max_examples=80 * SCALE, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.lists(_NUM, min_size=1, max_size=5,
                                                                  unique=True), max_size=3),
       st.lists(st.sampled_from(["plain", "other", "x.y"]), max_size=3), st.randoms())
def test_the_suite_counts_each_sweep_once_at_its_largest_value(
        sweeps: dict[str, list[str]], plain: list[str], rnd: object) -> None:
    ids = [f"{b}[n={v}]" for b, vs in sweeps.items() for v in vs] + plain
    rnd.shuffle(ids)  # type: ignore[attr-defined]
    kept = once_per_sweep(ids, lambda x: x)
    assert [x for x in kept if instance_of(x) is None] == [x for x in ids if instance_of(x) is None]
    swept = [x for x in kept if instance_of(x) is not None]
    assert sorted(swept) == sorted(f"{b}[n={max(vs, key=int)}]" for b, vs in sweeps.items())
    assert kept == [x for x in ids if x in kept]  # in their order


_CI = st.tuples(st.floats(0.2, 5.0), st.floats(0.2, 5.0)).map(sorted)


@settings(max_examples=150 * SCALE, deadline=None)
@given(st.lists(st.one_of(st.none(), _CI), min_size=1, max_size=8),
       st.sampled_from(["lower", "higher"]))
def test_the_crossover_names_one_outcome_per_run_of_values(cis: list[list[float] | None],
                                                           better: str) -> None:
    values = [str(10 ** i) for i in range(len(cis))]
    points = tuple(None if c is None else RatioPoint((c[0] * c[1]) ** 0.5, c[0], c[1])
                   for c in cis)
    axis = Axis("wall", "s", better, "i386", "x86_64", points)
    text = axis.crossover("n", values)
    sides = [p.side(better) for p in points if p is not None]
    if not sides:
        assert "no ratio" in text
        return
    runs = 1 + sum(1 for a, b in itertools.pairwise(sides) if a != b)
    words = {1: "i386 is faster", -1: "x86_64 is faster", 0: "no significant difference"}
    assert text.count(",") + 1 == runs, text
    for s in set(sides):
        assert words[s] in text, text
    if runs == 1:
        assert "at every n" in text
    else:
        first = next(v for v, p in zip(values, points, strict=True) if p is not None)
        assert "up to n=" in text and "on" in text and f"n={first}" not in text.split(",")[1:]
    # A point whose CI excludes 1 on the lower side is better for "lower" metrics.
    assert RatioPoint(0.5, 0.4, 0.6).side("lower") == 1 == RatioPoint(2, 1.5, 3).side("higher")


def test_ordered_is_numeric_only_when_every_value_is_a_number() -> None:
    assert ordered(["100000", "1000", "1e4"]) == ["1000", "1e4", "100000"]
    assert ordered(["big", "small"]) == ["big", "small"]
    assert ordered(["10", "nan", "2"]) == ["10", "nan", "2"]


def test_a_sweep_is_one_section_with_its_ratio_table(cli: Cli, tmp_path: Path,
                                                     fixtures: Path) -> None:
    (tmp_path / "metric.c").write_bytes((fixtures / "metric.c").read_bytes())
    prof = tmp_path / "curve.toml"
    prof.write_text('id = "curve"\ntitle = "a curve"\n[params]\nn = "5"\n[sweep]\n'
                    'n = ["50", "5", "20"]\n[source]\nfiles = ["metric.c"]\n'
                    'artifacts = ["metric"]\n[run]\ncommand = ["{bin}/metric", "{n}"]\n'
                    '[validate]\nstdout_match = \'(?m)^checksum: (\\S+)$\'\n')
    md = tmp_path / "r.md"
    page = tmp_path / "r.html"
    r = cli("run", str(prof), "--abi", "i386,x86_64", "--rounds", "3", "--warmup", "0",
            "--html", str(page), "--report", str(md))
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout
    assert out.count("curve — a curve; swept over n (3 values)") == 1, out
    assert "curve[n=5] —" not in out and "curve[n=50] —" not in out
    table = out.split("swept over n", 1)[1].splitlines()[3:6]
    assert [ln.split()[0] for ln in table] == ["5", "20", "50"], table
    assert "i386/x86_64 wall" in out and "i386/x86_64 peak RSS" in out
    assert "output check: identical at every n" in out
    assert "suite (1 workload)" in out
    # ...and a chart of each ratio against n in the terminal too.
    assert out.count("i386/x86_64 wall against n (log axis; | is 1") == 1, out
    text = md.read_text()
    assert text.count("### curve: a curve") == 1 and "| n | i386 median" in text
    html = page.read_text()
    chart = html.split("curve: swept over n</h3>", 1)[1].split("</article>", 1)[0]
    assert 'aria-label="curve: ratios against n"' in chart and "at every n" in chart
    # The summary has one row per swept workload, linked to its curve, headed by its largest n.
    summary = html.split('id="summary"', 1)[1].split("</section>", 1)[0]
    link = re.search(r'<article id="([^"]+)"><h3>curve: swept over n</h3>', html)
    assert link is not None, html[:3000]
    assert summary.count(f'href="#{link[1]}">curve (swept over n)</a>') == 2, summary
    assert "curve[n=" not in summary, re.findall(r".{200}curve\[n=.{100}", summary)
    assert summary.count("at n=50, the largest of 3") == 2
    doc = json.loads(cli("export", "latest").stdout)
    # The samples stay per instance: the curve is a view, not a different record.
    assert {s["workload"] for s in doc["samples"]} == {"curve[n=5]", "curve[n=20]",
                                                        "curve[n=50]"}
    for w in ("curve[n=5]", "curve[n=20]", "curve[n=50]"):
        for t in ("i386", "x86_64"):
            ok = [s for s in doc["samples"] if (s["workload"], s["target"]) == (w, t)
                  and s["status"] == "ok" and not s["warmup"]]
            assert len(ok) >= 3, (w, t, len(ok))


def test_a_miscompare_at_one_value_is_in_the_sweeps_summary_row(cli: Cli, tmp_path: Path) -> None:
    # Outputs agree at every n but 20, where they name the pointer size.
    (tmp_path / "ptr.c").write_text(
        '#include <stdio.h>\n#include <stdlib.h>\nint main(int c, char **v) {\n'
        '  long n = atol(v[1]);\n  printf("checksum: %ld\\n", n == 20 ? (long)sizeof(void *) : n);'
        '\n  return 0;\n}\n')
    prof = tmp_path / "ptr.toml"
    prof.write_text('id = "ptr"\ntitle = "t"\n[params]\nn = "5"\n[sweep]\nn = ["5", "20", "50"]\n'
                    '[source]\nfiles = ["ptr.c"]\nartifacts = ["ptr"]\n[run]\n'
                    'command = ["{bin}/ptr", "{n}"]\n[validate]\n'
                    'stdout_match = \'(?m)^checksum: (\\S+)$\'\n')
    page = tmp_path / "r.html"
    cli("run", str(prof), "--abi", "i386,x86_64", "--rounds", "2", "--warmup", "0",
        "--html", str(page))
    summary = page.read_text().split('id="summary"', 1)[1].split("</section>", 1)[0]
    assert summary.count("INVALID at n=20 (outputs differ)") == 1, summary
    assert "INVALID at n=5" not in summary and "INVALID at n=50" not in summary


_RATIO = st.floats(min_value=1e-6, max_value=1e6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_RATIO, _RATIO, _RATIO), min_size=1, max_size=6))
def test_the_terminal_chart_puts_each_ratio_inside_its_ci_on_one_axis(
        triples: list[tuple[float, float, float]]) -> None:
    from abibench.report.sweepview import CHART_WIDTH, text_chart

    pts = [RatioPoint(*sorted(t)[1:2], *sorted(t)[::2]) for t in triples]  # ratio, low, high
    values = [str(10 ** i) for i in range(len(pts))]
    rows = text_chart(Axis("wall", "s", "lower", "i386", "x86_64", tuple(pts)), values)
    assert len(rows) == len(pts) + 1
    bars = [r[len(values[-1]) + 2:][:CHART_WIDTH] for r in rows[1:]]
    ones = {b.find("|") for b in bars if "|" in b}
    assert len(ones) <= 1  # 1 is at one place on every row
    for bar in bars:
        assert bar.count("o") == 1, bar
        o = bar.index("o")
        left, right = bar.find("["), bar.find("]")  # either may be under the ratio's mark
        assert (left == -1 or left <= o) and (right == -1 or o <= right), bar
        if "|" not in bar:  # hidden only under the ratio's mark or an end of its CI
            assert all(bar[i] in "o[]" for i in ones), bar
