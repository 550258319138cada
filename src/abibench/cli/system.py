"""`abibench system run`: run/sysboot.py boots, analyse/system.py and report/system.py."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import EXIT_OK, EXIT_WORKLOAD
from ..outputs import check_output, write_output
from ..paths import cache_dir
from ..run.signals import signals_as_interrupt
from .argtypes import Commands
from .printing import _say


def add_parser(sub: Commands) -> None:
    sysp = sub.add_parser("system", help="whole Debian systems booted per kernel/userspace "
                          "combination (QEMU TCG): what each costs in memory; no speed")
    sys_run = sysp.add_subparsers(dest="system_command", required=True).add_parser(
        "run", help="build SYSTEM's disks, boot every combination --boots times, measure memory")
    sys_run.add_argument("system", metavar="SYSTEM", help="minimal, server, or a .toml file")
    sys_run.add_argument("--boots", type=int, default=3, help="boots per combination")
    sys_run.add_argument("--combo", default=None, metavar="KERNEL:USERSPACE,...",
                         help="default: every combination of --family (x86: "
                         "686-pae:i386,amd64:i386,amd64:x86_64)")
    sys_run.add_argument("--family", default="x86", metavar="FAMILY",
                         help="x86 (default), arm (armmp-lpae:armhf,arm64:armhf,arm64:aarch64) "
                         "or all")
    sys_run.add_argument("--seed", type=int, default=0, help="of the boots' random order")
    for fmt_ in ("json", "html", "markdown"):
        sys_run.add_argument(f"--{fmt_}", type=Path, default=None, metavar="PATH",
                             help=f"also write the system section as {fmt_.upper()} here")


def cmd_system(args: argparse.Namespace) -> int:
    from ..analyse.system import analyse
    from ..report import system as shown
    from ..run import sysboot
    from ..workloads.system import load_system

    profile = load_system(args.system)
    combos = sysboot.parse_combinations(args.combo, args.family)
    outs = {k: getattr(args, k) for k in ("json", "html", "markdown") if getattr(args, k)}
    for k, path in outs.items():
        check_output(path, f"--{k}")  # refused before an hour of booting, not after
    with signals_as_interrupt():
        done = sysboot.measure(profile, combos, args.boots, cache_dir(), seed=args.seed,
                               say=lambda line: _say(line, sys.stderr))
    result = analyse(done, combos)
    for line in shown.text_lines(result):
        _say(line)
    texts = {"json": lambda: json.dumps(shown.to_json(result), indent=1) + "\n",
             "html": lambda: shown.to_html(result), "markdown": lambda: shown.to_markdown(result)}
    for k, path in outs.items():
        write_output(path, texts[k](), f"--{k}")
    return EXIT_WORKLOAD if result.problems else EXIT_OK
