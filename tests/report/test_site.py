"""`abibench site`: generated hostile stores give pages that parse, links that resolve to
written files, and no hostile text raw (report/site.py); and the command end to end."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from abibench.analyse.site import build
from abibench.errors import UsageError
from abibench.paths import PACKAGE_DIR, cache_dir, data_dir
from abibench.records import RunDoc
from abibench.report.site import pages, write_site
from abibench.report.siteupdate import update_site
from abibench.text import one_line
from tests.conftest import HOSTILE, synthetic_doc

Cli = Callable[..., subprocess.CompletedProcess[str]]

# What an imported file may carry in a name, a tag, a label or a host name.
PAYLOADS = ["<script>document.title='PWNED'</script>", "\"><img src=x onerror=alert(1)>",
            "javascript:alert(1)", "../../etc/passwd", "a/b", "x:y.html", "%2e%2e", HOSTILE,
            "\u202eevil\u2066", "zero\u200bwidth", "</style></title><svg onload=x>", "ＡＢＣ"]
hostile = st.one_of(st.sampled_from(PAYLOADS),
                    st.text(st.sampled_from("<>\"'&/\\:%#?\x1b\u202e\u200b\x00 aZ9é"),
                            min_size=1, max_size=12))
# Ids as ids.py accepts them, and ids an older store or a hand-made file may hold.
valid_id = st.from_regex(r"[a-z0-9][a-z0-9._:@\[\]~+=,-]{0,10}", fullmatch=True)
workload_id = st.one_of(valid_id, hostile)

VOID = {"meta", "br", "col", "hr", "img", "input", "link", "area", "base", "wbr", "source"}
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\x1b\x00]")


class _Checked(HTMLParser):
    """Every tag closed in order; every link and id collected; no script, no handler."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "iframe", "object", "embed", "img", "image"):
            self.problems.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"{name}= on <{tag}>")
            if name == "href" and value is not None:
                self.links.append(value)
            if name == "id" and value is not None:
                self.ids.add(value)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:]}")
            return
        self.stack.pop()


def check_site(root: Path) -> dict[str, _Checked]:
    """Every page parses, every link resolves to a written file of the site; the parsed pages."""
    parsed = {}
    for page in sorted(root.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        assert not BIDI.search(text), (page, BIDI.findall(text))
        p = _Checked()
        p.feed(text)
        p.close()
        assert p.problems == [] and p.stack == [], (page, p.problems, p.stack)
        parsed[str(page.relative_to(root))] = p
    for rel, p in parsed.items():
        for ref in p.links:
            if ref.startswith("data:"):  # the run report's download of its own samples
                continue
            assert re.match(r"^[a-z][a-z0-9+.-]*:", ref) is None, (rel, ref)  # no scheme
            path, _, frag = ref.partition("#")
            target = (root / rel).parent / unquote(path) if path else root / rel
            target = target.resolve()
            assert target.is_relative_to(root.resolve()) and target.is_file(), (rel, ref)
            if frag:
                assert frag in parsed[str(target.relative_to(root.resolve()))].ids, (rel, ref)
    return parsed


def _doc(i: int, host: str, tag: str, wid: str, title: str, rate: float) -> RunDoc:
    d = synthetic_doc(run_id=f"20260101-00000{i}-a{i}", host=host,
                      started=f"2026-01-0{i + 1}T00:00:00+00:00", rounds=4, seed=i,
                      workloads={wid: {"i386": rate, "x86_64": 100.0}})
    d["host"]["label"] = tag
    d["run"]["config"]["workloads"][wid]["title"] = title
    return RunDoc.from_dict(json.loads(json.dumps(d)))


# No shrinking: an example renders whole pages (seconds); a failure is shown as drawn.
@settings(max_examples=4, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(hosts=st.lists(hostile, min_size=1, max_size=2, unique=True),
       tags=st.lists(hostile, min_size=3, max_size=3), wids=st.lists(workload_id, min_size=1,
                                                                     max_size=2, unique=True),
       title=hostile)
def test_a_hostile_store_gives_pages_that_parse_links_that_resolve_and_no_raw_text(
        tmp_path_factory: Any, hosts: list[str], tags: list[str], wids: list[str],
        title: str) -> None:
    docs = [_doc(i, hosts[i % len(hosts)], tags[i], wids[i % len(wids)], title, 80.0 + 20 * i)
            for i in range(3)]
    site = build(docs)
    root = tmp_path_factory.mktemp("site")
    written = write_site(root, pages(site, f"store {hosts[0]}"))
    assert len(written) == 1 + len(site.trends) + len(site.hosts) + len(docs)
    parsed = check_site(root)
    index = (root / "index.html").read_text()
    for text in [*hosts, *tags, *wids, title]:
        if re.search(r"<[A-Za-z/!?]", text):  # what would open a tag, were it raw
            assert text not in "".join(p.read_text() for p in root.rglob("*.html"))
    for name in hosts:  # shown, cleaned and escaped, never dropped
        assert escape(one_line(name)) in index
    # every run, host and workload page is linked from the index
    linked = {unquote(x) for x in parsed["index.html"].links}
    assert {str(p.relative_to(root)) for p in root.rglob("*/*.html")} <= linked
    for p in root.rglob("*"):  # no name made of stored text: ids or digests only
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._:@\[\]~+=,-]*(\.html)?", p.name), p


def test_site_command_writes_every_page_from_the_store(cli: Cli, make_doc: Any, db_ref: str,
                                                       tmp_path: Path) -> None:
    """Once per backend: a SQLite file and a PostgreSQL database."""
    files = []
    for i, host in enumerate(("hosta", "hostb", "hosta")):
        f = tmp_path / f"r{i}.json"
        f.write_text(json.dumps(make_doc(run_id=f"20260102-00000{i}-b{i}", host=host,
                                         started=f"2026-01-02T0{i}:00:00+00:00", seed=i)))
        files.append(str(f))
    assert cli("--db", db_ref, "import", *files).returncode == 0
    out = tmp_path / "site"
    r = cli("--db", db_ref, "site", str(out))
    assert r.returncode == 0, r.stderr
    assert "site: " in r.stdout and "8 pages" in r.stdout  # index, 2 workloads, 2 hosts, 3 runs
    check_site(out)
    assert len(list(out.glob("runs/*.html"))) == 3 and len(list(out.glob("hosts/*.html"))) == 2
    across = (out / "workloads" / "alpha.html").read_text()
    assert "across hosts (by host)" in across and across.count("<svg ") >= 6
    if db_ref.startswith("postgresql://"):  # the server is named, never its password
        assert db_ref not in r.stdout + r.stderr + (out / "index.html").read_text()
    # a file where the directory should be: one line, exit 2, nothing written
    r = cli("--db", db_ref, "site", files[0])
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_site_is_never_written_inside_what_abibench_reads(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """outputs.py's fixed places: the cache, the data directory's own files, the package."""
    monkeypatch.setenv("ABIBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ABIBENCH_DATA", str(tmp_path / "data"))
    docs = [_doc(0, "h", "t", "alpha", "title", 90.0)]
    for where in (cache_dir() / "site", data_dir() / "profiles" / "site", PACKAGE_DIR / "site"):
        with pytest.raises(UsageError, match="never writes over what it reads"):
            update_site(docs, "store", where)
        assert not where.exists()
