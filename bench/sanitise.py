#!/usr/bin/env python3
"""The sanitiser invariant (docs/reliability.md, "Every untrusted string reaches every output
through the one sanitiser") tried for minutes instead of seconds.

The same generated documents and checks as tests/report/test_sanitised_outputs.py: hostile
strings around every string of a run document and in the comparison tags, every format rendered
for a run and a comparison, each output checked against its own syntax. A violation is counted
(per check) and the first of each is printed; nothing stops at the first.

    .venv/bin/python bench/sanitise.py --minutes 5 [--html-every 5]

HTML (with its charts) takes longer a report than the text formats: it is checked for every
--html-every-th document only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import strings_doc
from tests.report import test_sanitised_outputs as t

from abibench.report import render


class _Done(Exception):
    pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--html-every", type=int, default=5)
    args = ap.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    cases: Counter[str] = Counter()
    violations: Counter[str] = Counter()
    first: dict[str, str] = {}
    benign = t.benign_names(strings_doc)

    def check(name: str, fn: Callable[[str], object], text: str, shown: str) -> None:
        cases[name] += 1
        try:
            fn(text)
        except AssertionError as exc:
            violations[name] += 1
            first.setdefault(name, f"{exc!r:.300} with {shown!r:.200}")

    @settings(max_examples=10**9, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(wrap=t.wraps, tags=t._tags)
    def one(wrap: tuple[str, str], tags: tuple[str, str]) -> None:
        if time.monotonic() > deadline:
            raise _Done
        shown = f"{wrap} {tags}"
        reports = t._reports(t.hostile_doc(strings_doc, wrap), tags)
        check("report holds only clean strings", lambda _: t.check_report_strings(reports), "",
              shown)
        html = cases["documents"] % args.html_every == 0
        cases["documents"] += 1
        for report in reports:
            for fmt, text in t._outputs(report, t.TEXT_FORMATS).items():
                check("no control, bidi or invisible character", t.check_clean, text,
                      f"{fmt}: {shown}")
                if fmt == "markdown":
                    check("Markdown rows keep their columns", t._check_markdown, text,
                          shown)
                elif fmt in ("csv", "samples-csv"):
                    check("CSV parses, no formula cell", t._check_csv, text, shown)
                elif fmt == "json":
                    check("JSON parses to clean strings",
                          lambda x: t._check_json(json.loads(x)), text, shown)
            if html and report.kind == "run":
                page = render(report, "html")
                check("no control, bidi or invisible character", t.check_clean, page,
                      f"html: {shown}")
                check("HTML: no injected tag, attribute or link",
                      lambda x: t._check_html(x, benign), page, shown)

    # The deadline ends the run as an exception; Hypothesis may replay it and report the replays
    # together, as a group.
    try:
        one()
    except* _Done:
        pass
    print(f"{cases.pop('documents')} documents in {args.minutes:g} min")
    for name, n in cases.items():
        print(f"  {name}: {n} cases, {violations[name]} violations")
        if name in first:
            print(f"    first: {first[name]}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
