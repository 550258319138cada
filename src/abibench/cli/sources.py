"""What the commands that read results (report, compare, explain, advise) name as their
sources, and one of them analysed: shared here so that each of these commands imports its own
module and this one, never another command's."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .options import _deployment

if TYPE_CHECKING:
    from ..analyse import report as analysis
    from ..store.sql import SqlStore


def _report_sources(args: argparse.Namespace) -> list[str]:
    if args.command in ("explain", "advise"):
        return [args.run]
    sources: list[str] = args.run if args.command == "report" else args.sources
    return sources


def _one_report(args: argparse.Namespace, store: SqlStore | None) -> analysis.Report:
    # Imported here: the dispatch asks this module for the sources before anything is
    # analysed (and a refusal never is).
    from ..analyse import report as analysis
    from ..store.sources import load_sources

    sets = load_sources([args.run], store, columns=True)
    return analysis.from_sets(sets, deployment=_deployment(args))
