"""`abibench site DIR` incrementally: rewrite only the pages whose inputs changed.

DIR holds a manifest (MANIFEST) of every page it wrote: the digest of the page's inputs and of
the bytes written. A page's inputs are what it shows and links to:

* a run's report: the run's document;
* a host page: its runs' documents and the names of the pages it links;
* a workload page: every run of every host that measured it (a host's run-to-run spread, which
  the change detector uses, pools all its workloads) and the names of the pages it links;
* the index: every run, the source's name and every workload's summary;

and every one of them the code that renders it (a digest of abibench's own source files), so
a new abibench rewrites the site. A page is written when its input digest differs from the
manifest's, when its file is missing, or when the file's bytes are not those the manifest
recorded (edited by hand); the pages of a deleted run (and of a workload or host no run has any
more) are removed, and only files the manifest names. A missing or unreadable manifest is an
empty one: every page is written.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..analyse.site import Site, Summary, build, summary
from ..errors import UsageError
from ..outputs import check_output, write_output
from ..records import RunDoc
from . import site as pages

MANIFEST = ".abibench-site.json"
FORMAT = 1
# The only paths a manifest may name (and so the only files an update may remove).
_PAGE = re.compile(r"^(?:index|(?:runs|hosts|workloads)/[A-Za-z0-9_][A-Za-z0-9_.+-]*)\.html$")


@dataclass(frozen=True)
class Update:
    written: tuple[str, ...]
    removed: tuple[str, ...]
    kept: int
    pages: int
    bytes: int  # of the pages written


def digest(*parts: object) -> str:
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str,
                      ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@cache
def code_digest() -> str:
    """abibench's own source: any change to how a page is made rewrites every page."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def run_digest(doc: RunDoc) -> str:
    return digest(doc.to_dict())


def read_manifest(out_dir: Path) -> dict[str, dict[str, object]]:
    """The pages the last `site` wrote here; {} when there is no usable manifest (then every
    page is written, and no file is removed)."""
    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    got = data.get("pages")
    if not isinstance(got, dict):
        return {}
    return {k: v for k, v in got.items()
            if isinstance(k, str) and _PAGE.match(k) and isinstance(v, dict)}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    except OSError:
        return None


def inputs(site: Site, names: pages.Names, runs: dict[str, str], source: str,
           summaries: Callable[[], list[Summary]]) -> dict[str, str]:
    """Every page's input digest, by its path. ``runs``: run id -> its document's digest."""
    code = code_digest()
    out = {names.runs[r.id]: digest(code, runs[r.id]) for r in site.runs}
    for x in site.hosts:
        out[names.hosts[x.name]] = digest(
            code, x.name, [(r.id, runs[r.id], names.runs[r.id]) for r in x.runs],
            [names.workloads[w] for w in x.workloads])
    for w in site.workloads:
        hosts = {r.host for r in site.runs if w in r.workloads}
        seen = [(r.id, runs[r.id], names.runs[r.id], names.hosts[r.host])
                for r in site.runs if r.host in hosts]
        out[names.workloads[w]] = digest(code, w, seen)
    out["index.html"] = digest(code, source, sorted(runs.items()), sorted(names.runs.items()),
                               sorted(names.hosts.items()), sorted(names.workloads.items()),
                               [vars(s) for s in summaries()])
    return out


def _stale(out_dir: Path, want: dict[str, str], old: dict[str, dict[str, object]],
           rebuild: bool) -> set[str]:
    stale = set()
    for rel, d in want.items():
        had = old.get(rel, {})
        if rebuild or had.get("input") != d or had.get("output") != _file_digest(out_dir / rel):
            stale.add(rel)
    return stale


def update_site(docs: Sequence[RunDoc], source: str, out_dir: Path, *, rebuild: bool = False,
                progress: Callable[[str], None] | None = None) -> Update:
    """`abibench site DIR`: the pages of ``docs`` whose inputs changed, written under
    ``out_dir``; the pages of runs no longer in the store removed."""
    if not docs:
        raise UsageError(f"{pages.t(source)} holds no run: measure one (`abibench run`) or "
                         "import some (`abibench import FILE.json`) first")
    pages.check_dir(out_dir)  # refused before any work is done
    old = read_manifest(out_dir)
    bare = build(docs, only=())
    names = pages.Names(bare)
    runs = {r.id: run_digest(r.doc) for r in bare.runs}
    cached = {k: v.get("summary") for k, v in old.items()}
    want_wl = {names.workloads[w]: w for w in bare.workloads}
    first = inputs(bare, names, runs, source, lambda: [])
    stale = _stale(out_dir, first, old, rebuild)
    # trends to build: the stale workload pages', and those the index has no summary of
    need = {w for rel, w in want_wl.items() if rel in stale or not _summary(cached.get(rel))}
    site = build(docs, only=need) if need else bare
    said = _summaries(site, names, cached)
    want = inputs(site, names, runs, source, lambda: said)
    stale = _stale(out_dir, want, old, rebuild)
    made = render(site, names, source, said, stale, progress)
    written = _write(out_dir, made)
    removed = _remove(out_dir, [rel for rel in old if rel not in want])
    manifest = {"format": FORMAT, "pages": {
        rel: {"input": d, "output": written.get(rel, old.get(rel, {}).get("output")),
              **({"summary": vars(s)} if (s := _summary_of(rel, want_wl, said)) else {})}
        for rel, d in want.items()}}
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    if made or removed or _read(out_dir / MANIFEST) != text:  # nothing new: nothing written
        write_output(out_dir / MANIFEST, text, "site DIR")
    size = sum(len(text.encode("utf-8")) for text in made.values())
    return Update(tuple(sorted(made)), tuple(removed), len(want) - len(made), len(want), size)


def _summary(raw: object) -> Summary | None:
    """A cached summary as the manifest holds it; None when it is not one."""
    if not isinstance(raw, dict):
        return None
    try:
        got = Summary(**raw)
    except TypeError:
        return None
    ok = (isinstance(got.workload, str) and isinstance(got.title, str)
          and all(isinstance(n, int) for n in (got.runs, got.hosts, got.changes)))
    return got if ok else None


def _summaries(site: Site, names: pages.Names, cached: dict[str, object]) -> list[Summary]:
    out = []
    for w in site.workloads:
        computed = site.trend(w)
        got = summary(computed) if computed is not None else _summary(
            cached.get(names.workloads[w]))
        if got is not None:
            out.append(got)
    return out


def _summary_of(rel: str, want_wl: dict[str, str], said: Iterable[Summary]) -> Summary | None:
    w = want_wl.get(rel)
    return next((s for s in said if s.workload == w), None) if w is not None else None


def render(site: Site, names: pages.Names, source: str, said: Sequence[Summary],
           stale: set[str], progress: Callable[[str], None] | None) -> dict[str, str]:
    """The stale pages' content, by path."""
    out: dict[str, str] = {}
    if "index.html" in stale:
        out["index.html"] = pages.index_page(site, names, source, said)
    for w in site.trends:
        if names.workloads[w.workload] in stale:
            out[names.workloads[w.workload]] = pages.workload_page(w, names)
    for x in site.hosts:
        if names.hosts[x.name] in stale:
            out[names.hosts[x.name]] = pages.host_page(x, site, names)
    todo = [r for r in site.runs if names.runs[r.id] in stale]
    for i, r in enumerate(todo):
        if progress is not None:
            progress(f"run report {i + 1}/{len(todo)}")
        out[names.runs[r.id]] = pages.run_page(r)
    missing = stale - set(out)
    if missing:  # a stale workload page whose trend was not built: a bug, never a silent gap
        raise RuntimeError(f"site: pages not rendered: {sorted(missing)[:3]}")
    return out


def _write(out_dir: Path, made: dict[str, str]) -> dict[str, str]:
    """Every page through pages.write_site (paths checked first); their bytes' digests."""
    pages.write_site(out_dir, made)
    return {rel: hashlib.sha256(text.encode("utf-8")).hexdigest() for rel, text in made.items()}


def _remove(out_dir: Path, gone: Iterable[str]) -> list[str]:
    """The pages the manifest named that the store no longer has (a deleted run's), removed:
    only names of the manifest's shape, only regular files, never through a link."""
    removed = []
    for rel in sorted(gone):
        path = out_dir / rel
        if not _PAGE.match(rel) or path.is_symlink() or not path.is_file():
            continue
        check_output(path, "site DIR")
        path.unlink()
        removed.append(rel)
    return removed
