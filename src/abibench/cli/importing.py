"""`abibench import`: others' exported results validated and stored, never run."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import EXIT_OK
from ..store.sql import SqlStore
from .argtypes import Commands
from .options import _db_option
from .printing import _print_json, _say


def add_parser(sub: Commands) -> None:
    im = sub.add_parser("import")
    im.add_argument("files", nargs="+", type=Path, metavar="FILE.json")
    im.add_argument("--json", action="store_true")
    _db_option(im)


def cmd_import(args: argparse.Namespace, store: SqlStore) -> int:
    from ..store.exchange import check_file, import_file

    if len(args.files) > 1:  # every file checked before any is stored
        for path in args.files:
            check_file(path)
    done = []
    for path in args.files:
        # read as it streams, each sample checked and stored in one transaction
        res, doc = import_file(store, path)
        done.append({"file": str(path), "run_id": res.run_id, "new": res.new,
                     "samples": res.samples})
        if not args.json:
            what = "imported" if res.new else "already stored:"
            _say(f"{what} {path} as run {res.run_id} ({res.samples} samples from "
                 f"{doc.host.hostname or '?'}, {doc.host.kernel_bits or '?'}-bit kernel, "
                 f"started {doc.run.started})")
    if args.json:
        _print_json(done)
    return EXIT_OK
