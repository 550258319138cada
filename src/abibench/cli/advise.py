"""`abibench advise`: for a memory budget, instances per ABI and their throughput."""

from __future__ import annotations

import argparse
import sys

from ..errors import EXIT_OK
from ..store.sql import SqlStore
from .argtypes import Commands
from .options import _db_option, _deployment_options
from .printing import _print_json
from .sources import _one_report


def add_parser(sub: Commands) -> None:
    ad = sub.add_parser("advise")
    ad.add_argument("run", nargs="?", default="latest", metavar="RUN_OR_FILE")
    _deployment_options(ad, required=True)
    ad.add_argument("--json", action="store_true", help="the advice as JSON")
    _db_option(ad)


def cmd_advise(args: argparse.Namespace, store: SqlStore | None) -> int:
    from ..report import terminal
    from ..report.jsonout import advice_json

    rep = _one_report(args, store)
    if args.json:
        _print_json(advice_json(rep.advice) if rep.advice else None)
        return EXIT_OK
    sys.stdout.write(terminal.render_advice(rep))
    return EXIT_OK
