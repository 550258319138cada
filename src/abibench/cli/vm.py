"""`abibench vm run`: the formatting of run/vm.py's answer."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ..errors import EXIT_OK, EXIT_WORKLOAD
from .argtypes import Commands
from .options import _parse_sets
from .printing import _say


def add_parser(sub: Commands) -> None:
    # Here and in cmd_vm, not at the top: a start imports only the command it runs, and vm's
    # parser needs the builder's default flags alone.
    from ..obtain.build import DEFAULT_CFLAGS

    vmp = sub.add_parser("vm")
    vm_run = vmp.add_subparsers(dest="vm_command", required=True).add_parser(
        "run", help="build WORKLOAD... statically per ABI and run each in a booted guest")
    vm_run.add_argument("workloads", nargs="+", metavar="WORKLOAD")
    vm_run.add_argument("--abi", default=None, help="comma-separated (default: every ABI the "
                        "guest's kernel runs)")
    vm_run.add_argument("--boots", type=int, default=1, help="guests booted, one after another")
    vm_run.add_argument("--rounds", type=int, default=1, help="runs of every target per boot")
    vm_run.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE")
    vm_run.add_argument("--cflags", default=" ".join(DEFAULT_CFLAGS))
    vm_run.add_argument("--counters", nargs="?", const="insn", default=None, choices=("insn",),
                        metavar="insn", help="also count each program's user-space "
                        "instructions (abibench's QEMU plugin in system mode)")
    vm_run.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="also write the results as JSON here")


def cmd_vm(args: argparse.Namespace) -> int:
    """`abibench vm run`: the formatting of run/vm.py's answer; the work is there."""
    from ..abi import ABIS, parse_abi_list, vm_kernel_abi
    from ..obtain.build import build
    from ..outputs import check_output, write_output
    from ..paths import cache_dir
    from ..probe.abis import compiler_for
    from ..records import emulated_words
    from ..report import formatting as fmt
    from ..run import vm
    from ..run.signals import signals_as_interrupt
    from ..workloads.profile import load_workloads

    abis = parse_abi_list(args.abi) if args.abi else \
        [a for a in ABIS.values() if vm_kernel_abi(a) is not None]
    workloads = load_workloads(args.workloads, None, _parse_sets(args.set))
    if args.json is not None:
        check_output(args.json, "--json")  # refused before minutes of booting, not after
    with signals_as_interrupt():
        done = vm.measure(workloads, abis, boots=args.boots, rounds=args.rounds,
                          cflags=tuple(args.cflags.split()), cache_root=cache_dir(),
                          build=build, compiler=compiler_for,
                          say=lambda line: _say(line, sys.stderr),
                          counters=args.counters is not None)
    _say(f"guest: {done.kernel.label()} under {done.emulator} (TCG, {vm.MEMORY_MB} MiB), "
         f"append {done.cmdline!r}")
    for wl, why in done.agreement.items():
        _say(f"{wl}: {'outputs agree across ' + ', '.join(a.name for a in abis) if why is None else why}")
    for r in done.results:
        mid, lo, hi = r.rss()
        checks = ", ".join(sorted({str(c) for c in r.checks})) or "-"
        emu = sum(r.emulation_s) / len(r.emulation_s) if r.emulation_s else math.nan
        _say(f"  {r.label}: peak RSS {fmt.with_ci(mid, lo, hi, '.0f', ' KiB')} over "
             f"{len(r.max_rss_kb)} runs; check {checks}; {fmt.si(emu, 's')} of emulation "
             f"time ({emulated_words(r.abi)})")
        if (count := r.count()) is not None:
            _say(f"    instructions {count[0]:,} ({'exact' if count[1] else 'not exact'} over "
                 f"{len(r.instructions)} runs, user space)")
    for line in done.problems():
        _say(f"problem: {line}", sys.stderr)
    if args.json is not None:
        write_output(args.json, json.dumps(vm.to_json(done), indent=1) + "\n", "--json")
    return EXIT_WORKLOAD if done.problems() else EXIT_OK
