"""The store as a site: its hosts, its runs, and each workload's history per host (and across
hosts), for `abibench site` (report/site.py renders it).

Nothing here is new analysis: a workload's trend is analyse/history.py's, run on one host's
runs at a time, since another machine is another level; across hosts it is the same history
by host. What this module adds is the grouping, and which runs and workloads a page lists.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..axes import axes_of
from ..records import RunDoc
from .changes import Spread
from .history import History, history, host_key, spreads

UNKNOWN_HOST = "(no host name)"


@dataclass(frozen=True)
class RunEntry:
    doc: RunDoc
    host: str  # the run's host name, or UNKNOWN_HOST
    tag: str | None
    workloads: tuple[str, ...]  # the workloads it has counted samples of

    @property
    def id(self) -> str:
        return self.doc.id


@dataclass(frozen=True)
class HostEntry:
    name: str
    runs: tuple[RunEntry, ...]  # oldest first

    @property
    def newest(self) -> RunDoc:
        return self.runs[-1].doc

    @property
    def workloads(self) -> tuple[str, ...]:
        return tuple(sorted({w for r in self.runs for w in r.workloads}))


@dataclass(frozen=True)
class Trend:
    """One workload: its history on each host that measured it, and across hosts."""

    workload: str
    title: str
    per_host: tuple[tuple[str, History], ...]
    across: History | None  # by host, when more than one host measured it
    runs: int

    @property
    def changes(self) -> int:
        return sum(len(h.changes) for _, h in self.per_host)


@dataclass(frozen=True)
class Summary:
    """What the index says of a workload: kept by an incremental site for pages not rebuilt."""

    workload: str
    title: str
    runs: int
    hosts: int
    changes: int


def summary(w: Trend) -> Summary:
    return Summary(w.workload, w.title, w.runs, len(w.per_host), w.changes)


@dataclass(frozen=True)
class Site:
    runs: tuple[RunEntry, ...]  # oldest first
    hosts: tuple[HostEntry, ...]  # by name
    trends: tuple[Trend, ...]  # by workload id (an incremental site: only those asked for)
    workloads: tuple[str, ...] = ()  # every workload id of the runs, sorted

    def trend(self, workload: str) -> Trend | None:
        return next((w for w in self.trends if w.workload == workload), None)


def host_of(doc: RunDoc) -> str:
    return axes_of(doc)["host"] or UNKNOWN_HOST


def entry(doc: RunDoc) -> RunEntry:
    measured = tuple(sorted(w for w in doc.workloads if doc.counted(w)))
    return RunEntry(doc, host_of(doc), axes_of(doc)["tag"], measured)


def trend(workload: str, runs: Sequence[RunEntry],
          priors: dict[str, dict[str, Spread]] | None = None) -> Trend:
    """The workload's history on each host (its runs only), and by host across them.
    ``priors``: each host's run-to-run spreads (analyse/history.spreads), keyed by the host
    name history reads (computed when not given)."""
    having = [r for r in runs if workload in r.workloads]
    hosts = sorted({r.host for r in having})
    if priors is None:
        priors = host_priors([r.doc for r in runs])
    per_host = []
    for name in hosts:
        docs = [r.doc for r in having if r.host == name]
        per_host.append((name, history(docs, workload, "version", priors=priors)))
    across = (history([r.doc for r in having], workload, "host", priors=priors)
              if len(hosts) > 1 else None)
    newest = max(having, key=lambda r: (r.doc.run.started, r.id)).doc
    title = newest.workloads[workload].title
    return Trend(workload, title, tuple(per_host), across, len(having))


def build(docs: Sequence[RunDoc], only: Collection[str] | None = None) -> Site:
    """The site of every run in ``docs`` (any order); the trends of the workloads in ``only``
    (every workload when None: a trend is the costly part)."""
    runs = tuple(entry(d) for d in sorted(docs, key=lambda d: (d.run.started, d.id)))
    names = sorted({r.host for r in runs})
    hosts = tuple(HostEntry(n, tuple(r for r in runs if r.host == n)) for n in names)
    workloads = tuple(sorted({w for r in runs for w in r.workloads}))
    wanted = [w for w in workloads if only is None or w in only]
    priors = host_priors([r.doc for r in runs]) if wanted else {}
    return Site(runs, hosts, tuple(trend(w, runs, priors) for w in wanted), workloads)


def host_priors(docs: Sequence[RunDoc]) -> dict[str, dict[str, Spread]]:
    """Each host's run-to-run spreads, once for the whole site."""
    names = {host_key(d) for d in docs}
    return {n: spreads([d for d in docs if host_key(d) == n]) for n in names}
