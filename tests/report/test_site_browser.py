"""The site in Debian's headless Chromium, from file:// URLs: every page kind loads with no
console message (a CSP violation or an error would be one), its charts are painted, the links
the browser sees resolve to written pages, and nothing is fetched. Screenshots go to
tests/report/artifacts/ for a human to look at."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pytest
from PIL import Image

from abibench.analyse.site import build
from abibench.records import RunDoc
from abibench.report.charts import PALETTE
from abibench.report.site import pages, write_site
from tests.conftest import synthetic_doc
from tests.report.test_browser import (  # noqa: F401 (proxy: a fixture)
    CHROMIUM,
    _page_requests,
    _Proxy,
    proxy,
)

ARTIFACTS = Path(__file__).parent / "artifacts"
pytestmark = pytest.mark.needs_setup("chromium")


def chromium(page: Path, tmp: Path, logger: _Proxy, *extra: str) -> tuple[str, list[str]]:
    """(dumped DOM or '', the page's console messages)."""
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    argv = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-extensions", "--disable-default-apps", "--no-pings",
            "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter",
            f"--user-data-dir={profile}", f"--proxy-server=http://127.0.0.1:{logger.server_port}",
            "--proxy-bypass-list=<-loopback>", "--hide-scrollbars", "--enable-logging=stderr",
            "--v=0", "--virtual-time-budget=3000", *extra, page.resolve().as_uri()]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, [x for x in proc.stderr.splitlines() if ":CONSOLE" in x]


def _near(png: Path, hex_colour: str, within: int = 40) -> int:
    want = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])
    with Image.open(png) as im:
        rgb = np.asarray(im.convert("RGB"), dtype=np.int16)
    return int((np.abs(rgb - want) <= within).all(axis=2).sum())


def _docs() -> list[RunDoc]:
    out = []
    for i, (host, rate) in enumerate((("hostA", 80.0), ("hostA", 81.0), ("hostA", 95.0),
                                      ("hostA", 96.0), ("<b>hostB</b>", 90.0))):
        d = synthetic_doc(run_id=f"20260104-00000{i}-d{i}", host=host, rounds=6, seed=i,
                          started=f"2026-01-04T0{i}:00:00+00:00",
                          workloads={"alpha": {"i386": rate, "x86_64": 100.0}})
        d["host"]["label"] = "v1" if i < 2 else "v2"
        out.append(RunDoc.from_dict(json.loads(json.dumps(d))))
    return out


def test_the_site_in_chromium(tmp_path: Path, proxy: _Proxy) -> None:  # noqa: F811
    control = tmp_path / "control.html"
    control.write_text("<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" "
                       "content=\"default-src 'none'\"><title>c</title></head><body><script>"
                       "console.error('boom')</script></body></html>")
    assert chromium(control, tmp_path, proxy, "--dump-dom")[1]  # the detector sees one
    root = tmp_path / "site"
    site = build(_docs())
    write_site(root, pages(site, "test store"))
    ARTIFACTS.mkdir(exist_ok=True)
    kinds = {"index": root / "index.html", "workload": root / "workloads" / "alpha.html",
             "host": root / "hosts" / "hostA.html",
             "run": next(iter(sorted(root.glob("runs/*.html"))))}
    for kind, page in kinds.items():
        proxy.log.clear()
        png = ARTIFACTS / f"site-{kind}.png"
        png.unlink(missing_ok=True)
        # One browser both paints and dumps the page: the pages have no script, so the DOM is
        # the same at any window size (tests/report/test_browser.py does the same).
        dom, console = chromium(page, tmp_path, proxy, "--dump-dom", f"--screenshot={png}",
                                "--window-size=1280,1600")
        assert png.is_file(), kind
        assert console == [], (kind, console)
        assert _page_requests(proxy.log) == [], kind
        assert "<script" not in dom and "&lt;b&gt;hostB" in dom if kind == "index" else True
        for ref in re.findall(r'<a [^>]*href="([^"]+)"', dom):
            if ref.startswith("data:"):
                continue
            path = ref.split("#", 1)[0]
            target = (page.parent / unquote(path)).resolve() if path else page
            assert target.is_file() and target.is_relative_to(root.resolve()), (kind, ref)
        print(f"screenshot: {png}")
        if kind in ("workload", "run"):
            assert dom.count("<svg ") >= 3, kind
            # the charts were painted: the series colours cover real areas (a history's
            # points are small and anti-aliased: near the colour, not exactly it)
            near = sum(_near(png, c) for c in PALETTE[:3])
            assert near > 100, (kind, near)
    workload = (root / "workloads" / "alpha.html").read_text()
    assert "change in i386/x86_64 ratio" in workload and "across hosts (by host)" in workload
