"""A system run's page (abibench system run) in the site and in `report --html`, in Debian's
headless Chromium from a file:// URL: the run pages' look (their stylesheet, header and
navigation), the stacked bars painted, no console message (a CSP violation or an error would be
one), nothing fetched. Screenshots go to tests/report/artifacts/ for a human to look at."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from abibench.analyse.site import build
from abibench.records import HostContext, Run, RunConfig, RunDoc
from abibench.report.htmlkit import CSP, esc
from abibench.report.site import pages, write_site
from abibench.report.system import STACK
from tests.conftest import synthetic_doc
from tests.report.test_browser import (  # noqa: F401 (proxy: a fixture)
    _page_requests,
    _Proxy,
    proxy,
)
from tests.report.test_site_browser import _near, chromium
from tests.sysframes import system_boot, system_config

ARTIFACTS = Path(__file__).parent / "artifacts"
pytestmark = pytest.mark.needs_setup("chromium")
COMBOS = ("686-pae:i386", "amd64:i386", "amd64:x86_64")
HEADER = "#24303f"  # the run reports' header (htmlkit.STYLE)


def _system_doc() -> RunDoc:
    boots = tuple(system_boot(i, COMBOS[i % 3], 300_000 - 20_000 * (i % 3) - 300 * i)
                  for i in range(6))
    run = Run("20261126-190000-5e5e5e5e", "2026-11-26T19:00:00+00:00",
              "2026-11-26T19:30:00+00:00", "complete", "0", RunConfig(
                  system=system_config(COMBOS, 2)))
    return RunDoc(run, HostContext(), (), system_boots=boots)


def test_the_system_page_has_the_run_pages_look_in_chromium(tmp_path: Path,
                                                            proxy: _Proxy) -> None:  # noqa: F811
    programs = RunDoc.from_dict(json.loads(json.dumps(synthetic_doc(
        run_id="20261126-180000-d0", rounds=4, started="2026-11-26T18:00:00+00:00"))))
    root = tmp_path / "site"
    write_site(root, pages(build([programs, _system_doc()]), "test store"))
    page = root / "runs" / "20261126-190000-5e5e5e5e.html"
    ordinary = (root / "runs" / "20261126-180000-d0.html").read_text()
    text = page.read_text()
    # The run pages' stylesheet and policy, word for word, and a header with in-page navigation.
    style = re.search(r"<style>(.*?)</style>", text, re.S)
    assert style is not None and style.group(1) in ordinary
    assert f'content="{esc(CSP)}"' in text and f'content="{esc(CSP)}"' in ordinary
    assert re.search(r"<header><h1>System server[^<]*</h1><p>[^<]+</p><nav>", text)
    for anchor in re.findall(r'<nav>.*?</nav>', text, re.S)[0].split('href="#')[1:]:
        assert f'id="{anchor.split(chr(34))[0]}"' in text, anchor
    ARTIFACTS.mkdir(exist_ok=True)
    png = ARTIFACTS / "site-system.png"
    png.unlink(missing_ok=True)
    proxy.log.clear()
    chromium(page, tmp_path, proxy, f"--screenshot={png}", "--window-size=1280,1600")
    dom, console = chromium(page, tmp_path, proxy, "--dump-dom")
    assert console == [] and _page_requests(proxy.log) == [], console
    assert dom.count("<svg ") == 1 and "<script" not in dom
    assert all(f"amd64 kernel + {u}" in dom for u in ("i386", "x86_64"))
    print(f"screenshot: {png}")
    # Painted: the header's colour across the page's width, and each layer of the bars.
    assert _near(png, HEADER, within=4) > 1280 * 40
    for key, colour in STACK:
        assert _near(png, colour, within=8) > 3 * 1000, key
