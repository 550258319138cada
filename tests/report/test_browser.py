"""The HTML report in a real browser: Debian's headless Chromium, no browser download.

Two things are proved here. (1) Strings from results cannot execute: a results file whose names
carry <script>, <img onerror=...> and quote-breaking payloads is rendered *without* the
Content-Security-Policy (so only the escaping stands between the payload and the browser),
opened in Chromium, and the dumped DOM and every network request are checked. A control page
with the same payload unescaped shows the detector does see execution. (2) The report of a real
run opens offline with every section and chart; screenshots at desktop and phone widths are kept
in tests/artifacts/ for a human to look at.

Every page is loaded from a file:// URL with Chromium's proxy pointed at a local logging server,
so any request the page makes, to any host, is seen. Chromium's own background traffic to its
update and account services is the only thing ignored.
"""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from abibench.analyse import report as analysis
from abibench.records import RunDoc
from abibench.report import html
from abibench.report.charts import PALETTE

Cli = Callable[..., subprocess.CompletedProcess[str]]

MakeDoc = Callable[..., dict[str, Any]]


CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"
BROWSER_OWN = ("update.googleapis.com", "accounts.google.com", "clients2.google.com")

pytestmark = pytest.mark.needs_setup("chromium")  # Debian's: CHROMIUM


class _Proxy(http.server.ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Logger)
        self.log: list[str] = []


class _Logger(http.server.BaseHTTPRequestHandler):
    server: _Proxy

    def _any(self) -> None:
        self.server.log.append(f"{self.command} {self.path}")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_HEAD = do_PUT = do_OPTIONS = do_CONNECT = _any

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def proxy() -> Iterator[_Proxy]:
    srv = _Proxy()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join()


def _page_requests(log: list[str]) -> list[str]:
    return [r for r in log if not any(h in r for h in BROWSER_OWN)]


def chromium(page: Path, tmp: Path, proxy: _Proxy, *extra: str) -> str:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"  # fresh every call
    argv = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-extensions", "--disable-default-apps", "--no-pings",
            "--disable-domain-reliability", "--no-default-browser-check",
            "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter",
            f"--user-data-dir={profile}", f"--proxy-server=http://127.0.0.1:{proxy.server_port}",
            "--proxy-bypass-list=<-loopback>", "--hide-scrollbars",
            "--virtual-time-budget=3000", *extra, page.resolve().as_uri()]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


# --------------------------------------------------------------------------- injection

MARK = "PWNED"
PAYLOADS = [
    f"<script>document.title='{MARK}';document.body.insertAdjacentHTML('beforeend',"
    f"'<p id=\"pwned\"></p>');fetch('http://pwn.invalid/script')</script>",
    f"<img src=\"http://pwn.invalid/img\" onerror=\"document.title='{MARK}'\">",
    f"\"><svg onload=\"document.title='{MARK}'\"><image href=\"http://pwn.invalid/svg\"/>",
    "'><iframe src=\"http://pwn.invalid/frame\"></iframe>",
    f"</title></style><script>document.title='{MARK}'</script>",
    "=HYPERLINK(\"http://pwn.invalid/csv\") $\\frac{1}{0}$ & &amp; `x` [l](javascript:x)",
]


def _evil_doc(make_doc: MakeDoc, host: str, run_id: str) -> dict[str, Any]:
    p = PAYLOADS
    wl, target = f"w{p[0]}", f"t{p[1]}"
    doc = make_doc(run_id=run_id, host=host, targets=(target, "x86_64"),
                   workloads={wl: {target: 90.0, "x86_64": 100.0}, "plain": {"x86_64": 100.0}},
                   params={"n": p[3]})
    meta = doc["run"]["config"]["workloads"][wl]
    meta["title"] = p[2]
    meta["metrics"][f"m{p[4]}"] = {"unit": p[5], "better": "higher"}
    meta["metrics"]["rate"]["unit"] = p[1]
    for s in doc["samples"]:
        s["check"] = p[2]
        s["error"] = p[0]
        if s["workload"] == wl:
            s["metrics"][f"m{p[4]}"] = s["metrics"]["rate"]
    doc["host"].update(cpu_model=p[2], kernel_release=p[3], os_release=p[4], libc=p[5],
                       compilers={p[0]: p[1]}, governor=p[3], virtualization=p[4])
    doc["host"][f"extra{p[0]}"] = {p[1]: [p[2]]}
    doc["warnings"] = [{"workload": None, "target": None, "message": p[0]},
                       {"workload": wl, "target": target, "message": p[1]}]
    doc["outcomes"][wl]["stop_reason"] = p[3]
    doc["target_status"].append({"workload": "plain", "target": target, "state": p[4],
                                 "reason": p[5]})
    for a in doc["artifacts"]:
        a.update(commands=[p[0], p[1]], compiler_version=p[2], build_options=p[3],
                 source_package=p[4], source_version=p[5])
        a["effective"] = {p[2]: p[3]}
    return doc


def _executed(dom: str, log: list[str], title_text: str) -> list[str]:
    """Evidence that a payload ran, from the DOM after load and the requests made."""
    found = []
    title = re.search(r"<title>(.*?)</title>", dom, re.S)
    if title is None or title.group(1) != escape(title_text, quote=False):
        found.append(f"title changed: {title.group(1) if title else None!r}")
    if '<p id="pwned">' in dom:
        found.append("an element was written into the DOM")
    for tag in re.findall(r"<(script|iframe|img|image|object|embed)\b", dom, re.I):
        found.append(f"a <{tag}> element exists")
    for attr in re.findall(r"<[a-zA-Z][^>]*?\s(on[a-z]+)=", dom):
        found.append(f"an {attr} handler exists")
    found += [f"request: {r}" for r in log if "pwn.invalid" in r]
    return found


def test_results_cannot_inject_script_into_the_report(make_doc: MakeDoc, tmp_path: Path,
                                                      proxy: _Proxy) -> None:
    files = []
    for i, host in enumerate((f"h{PAYLOADS[3]}", f"k{PAYLOADS[0]}")):
        f = tmp_path / f"evil{i}.json"
        f.write_text(json.dumps(_evil_doc(make_doc, host, f"run{i}{PAYLOADS[1]}")))
        # Its identifiers are not ones an import accepts (ids.check_id), so it is read as the
        # record it is: the page must hold whatever a record holds.
        files.append(RunDoc.from_dict(json.loads(f.read_text())))
    from abibench.analyse.merge import ResultSet

    single = analysis.from_run(files[0], "evil0.json")
    both = analysis.from_sets([ResultSet(d, f"evil{i}.json") for i, d in enumerate(files)])
    pages = {}
    for name, report in (("single", single), ("comparison", both)):
        text = html.render(report)
        csp = f'<meta http-equiv="Content-Security-Policy" content="{escape(html.CSP)}">'
        assert text.count(csp) == 1  # the default adds the CSP; the escaping must hold alone
        pages[name] = (report, text.replace(csp, ""))

    control = tmp_path / "control.html"
    control.write_text(f"<!DOCTYPE html><html><head><title>ok</title></head><body>{PAYLOADS[0]}"
                       f"{PAYLOADS[1]}</body></html>")
    seen = _executed(chromium(control, tmp_path, proxy, "--dump-dom"), proxy.log, "ok")
    assert any("title changed" in s for s in seen) and any("request" in s for s in seen), seen

    for name, (report, text) in pages.items():
        proxy.log.clear()
        page = tmp_path / f"{name}.html"
        page.write_text(text)
        dom = chromium(page, tmp_path, proxy, "--dump-dom")
        assert _executed(dom, proxy.log, report.title) == [], name
        assert _page_requests(proxy.log) == [], name
        # The payloads are shown, as text.
        assert "&lt;script&gt;document.title='PWNED'" in dom
        assert "&lt;img src=\"http://pwn.invalid/img\" onerror=" in dom
        assert dom.count("<svg") >= 3  # the charts were drawn, with the names as SVG text


# --------------------------------------------------------------------------- a real run


def _colour_pixels(png: Path, hex_colour: str) -> int:
    want = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])
    with Image.open(png) as im:
        rgb = np.asarray(im.convert("RGB"), dtype=np.int16)
    return int((np.abs(rgb - want) <= 6).all(axis=2).sum())


def _assert_complete(dom: str) -> None:
    for section in ("summary", "context", "workloads", "why", "advice", "differences", "memory",
                    "sizes", "provenance", "samples"):
        assert f'<section id="{section}">' in dom, section
    for wid in ("nbody", "ptrtree"):
        assert re.search(rf'<article id="w\d-{wid}"><h3>{wid}</h3>', dom), wid
    svgs = re.findall(r"<svg .*?</svg>", dom, re.S)
    # nbody: steps_per_s + peak RSS; ptrtree: 4 metrics + peak RSS; the why chart; one
    # difference chart.
    assert len(svgs) == 2 + 5 + 1 + 1
    assert all("higher is better" in s or "lower is better" in s for s in svgs)
    assert sum("not run" in s for s in svgs) == 7  # x32 cannot run here: said in every panel
    # Why: the stacked chart of both comparisons, and one explanation each from the counts
    why = re.search(r'<section id="why">.*?</section>', dom, re.S)
    assert why is not None
    assert "instruction-count ratio" in why.group(0) and "time-per-instruction ratio" in why.group(0)
    for wid in ("nbody", "ptrtree"):
        assert f"<h3>{wid}: i386 vs x86_64</h3>" in why.group(0), wid
    assert why.group(0).count("time i386/x86_64 ") == 2
    assert "= instructions " in why.group(0) and "(rule: " in why.group(0)
    # Advice: the table (x32 built, not run: an estimate) and a sentence per workload
    advice = re.search(r'<section id="advice">.*?</section>', dom, re.S)
    assert advice is not None
    assert "x32 (estimate, not measured)" in advice.group(0)
    for wid in ("nbody", "ptrtree"):
        assert re.search(rf"<li>In 4 GiB, i386 fits \d+% (more|fewer) {wid} instances", advice.group(0)), wid
    assert 'download="' in dom and 'href="data:text/csv;charset=utf-8;base64,' in dom
    for needle in ("Verdict per workload", "Results at a glance", "Host context", "kernel",
                   "Peak memory", "Sizes", "Provenance", "Raw samples"):
        assert needle in dom


def test_report_of_a_real_run_in_chromium(cli: Cli, tmp_path: Path, proxy: _Proxy) -> None:
    # --counters: instruction counts for the Why section (insn only: the cheapest valgrind run).
    # Small sizes: what is checked is the page (its sections, charts and sentences), which any
    # size fills; valgrind's counted runs are most of the run's cost.
    r = cli("run", "nbody", "ptrtree", "--rounds", "3", "--set", "steps=50000", "--set",
            "nodes=20000", "--counters")
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"^report: (\S+\.html)", r.stdout, re.M)
    assert m, r.stdout  # the summary of every run points to its report
    assert Path(m.group(1)).is_file()
    assert "explanation" in r.stdout and "why: i386 vs x86_64: " in r.stdout
    # The report with a memory budget has the Advice section too.
    page = tmp_path / "advised.html"
    r = cli("report", "--html", str(page), "--memory", "4GiB")
    assert r.returncode == 0, r.stderr

    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(page, ARTIFACTS / "real-run.html")
    for name, (w, h) in {"desktop": (1280, 12000), "phone": (390, 22000)}.items():
        png = ARTIFACTS / f"real-run-{name}.png"
        png.unlink(missing_ok=True)
        dom = chromium(page, tmp_path, proxy, "--dump-dom", f"--screenshot={png}",
                       f"--window-size={w},{h}")
        print(f"screenshot: {png}")
        _assert_complete(dom)
        with Image.open(png) as im:
            assert im.size == (w, h)
        # The charts were painted: the i386 and x86_64 bar colours cover real areas.
        assert _colour_pixels(png, PALETTE[0]) > 5000 and _colour_pixels(png, PALETTE[1]) > 5000
    assert _page_requests(proxy.log) == []  # offline: the page fetched nothing at all
