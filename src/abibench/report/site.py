"""`abibench site DIR`: the store as static pages that work from a file system (no server, no
scripts): an index of hosts, workloads and runs; a page per workload (its trend and change points
on each host, and across hosts); a page per host; every run's own HTML report (report/html.py).

Every page has the run report's guarantees: built with `html.h`, which escapes every string;
every string from a run (names, tags, labels, host names, titles: an import may hold anything)
passes the one sanitiser (`text.one_line`) first; charts are `charts.check_svg`'d SVG; the same
Content-Security-Policy. File names are never made of stored text: an identifier that
`ids.check_id` accepts names its page, anything else (every host name that is not one, an id
from an older store) a digest of it. Every file is written by `outputs.write_output`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from ..analyse import report as analysis
from ..analyse.history import History
from ..analyse.site import HostEntry, RunEntry, Site, Summary, Trend, summary
from ..analyse.system import analyse_doc
from ..errors import UsageError
from ..ids import id_problem
from ..outputs import check_output, write_output
from ..text import one_line
from . import html as run_html
from .history import change_sentences, rows
from .historyhtml import hosts_section, series_svg
from .html import CSP, STYLE, Html, h, join
from .system import to_html as system_html

SITE_STYLE = STYLE + """
header nav a{color:#fff;margin-right:14px}
td.changed{font-weight:600;color:var(--bad)}
"""

Pages = dict[str, str]  # relative path ('runs/ID.html') -> content


def t(value: object) -> str:
    """Stored text, as a page shows it: one line, no control or escape sequence (h escapes)."""
    return one_line("-" if value is None else str(value))


def page_name(kind: str, key: str, taken: set[str]) -> str:
    """A file name for ``key`` in directory ``kind``: the key itself when it is a valid
    identifier (ids.py: never a path) and no other page's name folds to it case-insensitively;
    else '_' and a digest (no identifier starts with '_', so the two never meet)."""
    name = key if id_problem(key) is None else ""
    if not name or name.lower() in taken:
        name = "_" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    taken.add(name.lower())
    return f"{kind}/{name}.html"


class Names:
    """Where every page of the site is, relative to the site's root."""

    def __init__(self, site: Site) -> None:
        taken: dict[str, set[str]] = {"runs": set(), "hosts": set(), "workloads": set()}
        self.runs = {r.id: page_name("runs", r.id, taken["runs"]) for r in site.runs}
        self.hosts = {x.name: page_name("hosts", x.name, taken["hosts"]) for x in site.hosts}
        self.workloads = {w: page_name("workloads", w, taken["workloads"])
                          for w in site.workloads}


def href(here: str, target: str) -> str:
    """A link from page ``here`` to page ``target`` (both relative to the root), encoded so
    that no character of a name can make it a scheme, a query or a fragment."""
    up = "../" * here.count("/")
    return up + quote(target)


def link(here: str, target: str | None, text: object) -> Html:
    if target is None:
        return h("span", t(text))
    return h("a", t(text), href=href(here, target))


def page(here: str, title: str, *body: object) -> str:
    head = join([h("meta", charset="utf-8"),
                 h("meta", http_equiv="Content-Security-Policy", content=CSP),
                 h("meta", name="referrer", content="no-referrer"),
                 h("meta", name="viewport", content="width=device-width, initial-scale=1"),
                 h("title", t(title)), h("style", Html(SITE_STYLE))])
    nav = h("nav", h("a", "index", href=href(here, "index.html")),
            h("a", "hosts", href=href(here, "index.html") + "#hosts"),
            h("a", "workloads", href=href(here, "index.html") + "#workloads"),
            h("a", "runs", href=href(here, "index.html") + "#runs"))
    top = h("header", h("h1", t(title)), nav)
    doc = h("html", h("head", head), h("body", top, h("main", *body)), lang="en")
    return "<!DOCTYPE html>\n" + doc + "\n"


def table(head: Sequence[str], body: Iterable[Sequence[object]]) -> Html:
    return h("div", h("table", h("thead", h("tr", *[h("th", c) for c in head])),
                      h("tbody", *[h("tr", *[c if isinstance(c, Html) else h("td", t(c))
                                             for c in r]) for r in body])),
             class_="tablewrap")


def cell(content: Html) -> Html:
    return h("td", content)


def run_rows(here: str, names: Names, runs: Sequence[RunEntry]) -> list[list[object]]:
    out: list[list[object]] = []
    for r in sorted(runs, key=lambda x: (x.doc.run.started, x.id), reverse=True):
        wl = join([link(here, names.workloads.get(w), w) if i == 0 else
                   join([", ", link(here, names.workloads.get(w), w)])
                   for i, w in enumerate(r.workloads)])
        config = r.doc.run.config.system
        if config is not None:
            wl = join([f"system {config.profile} ({len(r.doc.system_boots)} boots)"])
        out.append([cell(link(here, names.runs[r.id], r.id)), r.doc.run.started[:19],
                    r.doc.run.status, cell(link(here, names.hosts[r.host], r.host)),
                    r.tag, cell(h("span", wl)), len(r.doc.samples)])
    return out


RUN_HEAD = ["run", "started", "status", "host", "tag", "workloads", "samples"]


def index_page(site: Site, names: Names, source: str,
               summaries: Sequence[Summary] | None = None) -> str:
    here = "index.html"
    hosts = [[cell(link(here, names.hosts[x.name], x.name)), len(x.runs),
              x.runs[0].doc.run.started[:19], x.runs[-1].doc.run.started[:19],
              x.newest.host.cpu_model, x.newest.host.kernel_release, len(x.workloads)]
             for x in site.hosts]
    said = [summary(w) for w in site.trends] if summaries is None else summaries
    trends = [[cell(link(here, names.workloads[w.workload], w.workload)), w.title, w.runs,
               w.hosts, w.changes] for w in said]
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return page(here, "abibench results",
                h("p", f"{len(site.runs)} runs from {len(site.hosts)} hosts, "
                       f"{len(site.workloads)} workloads; from {t(source)}, written {made}.",
                  class_="muted"),
                h("section", h("h2", "Hosts"), table(
                    ["host", "runs", "first run", "last run", "CPU", "kernel", "workloads"],
                    hosts), id="hosts"),
                h("section", h("h2", "Workloads"), table(
                    ["workload", "title", "runs", "hosts", "changes detected"], trends),
                  id="workloads"),
                h("section", h("h2", "Runs"), h("p", "newest first; each run id opens its "
                                                     "report", class_="muted"),
                  table(RUN_HEAD, run_rows(here, names, site.runs)), id="runs"))


def history_section(here: str, names: Names, hist: History, heading: str, salt: str) -> Html:
    """A history as the history page shows it (report/historyhtml.py), its runs linked."""
    head, body = rows(hist)
    linked: list[list[object]] = []
    for r in body:
        first = cell(link(here, names.runs.get(r[0]), r[0]))
        linked.append([first, *r[1:]])
    figures = [Html(series_svg(hist, s, f"{salt}-{i}")) for i, s in enumerate(hist.series)]
    said = change_sentences(hist) or ["no change point"]
    return h("section", h("h2", t(heading)),
             h("p", f"{hist.metric} ({t(hist.unit) or 'no unit'}, {hist.better} is better) "
                    f"over {len(hist.points)} runs, by {hist.by}; ratios are other/reference",
               class_="muted"),
             h("ul", *[h("li", t(x)) for x in [*said, *hist.notes]]),
             h("div", *[h("figure", f) for f in figures], class_="charts"),
             table([t(c) for c in head], linked), hosts_section(hist))


def workload_page(w: Trend, names: Names) -> str:
    here = names.workloads[w.workload]
    parts: list[object] = [h("p", t(w.title), class_="muted")]
    for i, (host, hist) in enumerate(w.per_host):
        parts.append(h("p", "host: ", link(here, names.hosts.get(host), host)))
        parts.append(history_section(here, names, hist, f"on {host}", f"{w.workload}-h{i}"))
    if w.across is not None:
        parts.append(history_section(here, names, w.across, "across hosts (by host)",
                                     f"{w.workload}-all"))
    parts.append(h("footer", "Grey lines: each level's geometric mean; red rings: the first "
                             "run of a new level (binary segmentation with a permutation test, "
                             "docs/method.md)."))
    return page(here, f"workload {w.workload}", *parts)


def host_page(x: HostEntry, site: Site, names: Names) -> str:
    here = names.hosts[x.name]
    ctx = x.newest.host
    facts = [("CPU", ctx.cpu_model), ("CPUs online", ctx.cpus_online), ("machine", ctx.machine),
             ("kernel", ctx.kernel_release), ("kernel bits", ctx.kernel_bits),
             ("distribution", ctx.os_release), ("C library", ctx.libc),
             ("compilers", ", ".join(f"{k} {v}" for k, v in sorted(ctx.compilers.items()))),
             ("virtualisation", ctx.virtualization), ("governor", ctx.governor)]
    trends = [[cell(link(here, names.workloads[w], w)),
               sum(1 for r in x.runs if w in r.workloads)] for w in x.workloads]
    return page(here, f"host {x.name}",
                h("section", h("h2", "Context (its newest run)"),
                  table(["", "value"], [[k, v] for k, v in facts])),
                h("section", h("h2", "Workloads"), table(["workload", "runs"], trends)),
                h("section", h("h2", "Runs"), table(RUN_HEAD, run_rows(here, names, x.runs))))


def run_page(r: RunEntry) -> str:
    system = analyse_doc(r.doc)  # a system run (abibench system run) has its own section
    if system is not None:
        return system_html(system)
    return run_html.render(analysis.from_run(r.doc, source=f"run {r.id}"))


def pages(site: Site, source: str, progress: Callable[[str], None] | None = None) -> Pages:
    """Every page of the site, by its path relative to the root."""
    names = Names(site)
    out: Pages = {"index.html": index_page(site, names, source)}
    for w in site.trends:
        out[names.workloads[w.workload]] = workload_page(w, names)
    for x in site.hosts:
        out[names.hosts[x.name]] = host_page(x, site, names)
    for i, r in enumerate(site.runs):
        if progress is not None:
            progress(f"run report {i + 1}/{len(site.runs)}")
        out[names.runs[r.id]] = run_page(r)
    return out


def check_dir(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"site {out_dir} is a file, not a directory: name a directory (it is "
                         "created when missing)")
    check_output(out_dir / "index.html", "site DIR")


def write_site(out_dir: Path, site_pages: Pages) -> list[Path]:
    """Every page under ``out_dir``, each through outputs.write_output (never over an input,
    atomically); every path checked before the first is written."""
    check_dir(out_dir)
    targets = [(out_dir / rel, text) for rel, text in sorted(site_pages.items())]
    for path, _ in targets:
        check_output(path, "site DIR")
    return [write_output(path, text, "site DIR") for path, text in targets]
