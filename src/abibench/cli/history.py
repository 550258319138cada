"""`abibench history`: one workload over the stored runs; `abibench site`: all of them as pages."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..axes import AXES
from ..errors import EXIT_OK, UsageError
from .argtypes import Commands
from .options import _check_outputs, _db_option
from .printing import _say

if TYPE_CHECKING:
    from ..store.sql import SqlStore


def add_parser(sub: Commands) -> None:
    hi = sub.add_parser("history")
    hi.add_argument("workload", metavar="WORKLOAD")
    hi.add_argument("--by", choices=tuple(AXES), default="version",
                    help="the axis shown per run (default version: the run's --label tag, else "
                    "the program's version or build digest); host: every host's runs, each host "
                    "searched for changes over its own runs, the hosts compared in a table of "
                    "their own")
    hi.add_argument("--host", default=None, help="only this host's runs (default: the newest "
                    "run's host)")
    hi.add_argument("--json", action="store_true", help="the history as JSON")
    hi.add_argument("--markdown", type=Path, default=None, help="write Markdown to this file")
    hi.add_argument("--html", type=Path, default=None,
                    help="write a self-contained HTML page with a chart per series")
    _db_option(hi)
    st = sub.add_parser("site")
    st.add_argument("outdir", type=Path, metavar="DIR", help="where the pages go (created when "
                    "missing); DIR/index.html is the way in")
    st.add_argument("--rebuild", action="store_true", help="write every page (default: only "
                    "the pages whose inputs changed since the last `site` into DIR)")
    _db_option(st)


def cmd_history(args: argparse.Namespace, store: SqlStore) -> int:
    # Imported when the command runs, not at the top: parsing its command line (a refusal,
    # --help) does not pay for what only running it needs.
    from ..analyse.history import history
    from ..report import history as shown
    from ..report import write_file
    from ..store.history import stored_runs

    try:
        h = history(stored_runs(store), args.workload, args.by, host=args.host)
    except ValueError as exc:
        raise UsageError(f"{exc} in {store.label}: see `abibench runs`") from None
    _check_outputs(("--markdown", args.markdown), ("--html", args.html))  # both, then write
    if args.markdown is not None:
        write_file(args.markdown, shown.markdown(h), "--markdown")
        _say(f"markdown: {args.markdown}", sys.stderr)
    if args.html is not None:
        from ..report.historyhtml import render as page

        write_file(args.html, page(h), "--html")
        _say(f"html: {args.html}", sys.stderr)
    sys.stdout.write(shown.json_text(h) if args.json else shown.terminal(h))
    return EXIT_OK


def cmd_site(args: argparse.Namespace, store: SqlStore) -> int:
    """`abibench site DIR`: the store as static pages (report/site.py), only those whose inputs
    changed rewritten (report/siteupdate.py)."""
    from ..report.siteupdate import update_site
    from ..store.history import stored_runs

    got = update_site(stored_runs(store), store.label, args.outdir, rebuild=args.rebuild,
                      progress=lambda msg: _say(msg, sys.stderr))
    _say(f"site: {args.outdir}/index.html ({got.pages} pages: {len(got.written)} written "
         f"({got.bytes / 1e6:.1f} MB), {got.kept} unchanged, {len(got.removed)} removed)")
    return EXIT_OK
