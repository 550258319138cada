"""`abibench explain`: why one ABI wins, from a run with counters."""

from __future__ import annotations

import argparse
import sys

from ..errors import EXIT_OK, UsageError
from ..store.sql import SqlStore
from .argtypes import Commands
from .options import _db_option
from .printing import _print_json
from .sources import _one_report


def add_parser(sub: Commands) -> None:
    xp = sub.add_parser("explain")
    xp.add_argument("run", nargs="?", default="latest", metavar="RUN_OR_FILE")
    xp.add_argument("workload", nargs="?", default=None, metavar="WORKLOAD")
    xp.add_argument("--json", action="store_true", help="the explanations as JSON")
    _db_option(xp)


def cmd_explain(args: argparse.Namespace, store: SqlStore | None) -> int:
    from ..report import terminal
    from ..report.jsonout import explanation_json

    rep = _one_report(args, store)
    if args.workload is not None and args.workload not in {b.result.id for b in rep.workloads}:
        raise UsageError(f"workload '{args.workload}' is not in this run (it has "
                         f"{', '.join(b.result.id for b in rep.workloads)})")
    if args.json:
        _print_json([explanation_json(x) for x in rep.explanations
                     if args.workload in (None, x.workload)])
        return EXIT_OK
    sys.stdout.write(terminal.render_explanations(rep, args.workload))
    return EXIT_OK
