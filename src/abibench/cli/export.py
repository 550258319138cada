"""`abibench export`: a run as a versioned JSON document."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EXIT_OK, UsageError
from .argtypes import Commands
from .options import _db_option
from .printing import _say

if TYPE_CHECKING:
    from ..store.sql import SqlStore


def add_parser(sub: Commands) -> None:
    ex = sub.add_parser("export")
    ex.add_argument("run", nargs="?", default="latest")
    ex.add_argument("--json", action="store_true", help="JSON (every format is; accepted for "
                    "clarity)")
    ex.add_argument("--format", choices=("abibench", "hyperfine", "pyperf"), default="abibench",
                    help="abibench: the whole run (default); hyperfine or pyperf: every counted "
                    "sample's wall time in that tool's JSON, for its plotting and comparing "
                    "scripts")
    ex.add_argument("--workload", default=None, help="with --format: only this workload")
    ex.add_argument("--abi", default=None, help="with --format: only this target (pyperf then "
                    "names benchmarks by workload alone, for `pyperf compare_to`)")
    ex.add_argument("-o", "--output", type=Path, default=None)
    _db_option(ex)


def cmd_export(args: argparse.Namespace, store: SqlStore) -> int:
    run_id = store.resolve_run(args.run)
    chunks: Iterable[str]
    if args.format == "abibench":
        from ..store.exchange import export_chunks

        if args.workload is not None or args.abi is not None:
            raise UsageError("--workload and --abi select what --format hyperfine|pyperf "
                             "exports; the abibench format is the whole run")
        chunks = export_chunks(store, run_id)
    else:
        from ..report.interchange import render as interchange

        chunks = [interchange(store.load_run(run_id), args.format, args.workload, args.abi)]
    if args.output:
        # Imported here: the report package brings the analysis (numpy), which a run written
        # to standard output, or refused, never needs.
        from ..report import write_file

        write_file(args.output, chunks, "-o")  # streamed to the file, never one string
        _say(f"exported: {args.output}", sys.stderr)
    else:
        for chunk in chunks:  # streamed: a large run's document is never one string
            sys.stdout.write(chunk)
    return EXIT_OK
