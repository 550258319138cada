"""`abibench report` and `abibench compare`: stored runs or result files, rendered."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..errors import EXIT_OK, UsageError
from .argtypes import Commands
from .options import _against_options, _db_option, _deployment, _report_options
from .printing import _print_terminal, _say
from .sources import _report_sources

if TYPE_CHECKING:
    from ..store.sql import SqlStore


def add_parser(sub: Commands) -> None:
    rp = sub.add_parser("report")
    rp.add_argument("run", nargs="*", default=["latest"], metavar="RUN_OR_FILE",
                    help="run ids (default: latest) or exported .json files; two or more are "
                    "merged into one comparison")
    _report_options(rp)
    _db_option(rp)

    cp = sub.add_parser("compare")
    cp.add_argument("sources", nargs="*", metavar="RUN_OR_FILE",
                    help="two or more run ids or exported .json files (default: the runs of the "
                    "last `abibench fleet run`)")
    _report_options(cp)
    _against_options(cp)
    _db_option(cp)


def cmd_report(args: argparse.Namespace, store: SqlStore | None) -> int:
    """store: None when every source is an exported file and there is no database."""
    # Imported when the command runs, not at the top: parsing its command line (a refusal,
    # --help) does not pay for what only running it needs.
    from ..analyse import report as analysis
    from ..report import Output, write
    from ..store.sources import latest_fleet, load_sources
    from .against import cmd_compare_against

    if args.command == "compare" and (args.against or args.fail_on_slowdown is not None):
        return cmd_compare_against(args, store)
    sources = _report_sources(args)
    if args.command == "compare" and not sources and store is not None:
        sources = latest_fleet(store)  # `compare` alone: every host of the last fleet run
    if args.command == "compare" and len(sources) < 2:
        raise UsageError("compare needs two or more result sets: pass run ids (`abibench runs`)"
                         " or exported .json files")
    # Every view reads a stored run as columns (store/columns.py); the JSON report and the
    # samples CSV write every sample from them too, read in the same pass (rows).
    sets = load_sources(sources, store, columns=True, rows=bool(args.json or args.samples_csv))
    # a system run has its own section, not samples (asked only of one: its module loads
    # the charts', a second of start-up a report of samples does without)
    if any(s.doc.run.config.system is not None for s in sets):
        # `system`'s module, imported only for a system run's report: a report of samples
        # does not import another command's module.
        from .system import report_system

        shown = report_system(args, sets)
        if shown is not None:
            return shown
    rep = analysis.from_sets(sets, args.baseline, args.tag, _deployment(args))
    if args.json:
        from ..report.jsonout import chunks

        for chunk in chunks(rep):  # streamed: a large run's JSON is never one string
            sys.stdout.write(chunk)
    outputs = [Output(fmt_, path) for fmt_, path in (
        ("html", args.html), ("markdown", args.markdown), ("csv", args.csv),
        ("samples-csv", args.samples_csv)) if path is not None]
    written = write(rep, outputs)
    for kind, path in written:
        _say(f"{kind}: {path}", sys.stderr)
    if args.json or written:
        return EXIT_OK
    _print_terminal(rep)
    return EXIT_OK
