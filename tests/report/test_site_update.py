"""`abibench site DIR` incrementally (report/siteupdate.py): generated stores, runs added and
deleted between two writes; every page is what a full write gives, only the pages whose inputs
changed are written, and every link resolves."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from abibench.analyse.site import build
from abibench.records import RunDoc
from abibench.report.site import Names, pages
from abibench.report.siteupdate import MANIFEST, update_site
from tests.documents import synthetic_doc

HOSTS = ("a", "b")
WORKLOADS = ("alpha", "beta")


def doc(i: int, host: str, workload: str) -> RunDoc:
    d: dict[str, Any] = synthetic_doc(
        run_id=f"202601{i + 1:02d}-000000-aaaa", host=host,
        workloads={workload: {"i386": 90.0, "x86_64": 100.0}}, rounds=3,
        started=f"2026-01-{i + 1:02d}T00:00:00+00:00", seed=i)
    d["host"]["label"] = "v1"
    return RunDoc.from_dict(d)


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.html")}


def links_resolve(root: Path) -> None:
    for rel, body in files(root).items():
        for target in re.findall(rb'href="([^"#]+)', body):
            if target.startswith(b"data:"):  # a report's own CSV, inline
                continue
            assert (root / rel).parent.joinpath(target.decode()).resolve().is_file(), (rel, target)


def _strip_time(text: bytes) -> bytes:
    """A page but the time it was made (the index's "written", a report's "generated")."""
    text = re.sub(rb"written \d{4}-\d\d-\d\d \d\d:\d\d UTC", b"written -", text)
    return re.sub(rb"generated \d{4}-\d\d-\d\dT[0-9:+]+", b"generated -", text)


runs_st = st.lists(st.tuples(st.sampled_from(HOSTS), st.sampled_from(WORKLOADS)),
                   min_size=2, max_size=4)


# Two examples: each renders its site four times (three updates and a full write), every page
# with its charts, about 12 s of CPU an example.
@settings(max_examples=2, deadline=None, phases=[Phase.generate])
@given(first=runs_st, added=runs_st, deleted=st.integers(0, 1))
def test_a_second_site_writes_only_what_changed(tmp_path_factory: Any, first: list[tuple[str, str]],
                                                added: list[tuple[str, str]],
                                                deleted: int) -> None:
    root = tmp_path_factory.mktemp("site")
    docs = [doc(i, h, w) for i, (h, w) in enumerate(first)]
    got = update_site(docs, "store", root)
    assert got.kept == 0 and set(got.written) == set(files(root))
    again = update_site(docs, "store", root)  # nothing new: nothing written
    assert again.written == () and again.removed == () and again.kept == again.pages
    before = files(root)
    gone, docs = docs[:deleted], docs[deleted:]
    new = [doc(len(first) + i, h, w) for i, (h, w) in enumerate(added)]
    docs += new
    third = update_site(docs, "store", root)
    names = Names(build(docs, only=()))
    # a new run's page written, a deleted run's removed; no other run's report rewritten
    assert {names.runs[d.id] for d in new} <= set(third.written)
    assert all(not r.startswith("runs/") or r in {names.runs[d.id] for d in new}
               for r in third.written)
    assert {f"runs/{d.id}.html" for d in gone} == set(third.removed)
    changed_hosts = {d.host.hostname for d in [*gone, *new]}
    for x in HOSTS:
        rel = f"hosts/{x}.html"
        if rel in before and x not in changed_hosts:
            assert rel not in third.written
    # the site is exactly a full write's (but the time it was written)
    full = pages(build(docs), "store")
    now = files(root)
    assert set(now) == set(full)
    for rel, text in full.items():
        assert _strip_time(now[rel]) == _strip_time(text.encode()), rel
    links_resolve(root)


def test_an_edited_or_missing_page_is_rewritten_and_rebuild_writes_all(tmp_path: Path) -> None:
    docs = [doc(0, "a", "alpha"), doc(1, "b", "alpha"), doc(2, "a", "beta")]
    first = update_site(docs, "store", tmp_path)
    (tmp_path / "hosts" / "a.html").write_text("edited")
    (tmp_path / "workloads" / "beta.html").unlink()
    got = update_site(docs, "store", tmp_path)
    assert set(got.written) == {"hosts/a.html", "workloads/beta.html"}
    assert len(update_site(docs, "store", tmp_path, rebuild=True).written) == first.pages
    # a manifest that is not one is no manifest: everything written, nothing removed
    (tmp_path / MANIFEST).write_text('{"format": 1, "pages": {"../../etc/passwd": {}}}')
    (tmp_path / "runs" / "keep.html").write_text("not the site's")
    got = update_site(docs[:1], "store", tmp_path)
    assert (tmp_path / "runs" / "keep.html").exists()
    assert "runs/keep.html" not in got.removed
