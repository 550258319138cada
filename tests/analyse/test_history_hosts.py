"""`history --by host`: a host is a blocking factor. Generated stores whose hosts have their
own levels, runs interleaved in time: levels that alternate between hosts are never a change
over time; each host is searched over its own runs, and the hosts are compared in a table of
their own."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.history import history, levels
from abibench.records import RunDoc
from abibench.report import history as shown
from tests.documents import synthetic_doc


def run(i: int, host: str, rates: dict[str, float], tag: str, seed: int) -> RunDoc:
    d: dict[str, Any] = synthetic_doc(
        run_id=f"202601{i + 1:02d}-000000-aaaa", host=host, workloads={"alpha": rates},
        started=f"2026-01-{i + 1:02d}T00:00:00+00:00", seed=seed, noise=0.01)
    d["host"]["label"] = tag
    return RunDoc.from_dict(d)


@settings(max_examples=8, deadline=None)
@given(factors=st.lists(st.floats(0.5, 2.0), min_size=2, max_size=3),
       per_host=st.integers(2, 4), seed=st.integers(0, 10_000))
def test_levels_that_alternate_between_hosts_are_not_a_change(
        factors: list[float], per_host: int, seed: int) -> None:
    hosts = [f"host{k}" for k in range(len(factors))]
    docs = [run(i * len(hosts) + k, hosts[k], {"i386": 90.0 * f, "x86_64": 100.0 * f},
                "v1", seed + i * 10 + k)
            for i in range(per_host) for k, f in enumerate(factors)]  # interleaved in time
    h = history(docs, "alpha", "host")
    assert h.changes == ()
    # grouped by host, each block oldest first; no level spans two hosts
    assert [p.axes["host"] for p in h.points] == [x for x in hosts for _ in range(per_host)]
    assert h.blocks == tuple(per_host * k for k in range(1, len(hosts)))
    assert len(levels(h, "i386")) == len(hosts)
    table = {(x.series, x.host): x for x in h.hosts}
    for k, f in enumerate(factors):
        got = table[("x86_64", hosts[k])]
        assert got.runs == per_host
        if k == 0:
            assert got.relative is None
        else:
            assert got.relative == pytest.approx(f / factors[0], rel=0.03)
        assert table[("i386/x86_64", hosts[k])].level == pytest.approx(0.9, rel=0.03)
    text = shown.terminal(h)
    assert "hosts compared" in text and "blocking factor" in text
    assert shown.to_json(h)["hosts"]


@settings(max_examples=5, deadline=None)
@given(step=st.floats(0.25, 0.6), seed=st.integers(0, 10_000))
def test_a_change_on_one_host_is_found_on_that_host_only(step: float, seed: int) -> None:
    """Host a: v1 twice then v2 (i386 slower by ``step``) twice; host b, interleaved, v1 four
    times at another level."""
    docs = []
    for i in range(4):
        slow = i >= 2
        docs.append(run(2 * i, "a", {"i386": 90.0 / (1 + step) if slow else 90.0,
                                     "x86_64": 100.0}, "v2" if slow else "v1", seed + i))
        docs.append(run(2 * i + 1, "b", {"i386": 150.0, "x86_64": 170.0}, "v1", seed + 50 + i))
    h = history(docs, "alpha", "host")
    moved = {(c.series, c.host, h.points[c.run_index].run_id) for c in h.changes}
    assert moved == {("i386", "a", docs[4].id), ("i386/x86_64", "a", docs[4].id)}
    assert "on host a at run" in shown.terminal(h)
