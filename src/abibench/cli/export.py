"""`abibench export`: a run as a versioned JSON document."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import EXIT_OK
from ..report import write_file
from ..store.sql import SqlStore
from .argtypes import Commands
from .options import _db_option
from .printing import _print_json, _say


def add_parser(sub: Commands) -> None:
    ex = sub.add_parser("export", help="write a run as a versioned JSON document")
    ex.add_argument("run", nargs="?", default="latest")
    ex.add_argument("--json", action="store_true", help="JSON (the only format; accepted for "
                    "clarity)")
    ex.add_argument("-o", "--output", type=Path, default=None)
    _db_option(ex)


def cmd_export(args: argparse.Namespace, store: SqlStore) -> int:
    doc = store.load_run(store.resolve_run(args.run)).to_dict()
    if args.output:
        write_file(args.output, json.dumps(doc, indent=1, default=str) + "\n", "-o")
        _say(f"exported: {args.output}", sys.stderr)
    else:
        _print_json(doc)
    return EXIT_OK
