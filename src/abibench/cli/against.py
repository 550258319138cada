"""A run or result set against its baseline (`run --against`, `compare --against`) and the
--fail-on-slowdown gate."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import EXIT_OK, EXIT_SLOWDOWN, UsageError
from ..records import RunDoc
from ..report import write_file
from ..store.history import Reader, resolve_baseline
from ..store.sources import load_sources
from ..store.sql import SqlStore
from .options import _check_outputs
from .printing import _say


def _baseline(args: argparse.Namespace, store: Reader | None) -> RunDoc | None:
    if args.against is None:
        if args.fail_on_slowdown is not None:
            raise UsageError("--fail-on-slowdown needs a baseline: add --against RUN_OR_TAG")
        return None
    return resolve_baseline(args.against, store)


def _against(args: argparse.Namespace, doc: RunDoc, baseline: RunDoc | None, out: Any) -> int:
    """Print the run against its baseline; EXIT_SLOWDOWN when the gate fails, else 0."""
    from ..analyse.baseline import against
    from ..report import baseline as shown

    if baseline is None:
        return EXIT_OK
    cmp = against(doc, baseline)
    as_json = getattr(args, "json", False) and out is sys.stdout  # `fleet run` has no --json
    out.write(shown.json_text(cmp) if as_json else shown.terminal(cmp))
    if args.fail_on_slowdown is None:
        return EXIT_OK
    failed = shown.gate_lines(cmp, args.fail_on_slowdown)
    if failed:  # one line, as every error (the rest are in the comparison above)
        more = f" (and {len(failed) - 1} more, above)" if len(failed) > 1 else ""
        _say(f"abibench: slowdown: {failed[0]}{more}", sys.stderr)
    return EXIT_SLOWDOWN if failed else EXIT_OK


def cmd_compare_against(args: argparse.Namespace, store: SqlStore | None) -> int:
    """`compare [RUN] --against BASE`: one result set against its baseline."""
    unused = [o for o, v in (("--csv", args.csv),
                             ("--samples-csv", args.samples_csv), ("--baseline", args.baseline),
                             ("--tag", args.tag)) if v]
    if unused:
        raise UsageError(f"{', '.join(unused)}: for an N-way comparison, not with --against "
                         "(which prints, or writes --markdown FILE, --html FILE, or --json)")
    _check_outputs(("--markdown", args.markdown), ("--html", args.html))
    baseline = _baseline(args, store)
    sources = args.sources or ["latest"]
    if len(sources) != 1:
        raise UsageError("compare --against compares one run with its baseline: pass one run "
                         "id or file (or none for the latest run)")
    now = load_sources(sources, store)[0].doc
    if baseline is not None and baseline.id == now.id:
        raise UsageError(f"--against {args.against} names the run being compared ({now.id}): "
                         "name an earlier run or tag")
    if args.markdown is not None and baseline is not None:
        from ..analyse.baseline import against
        from ..report.baseline import markdown

        write_file(args.markdown, markdown(against(now, baseline)), "--markdown")
        _say(f"markdown: {args.markdown}", sys.stderr)
    if args.html is not None and baseline is not None:
        _write_against_html(args, now, baseline)
    return _against(args, now, baseline, sys.stdout)


def _write_against_html(args: argparse.Namespace, now: RunDoc, baseline: RunDoc) -> None:
    from ..analyse import report as analysis
    from ..analyse.baseline import against
    from ..report.baselinehtml import page

    write_file(args.html, page(analysis.from_run(now), against(now, baseline),
                               args.fail_on_slowdown), "--html")
    _say(f"html: {args.html}", sys.stderr)
