"""`abibench runs`: the stored runs listed."""

from __future__ import annotations

import argparse

from ..errors import EXIT_OK
from ..store.sql import SqlStore
from .argtypes import Commands
from .options import _db_option
from .printing import _print_json, _say


def add_parser(sub: Commands) -> None:
    rs = sub.add_parser("runs")
    rs.add_argument("--json", action="store_true")
    _db_option(rs)


def cmd_runs(args: argparse.Namespace, store: SqlStore) -> int:
    runs = store.runs()
    if args.json:
        _print_json([r.to_dict() for r in runs])
        return EXIT_OK
    for r in runs:
        what = (f"system run, {r.system_boots} boots" if r.system_boots and not r.samples
                else f"{r.samples} samples")
        _say(f"{r.id}  {r.started}  {r.status:11s} {what}")
    return EXIT_OK
