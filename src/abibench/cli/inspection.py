"""`abibench inspect`: ELF facts and libraries of binaries, resolved for their own ABI."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import EXIT_OK
from .argtypes import Commands
from .printing import _print_json, _say


def add_parser(sub: Commands) -> None:
    ins = sub.add_parser("inspect")
    ins.add_argument("binaries", nargs="+", type=Path, metavar="BINARY")
    ins.add_argument("--sysroot", type=Path, default=None,
                     help="resolve everything inside this root (an unpacked Debian system)")
    ins.add_argument("--library-path", action="append", default=[], metavar="DIR[:DIR...]",
                     help="searched where LD_LIBRARY_PATH is (the environment's one is used too, "
                     "unless --sysroot)")
    ins.add_argument("--json", action="store_true")


def cmd_inspect(args: argparse.Namespace) -> int:
    from ..obtain.libraries import inspect_binary
    from ..obtain.libraries import render as render_inspection

    found = [inspect_binary(b, sysroot=args.sysroot, library_path=tuple(args.library_path))
             for b in args.binaries]
    if args.json:
        _print_json([f.to_dict() for f in found])
    else:
        for f in found:  # names read from the binaries themselves: shown, never obeyed
            for line in render_inspection(f):
                _say(line)
    # 1: a library is missing or of the wrong class, as for a workload that failed.
    return EXIT_OK if all(f.ok for f in found) else 1
