"""`abibench probe`: what this host can build and run for each ABI."""

from __future__ import annotations

import argparse

from ..errors import EXIT_OK
from .argtypes import Commands
from .printing import _console, _print_json


def add_parser(sub: Commands) -> None:
    pr = sub.add_parser("probe")
    pr.add_argument("--json", action="store_true")


def cmd_probe(args: argparse.Namespace) -> int:
    # Imported when the command runs, not at the top: parsing its command line (a refusal,
    # --help) does not pay for what only running it needs.
    from ..paths import cache_dir
    from ..probe import host, noise
    from ..probe.abis import probe_all
    from ..probe.counters import counters_status
    from ..probe.memory import tree_accounting
    from ..report.terminal import e

    statuses = probe_all()
    ctx = host.capture()
    counters = counters_status()
    tree = tree_accounting()
    if args.json:
        cached = noise.cached(cache_dir())
        _print_json({"abis": [s.to_dict() for s in statuses], "host": ctx.to_dict(),
                     "counters": counters.to_dict(), "tree_memory": tree.to_dict(),
                     "warnings": host.context_warnings(ctx),
                     "noise": cached.to_dict() if cached is not None else None})
        return EXIT_OK
    con = _console()
    load = ctx.load_average[0] if ctx.load_average else 0.0
    # Everything here is read from the host (/proc, compilers' banners): text, never markup.
    con.print(e(f"host: {ctx.cpu_model}, {ctx.cpus_online} CPUs, {ctx.machine} kernel "
                f"{ctx.kernel_release} ({ctx.kernel_bits}-bit), {ctx.libc}"))
    board = ctx.get("board")
    if board:
        con.print(e(f"board: {board}; maximum clock {ctx.get('cpu_max_mhz') or '?'} MHz; "
                    f"throttled since boot: {ctx.get('throttled_since_boot') or 'not exposed'}"))
    con.print(e(f"userspace: {ctx.get('userspace') or 'unknown'} on a {ctx.kernel_bits}-bit "
                f"{ctx.machine} kernel"))
    con.print(e(f"governor: {ctx.governor or 'not exposed (no cpufreq)'}; turbo: "
                f"{ctx.turbo or 'unknown'}; load {load:.2f}; "
                f"compilers: {'; '.join(ctx.compilers.values()) or 'none'}"))
    width = max((len(s.abi) for s in statuses), default=8)
    for s in statuses:
        build = "builds" if s.can_build else "cannot build"
        run = ("runs emulated" if s.emulated else "runs") if s.can_run else "cannot run here"
        line = f"  {s.abi:{width}s} {build:13s} {run:16s}"
        if s.reason:
            line += f" {s.reason}; fix: {s.fix}"
        elif s.note:
            line += f" {s.note}"
        con.print(e(line))
    perf = counters.perf
    con.print(e(f"instruction counts: perf {'yes' if perf.available else f'no ({perf.reason})'}"
                f"; valgrind {'yes' if counters.valgrind.available else 'no'}; under qemu: "
                f"{counters.qemu_plugin.reason or 'yes'}"))
    con.print(e(f"process-tree memory: {tree.kind} — {tree.description}"
                + (f" ({tree.reason})" if tree.reason != "available" else "")))
    profile = noise.cached(cache_dir())
    con.print(e(f"noise: {profile.summary()}" if profile is not None else
                "noise: not measured in the last hour (`abibench calibrate`)"))
    for w in host.context_warnings(ctx):
        con.print(e(f"warning: {w}"))
    return EXIT_OK
