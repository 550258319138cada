"""Deployment advice: instances that fit in a memory budget, throughput per ABI, mixes, x32."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from abibench.analyse import report as analysis
from abibench.analyse.advise import Deployment, advise, parse_mix, parse_size
from abibench.analyse.results import analyse
from abibench.errors import UsageError
from abibench.records import RunDoc
from abibench.store.exchange import document

MakeDoc = Callable[..., dict[str, Any]]

GIB = 1 << 30


def _doc(make_doc: MakeDoc, **kw: Any) -> RunDoc:
    # alpha: i386 10% slower (rate 90 vs 100), 2000 KiB against 3000 KiB peak RSS
    return document(make_doc(**kw), "synthetic")


def test_sizes_and_mixes_parse() -> None:
    assert parse_size("4GiB") == 4 * GIB
    assert parse_size("4G") == 4 * GIB
    assert parse_size("512 MiB") == 512 << 20
    assert parse_size("1073741824") == GIB
    for bad in ("4 potatoes", "-1G", "12"):
        with pytest.raises(UsageError):
            parse_size(bad)
    assert parse_mix("lua=3,sqlite-speedtest1=1") == {"lua": 3.0, "sqlite-speedtest1": 1.0}
    with pytest.raises(UsageError):
        parse_mix("lua=0")


def test_fitting_more_instances_outweighs_lower_speed(make_doc: MakeDoc) -> None:
    doc = _doc(make_doc, workloads={"alpha": {"i386": 90.0, "x86_64": 100.0}})
    adv = advise(doc, analyse(doc), Deployment(4 * GIB))
    rows = {r.target: r for r in adv.rows}
    assert rows["i386"].instances == 4 * GIB // (2000 * 1024)
    assert rows["x86_64"].instances == 4 * GIB // (3000 * 1024)
    (line,) = adv.lines
    assert line.total is not None and 1.3 < line.total[0] < 1.4  # 1.5 x 0.9
    assert re.fullmatch(r"In 4 GiB, i386 fits 50% more alpha instances \(2,097 vs 1,398\); "
                        r"total throughput \+3\d% \[\+\d+%, \+\d+%\] despite 10% lower speed "
                        r"per instance", line.text), line.text


def test_cores_and_instances_limit_what_runs(make_doc: MakeDoc) -> None:
    doc = _doc(make_doc, workloads={"alpha": {"i386": 90.0, "x86_64": 100.0}})
    cores = advise(doc, analyse(doc), Deployment(4 * GIB, cores=8))
    assert {r.running for r in cores.rows} == {8}
    assert cores.lines[0].total is not None and cores.lines[0].total[0] < 1  # speed decides
    fixed = advise(doc, analyse(doc), Deployment(4 * GIB, instances=1500))
    rows = {r.target: r for r in fixed.rows}
    assert rows["i386"].fits and not rows["x86_64"].fits
    assert "(they do not fit on x86_64)" in fixed.lines[0].text


def test_a_mix_is_deployed_as_bundles(make_doc: MakeDoc) -> None:
    doc = _doc(make_doc)
    adv = advise(doc, analyse(doc), Deployment(4 * GIB, mix={"alpha": 3, "beta": 1}))
    mixed = adv.lines[-1]
    assert mixed.workload == "mix"
    assert mixed.text.startswith("In 4 GiB, the mix alpha=3, beta=1 fits 524 bundles on i386 "
                                 "and 349 on x86_64; total throughput +")
    with pytest.raises(UsageError, match="--mix names gamma"):
        advise(doc, analyse(doc), Deployment(4 * GIB, mix={"gamma": 1}))


def test_x32_built_but_not_run_is_an_estimate(make_doc: MakeDoc) -> None:
    raw = make_doc(targets=("i386", "x32", "x86_64"),
                   workloads={"alpha": {"i386": 90.0, "x86_64": 100.0}})
    doc = document(raw, "synthetic")
    adv = advise(doc, analyse(doc), Deployment(4 * GIB))
    x32 = next(r for r in adv.rows if r.target == "x32")
    assert x32.estimate and x32.speed is None and x32.total is None
    assert any("estimate, not measured" in n for n in adv.notes)


def test_the_report_has_advice_only_when_asked(make_doc: MakeDoc) -> None:
    doc = _doc(make_doc)
    assert analysis.from_run(doc).advice is None
    rep = analysis.from_run(doc, deployment=Deployment(4 * GIB))
    assert rep.advice is not None and len(rep.advice.lines) == 2
