"""`abibench list`: the built-in workloads and their suites."""

from __future__ import annotations

import argparse

from ..errors import EXIT_OK
from .argtypes import Commands
from .printing import _console, _print_json


def add_parser(sub: Commands) -> None:
    ls = sub.add_parser("list")
    ls.add_argument("--json", action="store_true")


def cmd_list(args: argparse.Namespace) -> int:
    # Imported when the command runs, not at the top: parsing its command line (a refusal,
    # --help) does not pay for what only running it needs.
    from ..report.terminal import e
    from ..workloads.profile import builtin_profiles, load_profile

    wls = [load_profile(p) for p in builtin_profiles().values()]
    if args.json:
        _print_json([{"id": w.id, "title": w.title, "suites": list(w.suites),
                      "primary": w.primary, "params": w.params, "path": str(w.path)} for w in wls])
        return EXIT_OK
    con = _console()
    for w in wls:
        con.print(e(f"{w.id:16s} {','.join(w.suites):22s} {w.title}"))
    return EXIT_OK
