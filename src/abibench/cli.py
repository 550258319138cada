"""Command line: parse, call the stages, print. No measurement logic lives here."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from . import __version__
from .abi import ABIS, HOST_FAMILY, Abi, family_abis, get_abi, parse_abi_list, vm_kernel_abi
from .analyse import report as analysis
from .analyse.advise import Deployment, parse_mix, parse_size
from .axes import AXES
from .errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SLOWDOWN,
    EXIT_USAGE,
    EXIT_WORKLOAD,
    AbibenchError,
    UsageError,
)
from .ids import ID_MAX, check_id, file_name, id_problem
from .obtain.build import DEFAULT_CFLAGS, build
from .outputs import check_output, write_atomic, write_output
from .paths import cache_dir, data_dir, default_db
from .probe import host, noise
from .probe.abis import compiler_for, probe_all
from .probe.counters import counters_status
from .probe.memory import tree_accounting
from .records import RunDoc, Sample, emulated_words
from .report import Output, render, write, write_file
from .report import formatting as fmt
from .report.terminal import e
from .run import vm
from .run.preflight import check_plan_numbers
from .run.progress import RunTracker
from .run.resume import request_of
from .run.schedule import Plan
from .run.signals import signals_as_interrupt
from .run.suite import Request, measure_suite
from .store.history import Reader, resolve_baseline, stored_runs
from .store.open import DB_ENV, db_ref, open_store
from .store.sources import is_file_ref, latest_fleet, load_sources
from .store.sql import SqlStore
from .store.url import is_url, sqlite_file
from .text import one_line
from .toplevel import guarded
from .workloads.oneliner import parse_binary, parse_check, parse_metric, profile_text
from .workloads.profile import (
    ID_RE,
    builtin_profiles,
    load_profile,
    load_workloads,
    parse_duration,
)

if TYPE_CHECKING:
    from .store.spool import SpooledSink

    # What a run writes to and reads back from: a store, or a shared one through its spool.
    RunStore = SqlStore | SpooledSink


def _percent(text: str) -> float:
    t = text.strip().rstrip("%")
    try:
        value = float(t) / 100.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a percentage like 2%") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"precision {text} must be between 0% and 100%")
    return value


def _limit(text: str) -> float:
    """A slowdown limit: '5%' or '0%' (any significant slowdown)."""
    try:
        value = float(text.strip().rstrip("%")) / 100.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a percentage like 5%") from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"a slowdown limit of {text} must be 0% or more, "
                                         "below 1000%")
    return value


def _duration(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds > 30 * 86400:
        raise argparse.ArgumentTypeError(f"{text} is more than 30 days: give a shorter time")
    return seconds


def _whole(text: str, least: int) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if n < least:
        raise argparse.ArgumentTypeError(f"{n} must be 0 or more" if least == 0 else
                                         f"{n} must be at least {least}")
    return n


def _count(text: str) -> int:
    return _whole(text, 0)


def _positive(text: str) -> int:
    return _whole(text, 1)


def _ident(kind: str) -> Any:
    """An argparse type: a value that names something (a run, a host, a set) is an identifier,
    never a path (ids.py), refused as one line before anything runs."""
    def check(text: str) -> str:
        try:
            return check_id(kind, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return check


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # One line naming the problem and where help is, exit code 2 as documented.
        self.exit(2, f"abibench: error: {one_line(message)} (see `{self.prog} --help`)\n")


def _db_option(p: argparse.ArgumentParser, default: object = argparse.SUPPRESS) -> None:
    """--db, before the command (`abibench --db X runs`) or after it (`abibench runs --db X`).
    A command's own has no default, so that it never hides one given before the command."""
    p.add_argument("--db", default=default, metavar="PATH_OR_URL",
                   help=f"results database: a SQLite file (default {default_db()}) or a shared "
                   f"PostgreSQL server, postgresql://USER@HOST:PORT/DBNAME (or ${DB_ENV})")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="abibench", description="Is the 32-bit or the 64-bit build faster here?")
    p.add_argument("--version", action="version", version=f"abibench {__version__}")
    _db_option(p, default=None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    pr = sub.add_parser("probe", help="what this host can build and run for each ABI")
    pr.add_argument("--json", action="store_true")

    cal = sub.add_parser("calibrate", help="measure this machine's noise: how steadily each CPU "
                         "runs, how long it stays at one speed, and what each sampling design "
                         "would make of it (kept for an hour, used by adaptive runs)")
    cal.add_argument("--duration", type=_duration, default=None,
                     help="how long to measure (default 60s)")
    cal.add_argument("--json", action="store_true")

    ls = sub.add_parser("list", help="the built-in workloads and their suites")
    ls.add_argument("--json", action="store_true")

    r = sub.add_parser("run", help="build and measure workloads per ABI")
    _plan_options(r)
    _db_option(r)
    r.add_argument("--report", type=Path, default=None, help="also write a Markdown report")
    r.add_argument("--html", type=Path, default=None, help="write the HTML report here (default: "
                   "reports/RUN.html beside the results database)")
    r.add_argument("--no-html", action="store_true", help="do not write the HTML report")
    _against_options(r)
    r.add_argument("--json", action="store_true", help="print the run document as JSON")
    r.add_argument("--resume", default=None, metavar="RUN", type=_ident("run id"),
                   help="continue an interrupted or abandoned run with its own plan, measuring "
                   "only what it lacks")
    r.add_argument("--label", default=None, metavar="NAME", type=_ident("label"),
                   help="this host's name in comparisons (default: its hostname); abibench fleet "
                   "gives each host its inventory name")
    r.add_argument("--fleet", default=None, metavar="ID", type=_ident("fleet id"),
                   help=argparse.SUPPRESS)
    r.add_argument("--binary", action="append", default=[], metavar="ABI=PATH",
                   help="compare prebuilt programs, one per ABI, instead of building: e.g. "
                   "--binary i386=./prog32 --binary x86_64=./prog64 -- ARGS")
    r.add_argument("--metric", action="append", default=[],
                   metavar="NAME[:UNIT[:higher|lower]]=REGEX",
                   help="with --binary: a metric the program prints (group 1 of REGEX); the "
                   "first is the verdict's; default: wall time")
    r.add_argument("--name", default=None, type=_ident("--name"),
                   help="with --binary: the workload's id")
    r.add_argument("--check-stdout", action="store_true",
                   help="with --binary: the programs' standard output must be identical")
    r.add_argument("--check", default=None, metavar="REGEX",
                   help="with --binary: group 1 of REGEX in standard output (e.g. "
                   "'checksum: (\\S+)') must be identical on every ABI")
    r.add_argument("--timeout", type=_duration, default=600.0,
                   help="with --binary: a sample's time limit (default 600s)")

    fl = sub.add_parser("fleet", help="the same run on every host of an Ansible inventory, "
                        "then one comparison of them all")
    fsub = fl.add_subparsers(dest="fleet_command", required=True, parser_class=_Parser)
    fr = fsub.add_parser("run", help="run on every host of INVENTORY (Ansible's INI or YAML); "
                         "results into --db, then the N-way comparison")
    _fleet_run_options(fr)
    fsub.add_parser("playbook", help="print where the playbook is (to run it with "
                    "ansible-playbook yourself)")
    fs = fsub.add_parser("sdist", help="build the sdist the playbook copies to every host")
    fs.add_argument("outdir", type=Path, nargs="?", default=Path("dist"))

    vmp = sub.add_parser("vm", help="programs run in a booted guest (Debian's kernel under "
                        "full-system emulation): outputs compared, peak memory; no speed")
    vm_run = vmp.add_subparsers(dest="vm_command", required=True).add_parser(
        "run", help="build WORKLOAD... statically per ABI and run each in a booted guest")
    vm_run.add_argument("workloads", nargs="+", metavar="WORKLOAD")
    vm_run.add_argument("--abi", default=None, help="comma-separated (default: every ABI the "
                        "guest's kernel runs)")
    vm_run.add_argument("--boots", type=int, default=1, help="guests booted, one after another")
    vm_run.add_argument("--rounds", type=int, default=1, help="runs of every target per boot")
    vm_run.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE")
    vm_run.add_argument("--cflags", default=" ".join(DEFAULT_CFLAGS))
    vm_run.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="also write the results as JSON here")

    rs = sub.add_parser("runs", help="list stored runs")
    rs.add_argument("--json", action="store_true")
    _db_option(rs)

    rp = sub.add_parser("report", help="show stored runs or result files; write HTML, Markdown, "
                        "CSV or JSON")
    rp.add_argument("run", nargs="*", default=["latest"], metavar="RUN_OR_FILE",
                    help="run ids (default: latest) or exported .json files; two or more are "
                    "merged into one comparison")
    _report_options(rp)
    _db_option(rp)

    cp = sub.add_parser("compare", help="merge result sets from different machines, kernels or "
                        "days into one N-way comparison")
    cp.add_argument("sources", nargs="*", metavar="RUN_OR_FILE",
                    help="two or more run ids or exported .json files (default: the runs of the "
                    "last `abibench fleet run`)")
    _report_options(cp)
    _against_options(cp)
    _db_option(cp)

    hi = sub.add_parser("history", help="one workload over the stored runs: the ABI ratio and "
                        "each ABI's metric per run, and where they changed")
    hi.add_argument("workload", metavar="WORKLOAD")
    hi.add_argument("--by", choices=tuple(AXES), default="version",
                    help="the axis shown per run (default version: the run's --label tag, else "
                    "the program's version or build digest); host: every host's runs")
    hi.add_argument("--host", default=None, help="only this host's runs (default: the newest "
                    "run's host)")
    hi.add_argument("--json", action="store_true", help="the history as JSON")
    hi.add_argument("--markdown", type=Path, default=None, help="write Markdown to this file")
    hi.add_argument("--html", type=Path, default=None,
                    help="write a self-contained HTML page with a chart per series")
    _db_option(hi)

    xp = sub.add_parser("explain", help="why one ABI wins: each comparison's time ratio as "
                        "instructions x time per instruction, with the evidence (needs a run "
                        "with --counters, or --counters=cache)")
    xp.add_argument("run", nargs="?", default="latest", metavar="RUN_OR_FILE")
    xp.add_argument("workload", nargs="?", default=None, metavar="WORKLOAD")
    xp.add_argument("--json", action="store_true", help="the explanations as JSON")
    _db_option(xp)

    ad = sub.add_parser("advise", help="for a memory budget: instances that fit per ABI, and "
                        "the throughput each gives")
    ad.add_argument("run", nargs="?", default="latest", metavar="RUN_OR_FILE")
    _deployment_options(ad, required=True)
    ad.add_argument("--json", action="store_true", help="the advice as JSON")
    _db_option(ad)

    im = sub.add_parser("import", help="store others' exported results (validated, never run)")
    im.add_argument("files", nargs="+", type=Path, metavar="FILE.json")
    im.add_argument("--json", action="store_true")
    _db_option(im)

    ex = sub.add_parser("export", help="write a run as a versioned JSON document")
    ex.add_argument("run", nargs="?", default="latest")
    ex.add_argument("--json", action="store_true", help="JSON (the only format; accepted for "
                    "clarity)")
    ex.add_argument("-o", "--output", type=Path, default=None)
    _db_option(ex)

    pu = sub.add_parser("push", help="upload what runs kept in the local spool while the shared "
                        "PostgreSQL database (--db postgresql://...) could not be reached")
    pu.add_argument("--json", action="store_true")
    _db_option(pu)

    ins = sub.add_parser("inspect", help="ELF class, machine, interpreter, sizes and libraries "
                         "of binaries, resolved for their own ABI")
    ins.add_argument("binaries", nargs="+", type=Path, metavar="BINARY")
    ins.add_argument("--sysroot", type=Path, default=None,
                     help="resolve everything inside this root (an unpacked Debian system)")
    ins.add_argument("--library-path", action="append", default=[], metavar="DIR[:DIR...]",
                     help="searched where LD_LIBRARY_PATH is (the environment's one is used too, "
                     "unless --sysroot)")
    ins.add_argument("--json", action="store_true")
    return p


def _against_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--against", default=None, metavar="RUN_OR_TAG",
                   help="also state each ABI's change against this baseline (a run id, an "
                   "exported file, or a tag given with `run --label`: its newest run), with CIs")
    p.add_argument("--fail-on-slowdown", type=_limit, default=None, metavar="PCT",
                   help=f"with --against: exit {EXIT_SLOWDOWN} when an ABI is significantly "
                   "slower than the baseline by more than PCT (e.g. 5%%)")


def _plan_options(r: argparse.ArgumentParser) -> None:
    """What a run measures and how: the options `run` and `fleet run` share."""
    r.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                   help="built-in workload ids or paths to .toml profiles (default: --suite)")
    r.add_argument("--workload", action="append", default=[], help="same as a positional id")
    r.add_argument("--suite", default=None, help="run every workload of this suite (default: "
                   "'default')")
    r.add_argument("--abi", default=None, action="append",
                   help="comma-separated ABIs, or --abi repeated (default: every ABI of this "
                   "host's family)")
    r.add_argument("--family", default=None, metavar="FAMILY",
                   help="every ABI of one machine family (x86, arm, sparc, mips, ppc, s390), or "
                   "'all': every ABI this host can build and run or emulate; the others are "
                   "listed with the reason, and one ABI's failed build does not stop the "
                   "others (as --keep-going)")
    r.add_argument("--rounds", type=_positive, default=None,
                   help="exactly N counted rounds (turns off adaptive stopping)")
    r.add_argument("--min-rounds", type=_positive, default=5)
    r.add_argument("--max-rounds", type=_positive, default=None,
                   help="at most N counted rounds per workload (default: as the budget allows)")
    r.add_argument("--precision", type=_percent, default=0.02,
                   help="stop when every ratio's 95%% CI is within ±this (default 2%%)")
    r.add_argument("--budget", type=_duration, default=None,
                   help="time for the whole run's adaptive rounds, given to the workloads "
                   "furthest from --precision per second (default 2m per workload)")
    r.add_argument("--max-time", type=_duration, default=None,
                   help="time limit per workload, within the budget (default: none)")
    r.add_argument("--design", choices=("auto", "sequential", "simultaneous", "covariate",
                                        "short"), default="auto",
                   help="how rounds are sampled (default auto: chosen from the machine's "
                   "measured noise, see docs/method.md)")
    r.add_argument("--warmup", type=_count, default=1,
                   help="warm-up runs per target (default 1; 0 for none)")
    r.add_argument("--cflags", default=" ".join(DEFAULT_CFLAGS),
                   help="flags for every ABI (default -O2); the ABI flag is added per target")
    r.add_argument("--cc", default=None, help="C compiler (default: gcc)")
    r.add_argument("--provenance", choices=("source", "debian"), default="source",
                   help="source: build each workload per ABI (default); debian: Debian's own "
                   "per-arch binary packages, one pinned version, run inside per-arch sysroots")
    r.add_argument("--allow-version-skew", action="store_true",
                   help="with --provenance debian: compare even when no version exists for every "
                   "arch (shown as a warning in every result)")
    r.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="override a workload parameter, e.g. --set nodes=20000")
    r.add_argument("--seed", type=int, default=0, help="seed for environment-size randomisation")
    r.add_argument("--counters", nargs="?", const="insn", default=None,
                   choices=("insn", "cache"), metavar="insn|cache",
                   help="also count instructions under valgrind, or for emulated ABIs (armhf, "
                   "aarch64, sparc64, ... here) with abibench's QEMU plugin (runs per target until two "
                   "agree); --counters=cache adds simulated cache and branch events, for "
                   "`abibench explain` (valgrind only)")
    r.add_argument("--keep-going", action="store_true",
                   help="when one ABI's build fails, still measure the others")


def _fleet_run_options(fr: argparse.ArgumentParser) -> None:
    fr.add_argument("inventory", type=Path, metavar="INVENTORY")
    _plan_options(fr)
    fr.add_argument("--serial", action="store_true",
                    help="one host at a time (hosts that share hardware, e.g. VMs on one box); "
                    "default: all at once")
    fr.add_argument("--forks", type=_positive, default=None,
                    help="hosts at once (default: all of them)")
    fr.add_argument("--html", type=Path, default=None, help="write the comparison's HTML report "
                    "here (default: reports/FLEET.html in the data directory)")
    fr.add_argument("--baseline", default=None, metavar="SERIES",
                    help="the series every other is compared with (as for compare)")
    _db_option(fr)


def _deployment_options(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument("--memory", required=required, default=None, metavar="SIZE",
                   help="the deployment's memory, e.g. 4GiB: how many instances fit per ABI "
                   "and the throughput each gives" + ("" if required else " (adds the advice)"))
    limit = p.add_mutually_exclusive_group()
    limit.add_argument("--instances", type=_positive, default=None, metavar="N",
                       help="deploy exactly N instances of each workload")
    limit.add_argument("--budget-cores", type=_positive, default=None, metavar="C",
                       help="at most C instances run at once (one core each)")
    p.add_argument("--mix", default=None, metavar="W=N,...",
                   help="weight workloads deployed together, e.g. lua=3,sqlite-speedtest1=1")


def _deployment(args: argparse.Namespace) -> Deployment | None:
    if getattr(args, "memory", None) is None:
        if getattr(args, "instances", None) or getattr(args, "budget_cores", None) or \
                getattr(args, "mix", None):
            raise UsageError("--instances, --budget-cores and --mix go with --memory SIZE")
        return None
    return Deployment(parse_size(args.memory), args.instances, args.budget_cores,
                      parse_mix(args.mix) if args.mix else {})


def _report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--html", type=Path, default=None,
                   help="write a self-contained HTML report (inline SVG charts, works offline)")
    p.add_argument("--markdown", type=Path, default=None, help="write Markdown to this file")
    p.add_argument("--csv", type=Path, default=None,
                   help="write the results (one row per workload, metric and target) as CSV")
    p.add_argument("--samples-csv", type=Path, default=None, help="write every raw sample as CSV")
    p.add_argument("--json", action="store_true",
                   help="print the report's content as JSON (the stored run: abibench export)")
    p.add_argument("--baseline", default=None, metavar="SERIES",
                   help="with several result sets: the series every other is compared with "
                   "(a series label, an ABI of the first set, or a set tag)")
    p.add_argument("--tag", action="append", default=None, metavar="NAME", type=_ident("tag"),
                   help="name of each result set, once per set in order (default: host and "
                   "kernel bitness, e.g. 'vm k64')")
    _deployment_options(p)


def _say(line: str, file: Any = None) -> None:
    """Print one line of plain text (no rich markup) that may hold text abibench did not write:
    paths, run ids, imported fields, a program's output. Control and escape sequences never
    reach the terminal (text.one_line)."""
    print(one_line(line), file=file or sys.stdout)


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


def cmd_calibrate(args: argparse.Namespace) -> int:
    duration = args.duration if args.duration is not None else noise.FULL_S
    if not 5.0 <= duration <= 3600.0:
        raise UsageError(f"--duration {duration:g}s: give 5s to 1h (the default is "
                         f"{noise.FULL_S:g}s)")
    if not args.json:
        print(f"abibench: measuring this machine's noise for {duration:g} s (a fixed loop on "
              "one CPU alone, then on every CPU at once)", file=sys.stderr)
    profile = noise.measure(cache_dir(), duration)
    noise.store(cache_dir(), profile)
    if args.json:
        _print_json(profile.to_dict())
        return EXIT_OK
    con = _console()
    con.print(e(profile.summary()))
    con.print(e("window  one after the other  two CPUs at once  with a loop covariate  pairs"))
    for window, pair in sorted(profile.pairs.items(), key=lambda kv: float(kv[0])):
        def pct(v: float) -> str:
            return f"{v * 100:.2f}%" if math.isfinite(v) else "-"
        con.print(e(f"{float(window):>5g}s  {pct(pair.sequential):>19}  "
                    f"{pct(pair.simultaneous):>16}  {pct(pair.covariate):>21}  "
                    f"{pair.windows:>5}"))
    con.print(e("(the sd of log(a/b) of two samples of one program taken each way; "
                "run/designs.py picks by sd² x time a round takes)"))
    return EXIT_OK


def cmd_probe(args: argparse.Namespace) -> int:
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


def cmd_list(args: argparse.Namespace) -> int:
    wls = [load_profile(p) for p in builtin_profiles().values()]
    if args.json:
        _print_json([{"id": w.id, "title": w.title, "suites": list(w.suites),
                      "primary": w.primary, "params": w.params, "path": str(w.path)} for w in wls])
        return EXIT_OK
    con = _console()
    for w in wls:
        con.print(e(f"{w.id:16s} {','.join(w.suites):22s} {w.title}"))
    return EXIT_OK


def _asked_abis(args: argparse.Namespace) -> list[Abi]:
    if args.family is not None:
        if args.abi is not None:
            raise UsageError("--abi and --family both choose the ABIs: give one of them")
        return family_abis(args.family)
    return parse_abi_list(",".join(args.abi) if args.abi else _default_abis())


def _default_abis() -> str:
    family = HOST_FAMILY.get(os.uname().machine, "x86")
    return ",".join(a.name for a in ABIS.values() if a.family == family)


def _parse_sets(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise UsageError(f"--set {item}: write NAME=VALUE, e.g. --set nodes=20000")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _binary_profile(args: argparse.Namespace, store: RunStore) -> Path:
    """The profile a --binary command line stands for, written beside the results."""
    binaries = [parse_binary(b) for b in args.binary]
    for abi, _ in binaries:
        get_abi(abi)
    metrics = [parse_metric(m) for m in args.metric]
    # The programs' common name (prog32, prog64: prog), unless --name gives one.
    common = os.path.commonprefix([Path(p).name.lower() for _, p in binaries])  # noqa: RUF071
    name = args.name or re.sub(r"[^a-z0-9._-]+", "-", common).strip("-._0123456789") or \
        "prebuilt"
    if not ID_RE.match(name) or id_problem(name) is not None:
        raise UsageError(f"--name {name[:60]}: use at most {ID_MAX} lowercase letters, digits, "
                         "'.', '_' or '-'")
    text = profile_text(name, [(a, str(Path(p).absolute())) for a, p in binaries],
                        args.program_args, metrics, args.check_stdout, f"{args.timeout:g}s",
                        parse_check(args.check) if args.check is not None else None)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = store.local_dir / "profiles" / file_name("--name", name, f"-{digest}.toml")
    write_atomic(path, text.encode())
    return path


def _check_outputs(*outputs: tuple[str, Path | None]) -> None:
    """Report files can be written, and over no input of the run (outputs.py): checked once the
    workloads are loaded and before anything is measured."""
    for option, path in outputs:
        if path is not None:
            check_output(path, option)


# A run without --budget has this much time per workload for its adaptive rounds, as the
# per-workload limit used to be; spent wherever precision is furthest.
DEFAULT_BUDGET_PER_WORKLOAD_S = 120.0
PLAN_OPTIONS = ("workloads", "workload", "suite", "abi", "family", "rounds", "min_rounds", "max_rounds",
                "precision", "max_time", "budget", "design", "warmup", "cflags", "cc", "provenance",
                "allow_version_skew", "set", "seed", "counters", "keep_going", "binary", "metric",
                "label", "fleet",
                "name", "check_stdout", "check", "timeout", "program_args")


def _resume_request(args: argparse.Namespace, store: RunStore) -> tuple[Request, RunDoc]:
    defaults = build_parser().parse_args(["run"])
    defaults.program_args = []
    given = [o for o in PLAN_OPTIONS if getattr(args, o, None) != getattr(defaults, o, None)]
    if given:
        raise UsageError(f"--resume continues a run with its own plan: leave out "
                         f"{', '.join('--' + g.replace('_', '-') for g in given)}")
    doc = store.load_run(store.resolve_run(args.resume))
    return request_of(doc), doc


def cmd_run(args: argparse.Namespace, store: RunStore) -> int:
    check_plan_numbers(args.warmup, args.min_rounds, args.max_rounds)
    if args.resume is not None:
        req, resumed = _resume_request(args, store)
        return _measure(args, store, req, resumed)
    selection = [*args.workloads, *args.workload]
    if args.binary:
        if selection or args.suite:
            raise UsageError("--binary compares the given programs: leave out workload ids and "
                             "--suite (or write a profile with a [binaries] table)")
        selection = [str(_binary_profile(args, store))]
        abis = [get_abi(parse_binary(b)[0]) for b in args.binary]
    else:
        if args.metric or args.name or args.check_stdout or args.check or args.program_args:
            raise UsageError("--metric, --name, --check-stdout, --check and program arguments "
                             "after -- go with --binary")
        abis = _asked_abis(args)
    workloads = load_workloads(selection or None, args.suite, _parse_sets(args.set))
    budget = args.budget if args.budget is not None else \
        DEFAULT_BUDGET_PER_WORKLOAD_S * len(workloads)
    plan = Plan(min_rounds=args.min_rounds, max_rounds=args.max_rounds,
                fixed_rounds=args.rounds, precision=args.precision, max_time_s=args.max_time,
                warmup=args.warmup, seed=args.seed, counters=args.counters is not None,
                simulation=args.counters or "insn",
                budget_s=None if args.rounds is not None else budget, design=args.design)
    req = Request(workloads=workloads, abis=abis, plan=plan, cflags=tuple(args.cflags.split()),
                  cc=args.cc, provenance=args.provenance,
                  allow_version_skew=args.allow_version_skew,
                  keep_going=args.keep_going or args.family is not None,
                  label=args.label or None, fleet=args.fleet or None,
                  explicit_abis=args.abi is not None)
    return _measure(args, store, req, None)


def _measure(args: argparse.Namespace, store: RunStore, req: Request, resume: RunDoc | None) -> int:
    workloads, abis, plan = req.workloads, req.abis, req.plan
    _check_outputs(("--report", args.report), ("--html", args.html))
    baseline = _baseline(args, store)  # a wrong name fails before anything is measured
    err = sys.stderr
    show = err.isatty() and os.environ.get("CI") != "true"
    con = _console(err)
    # A progress bar on a terminal: what is building or running, and the time left (the
    # measuring part; builds are extra). Plain lines when not a terminal, nothing in CI.
    tracker = RunTracker([w.id for w in workloads], plan, targets=len(abis))
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[left]}"),
                   TimeElapsedColumn(), console=con, transient=True) if show else None
    task = bar.add_task("starting", total=1.0, left="") if bar is not None else None

    def refresh() -> None:
        if bar is not None and task is not None:
            bar.update(task, description=e(tracker.activity), completed=tracker.fraction(),
                       left=e(tracker.line()))

    def progress(msg: str) -> None:
        tracker.message(msg)
        if bar is not None:
            refresh()
        elif os.environ.get("CI") != "true":
            _say(msg, err)

    def on_sample(s: Sample) -> None:
        tracker.sample(s)
        refresh()

    if bar is not None:
        bar.start()
    try:
        # A polite kill (SIGTERM, a closed terminal's SIGHUP) ends the run like Ctrl-C: the
        # sample in flight is stopped, everything measured stays, the run is marked.
        with signals_as_interrupt():
            result = measure_suite(req, store, cache_dir(), progress, on_sample, resume)
    finally:
        if bar is not None:
            bar.stop()
    doc = store.load_run(result.run_id)
    heading = (f"run {result.run_id}: {fmt.count(len(workloads), 'workload')} on "
               f"{', '.join(a.name for a in abis)} in {result.elapsed_s:.1f}s "
               f"(builds: {result.built} new, {result.reused} reused from cache)")
    rep = analysis.from_run(doc, heading=heading)
    if args.json:
        _print_json(doc.to_dict())
    else:
        _print_terminal(rep)
    if args.report:
        write_file(args.report, render(rep, "markdown"), "--report")
        _say(f"report: {args.report}", err)
    if not args.no_html:
        _write_run_html(args, store, doc, rep, sys.stderr if args.json else sys.stdout)
    if result.interrupted:
        _say(f"abibench: interrupted; {len(doc.samples)} samples of run {result.run_id} are "
             f"stored in {store.label}; `abibench run --resume {result.run_id}` measures the "
             "rest", err)
        return EXIT_INTERRUPTED
    slow = _against(args, doc, baseline, err if args.json else sys.stdout)
    problems = list(result.failures)
    problems += [f"{b.result.id}: outputs differ between ABIs" for b in rep.workloads
                 if b.result.validation == "miscompare"]
    if problems:
        more = f" (and {len(problems) - 1} more, in the report above)" if len(problems) > 1 else ""
        _say(f"abibench: error: run {result.run_id}: {' '.join(problems[0].split())[:300]}"
             f"{more}", err)
        return max(result.exit_code, EXIT_WORKLOAD)
    return result.exit_code or slow


def _console(stream: Any = None) -> Console:
    out = stream or sys.stdout
    tty = out.isatty()
    # Not a terminal (CI, a pipe): fixed width, no colour codes in logs.
    # emoji=False: a ":name:" in a profile's title is text, not a picture.
    return Console(file=out, width=None if tty else 140, no_color=not tty, highlight=False,
                   soft_wrap=False, emoji=False)


def _print_terminal(rep: analysis.Report) -> None:
    from .report import terminal

    con = _console()
    sys.stdout.write(terminal.render(rep, color=sys.stdout.isatty(), width=con.width))


def _write_run_html(args: argparse.Namespace, store: RunStore, doc: RunDoc,
                    rep: analysis.Report, out: Any) -> None:
    try:
        path = args.html or store.local_dir / "reports" / file_name("run id", doc.run.id, ".html")
        write(rep, [Output("html", path)])
    except AbibenchError as exc:  # the results are stored; only the file is missing
        _say(f"abibench: warning: {exc} (`abibench report {doc.run.id} --html FILE` "
             "writes it again)", sys.stderr)
        return
    _say(f"report: {path} (open it in a browser; Markdown, CSV, JSON: abibench report "
         f"{doc.run.id} --markdown/--csv/--json)", out)


def _with_run_store(args: argparse.Namespace, ref: str) -> int:
    """`run` writes a SQLite file, or a shared server through its local spool (store/spool.py)."""
    from .store.spool import SpoolingSink, journaled

    if not is_url(ref):
        # Through a journal: a file deleted or replaced mid-run loses nothing (exit 11).
        with journaled(sqlite_file(ref), lambda msg: _say(f"abibench: warning: {msg}",
                                                          sys.stderr)) as journal:
            code = cmd_run(args, journal)
        lost = journal.lost_error()
        if lost is not None:
            raise lost
        return code

    sink = SpoolingSink(ref, lambda msg: _say(f"abibench: warning: {msg}", sys.stderr))
    try:
        for pushed in sink.pushed:
            _say(f"pushed run {pushed.run_id} from the spool to {sink.label} "
                 f"({pushed.new_samples} of its {pushed.samples} samples were new there)",
                 sys.stderr)
        return cmd_run(args, sink)
    finally:
        sink.close()


def cmd_push(args: argparse.Namespace, ref: str) -> int:
    """Upload the local spool of a shared database (what runs could not store there)."""
    from .store.postgres import PgStore
    from .store.spool import push, spool_path
    from .store.sqlite import Store
    from .store.url import safe_url

    if not is_url(ref):
        raise UsageError("push uploads the local spool of a shared database: give it with "
                         f"--db postgresql://USER@HOST:PORT/DBNAME (or ${DB_ENV})")
    path = spool_path(ref)
    if not path.exists():
        if args.json:
            _print_json([])
        else:
            _say(f"nothing to push: no spool for {safe_url(ref)} at {path}")
        return EXIT_OK
    spool = Store(path)
    try:
        remote = PgStore(ref)
        try:
            done = push(spool, remote)
            waiting = [r.id for r in spool.runs()]
        finally:
            remote.close()
    finally:
        spool.close()
    if args.json:
        _print_json([p.to_dict() for p in done])
        return EXIT_OK
    for p in done:
        _say(f"pushed run {p.run_id} to {safe_url(ref)}: {p.new_samples} new samples of "
             f"{p.samples} ({p.samples - p.new_samples} were there already)")
    if not done:
        _say("nothing to push: the spool holds no finished run")
    if waiting:
        _say(f"still in the spool (their runs are still writing): {', '.join(waiting)}")
    return EXIT_OK


# Options of `fleet run` that are the fleet's own; every other one goes to `abibench run` on
# each host, as typed.
FLEET_FLAGS = {"--serial"}
FLEET_VALUES = {"--forks", "--html", "--baseline", "--db"}  # --db: each host gets its own


def _value_options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions if a.option_strings and a.nargs != 0
            for o in a.option_strings}


def fleet_run_args(tokens: list[str]) -> list[str]:
    """The `abibench run` options in a `fleet run` command line (after `fleet run`): the
    inventory (the first positional) and the fleet's own options left out."""
    takes_value = _value_options(_fleet_run_parser()) | FLEET_VALUES
    out: list[str] = []
    inventory_seen = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        name = tok.split("=", 1)[0]
        if name in FLEET_FLAGS or name in FLEET_VALUES:
            i += 1 if ("=" in tok or name in FLEET_FLAGS) else 2
            continue
        if tok.startswith("-") and tok != "-":
            step = 2 if name in takes_value and "=" not in tok else 1
            out += tokens[i:i + step]
            i += step
            continue
        if not inventory_seen:
            inventory_seen = True
        else:
            out.append(tok)
        i += 1
    return out


def _fleet_run_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="abibench fleet run")
    _fleet_run_options(parser)
    return parser


def cmd_fleet(args: argparse.Namespace, tokens: list[str]) -> int:
    from .fleet.ansible import PLAYBOOK
    from .fleet.package import build_sdist

    if args.fleet_command == "playbook":
        _say(str(PLAYBOOK))
        return EXIT_OK
    if args.fleet_command == "sdist":
        built = build_sdist(args.outdir.absolute() / ".abibench-sdist")
        args.outdir.mkdir(parents=True, exist_ok=True)
        target = check_output(args.outdir / built.name, "the sdist's directory")
        built.replace(target)
        _say(f"sdist: {target}")
        return EXIT_OK
    return cmd_fleet_run(args, tokens)


def cmd_fleet_run(args: argparse.Namespace, tokens: list[str]) -> int:
    from .fleet.controller import run_fleet

    check_plan_numbers(args.warmup, args.min_rounds, args.max_rounds)
    # Checked here, before any host is touched: the hosts run this same abibench.
    load_workloads([*args.workloads, *args.workload] or None, args.suite, _parse_sets(args.set))
    _check_outputs(("--html", args.html))
    if args.abi or args.family:
        _asked_abis(args)
    ref = db_ref(args.db)
    err = sys.stderr
    # After `fleet run` (a --db value may be a file named "fleet").
    start = next(i for i in range(len(tokens) - 1) if tokens[i:i + 2] == ["fleet", "run"]) + 2
    result = run_fleet(args.inventory, fleet_run_args(tokens[start:]), ref,
                       lambda line: _say(line, err), serial=args.serial, forks=args.forks,
                       selected=[*args.workloads, *args.workload])
    sets = result.sets()
    table = [("host", "status", "run", "samples", "stored / reason")]
    for h in result.hosts:
        why = h.stored if h.status == "ok" else f"at '{h.task or '?'}': {h.reason or '?'}"
        table.append((h.name, h.status, h.run_id or "-", str(h.samples), why))
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    _say(f"fleet {result.fleet_id}: {len(result.hosts) - len(result.failed)} of "
         f"{len(result.hosts)} hosts done in {result.wall_s:.1f}s")
    for row in table:  # host names and reasons come from the inventory and the hosts: _say
        _say("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  "
             + row[4][:400])
    if result.kept is not None:
        _say(f"run documents fetched from the hosts: {result.kept}")
    if len(sets) >= 2:
        rep = analysis.from_sets(sets, args.baseline, None)
        _print_terminal(rep)
        try:
            path = args.html or data_dir() / "reports" / file_name("fleet id", result.fleet_id,
                                                                   ".html")
            write(rep, [Output("html", path)])
            _say(f"report: {path} (again: abibench --db {_shown(ref)} compare "
                 f"{' '.join(d.id for d in result.docs)})")
        except AbibenchError as exc:
            _say(f"abibench: warning: {exc}", err)
    elif len(sets) == 1:
        _print_terminal(analysis.from_run(sets[0].doc))
    if result.failed:
        _say(f"abibench: error: fleet {result.fleet_id}: "
             f"{', '.join(f'{h.name} {h.status}' for h in result.failed)} (table above)", err)
        return EXIT_WORKLOAD
    return EXIT_OK


def _shown(ref: str) -> str:
    from .store.url import safe_url

    return safe_url(ref) if is_url(ref) else ref


def cmd_vm(args: argparse.Namespace) -> int:
    """`abibench vm run`: the formatting of run/vm.py's answer; the work is there."""
    abis = parse_abi_list(args.abi) if args.abi else \
        [a for a in ABIS.values() if vm_kernel_abi(a) is not None]
    workloads = load_workloads(args.workloads, None, _parse_sets(args.set))
    if args.json is not None:
        check_output(args.json, "--json")  # refused before minutes of booting, not after
    with signals_as_interrupt():
        done = vm.measure(workloads, abis, boots=args.boots, rounds=args.rounds,
                          cflags=tuple(args.cflags.split()), cache_root=cache_dir(),
                          build=build, compiler=compiler_for,
                          say=lambda line: _say(line, sys.stderr))
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
    for line in done.problems():
        _say(f"problem: {line}", sys.stderr)
    if args.json is not None:
        write_output(args.json, json.dumps(vm.to_json(done), indent=1) + "\n", "--json")
    return EXIT_WORKLOAD if done.problems() else EXIT_OK


def cmd_runs(args: argparse.Namespace, store: SqlStore) -> int:
    runs = store.runs()
    if args.json:
        _print_json([r.to_dict() for r in runs])
        return EXIT_OK
    for r in runs:
        _say(f"{r.id}  {r.started}  {r.status:11s} {r.samples} samples")
    return EXIT_OK


_READ_COMMANDS = ("runs", "report", "compare", "export", "explain", "advise", "history")


def _report_sources(args: argparse.Namespace) -> list[str]:
    if args.command in ("explain", "advise"):
        return [args.run]
    sources: list[str] = args.run if args.command == "report" else args.sources
    return sources


def _baseline(args: argparse.Namespace, store: Reader | None) -> RunDoc | None:
    if args.against is None:
        if args.fail_on_slowdown is not None:
            raise UsageError("--fail-on-slowdown needs a baseline: add --against RUN_OR_TAG")
        return None
    return resolve_baseline(args.against, store)


def _against(args: argparse.Namespace, doc: RunDoc, baseline: RunDoc | None, out: Any) -> int:
    """Print the run against its baseline; EXIT_SLOWDOWN when the gate fails, else 0."""
    from .analyse.baseline import against
    from .report import baseline as shown

    if baseline is None:
        return EXIT_OK
    cmp = against(doc, baseline)
    out.write(shown.json_text(cmp) if args.json and out is sys.stdout else shown.terminal(cmp))
    if args.fail_on_slowdown is None:
        return EXIT_OK
    failed = shown.gate_lines(cmp, args.fail_on_slowdown)
    if failed:  # one line, as every error (the rest are in the comparison above)
        more = f" (and {len(failed) - 1} more, above)" if len(failed) > 1 else ""
        _say(f"abibench: slowdown: {failed[0]}{more}", sys.stderr)
    return EXIT_SLOWDOWN if failed else EXIT_OK


def cmd_compare_against(args: argparse.Namespace, store: SqlStore | None) -> int:
    """`compare [RUN] --against BASE`: one result set against its baseline."""
    unused = [o for o, v in (("--html", args.html), ("--csv", args.csv),
                             ("--samples-csv", args.samples_csv), ("--baseline", args.baseline),
                             ("--tag", args.tag)) if v]
    if unused:
        raise UsageError(f"{', '.join(unused)}: for an N-way comparison, not with --against "
                         "(which prints, or writes --markdown FILE, or --json)")
    _check_outputs(("--markdown", args.markdown))
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
        from .analyse.baseline import against
        from .report.baseline import markdown

        write_file(args.markdown, markdown(against(now, baseline)), "--markdown")
        _say(f"markdown: {args.markdown}", sys.stderr)
    return _against(args, now, baseline, sys.stdout)


def cmd_history(args: argparse.Namespace, store: SqlStore) -> int:
    from .analyse.history import history
    from .report import history as shown

    try:
        h = history(stored_runs(store), args.workload, args.by, host=args.host)
    except ValueError as exc:
        raise UsageError(f"{exc} in {store.label}: see `abibench runs`") from None
    _check_outputs(("--markdown", args.markdown), ("--html", args.html))  # both, then write
    if args.markdown is not None:
        write_file(args.markdown, shown.markdown(h), "--markdown")
        _say(f"markdown: {args.markdown}", sys.stderr)
    if args.html is not None:
        from .report.historyhtml import render as page

        write_file(args.html, page(h), "--html")
        _say(f"html: {args.html}", sys.stderr)
    sys.stdout.write(shown.json_text(h) if args.json else shown.terminal(h))
    return EXIT_OK


def cmd_report(args: argparse.Namespace, store: SqlStore | None) -> int:
    """store: None when every source is an exported file and there is no database."""
    if args.command == "compare" and (args.against or args.fail_on_slowdown is not None):
        return cmd_compare_against(args, store)
    sources = _report_sources(args)
    if args.command == "compare" and not sources and store is not None:
        sources = latest_fleet(store)  # `compare` alone: every host of the last fleet run
    if args.command == "compare" and len(sources) < 2:
        raise UsageError("compare needs two or more result sets: pass run ids (`abibench runs`)"
                         " or exported .json files")
    sets = load_sources(sources, store)
    rep = analysis.from_sets(sets, args.baseline, args.tag, _deployment(args))
    if args.json:
        from .report.jsonout import chunks

        for chunk in chunks(rep):  # streamed: a large run's JSON is never one string
            sys.stdout.write(chunk)
    outputs = [Output(fmt_, path) for fmt_, path in (
        ("html", args.html), ("markdown", args.markdown), ("csv", args.csv),
        ("samples-csv", args.samples_csv)) if path is not None]
    written = write(rep, outputs)
    for kind, path in written:
        _say(f"{kind}: {path}", sys.stderr)
    if args.json or written:
        return EXIT_OK
    _print_terminal(rep)
    return EXIT_OK


def _one_report(args: argparse.Namespace, store: SqlStore | None) -> analysis.Report:
    sets = load_sources([args.run], store)
    return analysis.from_sets(sets, deployment=_deployment(args))


def cmd_explain(args: argparse.Namespace, store: SqlStore | None) -> int:
    from .report import terminal
    from .report.jsonout import explanation_json

    rep = _one_report(args, store)
    if args.workload is not None and args.workload not in {b.result.id for b in rep.workloads}:
        raise UsageError(f"workload '{args.workload}' is not in this run (it has "
                         f"{', '.join(b.result.id for b in rep.workloads)})")
    if args.json:
        _print_json([explanation_json(x) for x in rep.explanations
                     if args.workload in (None, x.workload)])
        return EXIT_OK
    sys.stdout.write(terminal.render_explanations(rep, args.workload))
    return EXIT_OK


def cmd_advise(args: argparse.Namespace, store: SqlStore | None) -> int:
    from .report import terminal
    from .report.jsonout import advice_json

    rep = _one_report(args, store)
    if args.json:
        _print_json(advice_json(rep.advice) if rep.advice else None)
        return EXIT_OK
    sys.stdout.write(terminal.render_advice(rep))
    return EXIT_OK


def cmd_import(args: argparse.Namespace, store: SqlStore) -> int:
    from .store.exchange import import_doc, load_file

    docs = [(path, load_file(path)) for path in args.files]  # every file checked before storing
    done = []
    for path, doc in docs:
        res = import_doc(store, doc, str(path))
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


def cmd_export(args: argparse.Namespace, store: SqlStore) -> int:
    from .store.exchange import export_chunks

    chunks = export_chunks(store, store.resolve_run(args.run))
    if args.output:
        write_file(args.output, "".join(chunks), "-o")
        _say(f"exported: {args.output}", sys.stderr)
    else:
        for chunk in chunks:  # streamed: a large run's document is never one string
            sys.stdout.write(chunk)
    return EXIT_OK


def cmd_inspect(args: argparse.Namespace) -> int:
    from .obtain.libraries import inspect_binary
    from .obtain.libraries import render as render_inspection

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


# Options of `run` that take a value that may start with '-' (a mistake the parser must
# explain, not mistake for an option: `--max-time -5s`).
VALUE_OPTIONS = {"--rounds", "--min-rounds", "--max-rounds", "--precision", "--max-time",
                 "--warmup", "--seed", "--timeout", "--cflags"}


def _split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """The arguments abibench parses, and the program's own after `--` (with --binary)."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def _join_negative_values(argv: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--counters":
            # `--counters` alone means instructions; a following word is its value only when it
            # is one (`--counters nbody` counts nbody's instructions).
            given = argv[i + 1] if i + 1 < len(argv) and argv[i + 1] in ("insn", "cache") else None
            out.append(f"--counters={given or 'insn'}")
            i += 2 if given else 1
            continue
        if argv[i] in VALUE_OPTIONS and i + 1 < len(argv) and \
                re.match(r"^-(\d|\.\d)", argv[i + 1]):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    """The entry point: whatever fails ends as one line and a code (toplevel.py)."""
    return guarded(lambda: _command(argv))


def _command(argv: list[str] | None) -> int:
    own, program_args = _split_argv(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(_join_negative_values(own))
    args.program_args = program_args
    if program_args and args.command != "run":
        print("abibench: error: arguments after -- are a program's, for `run --binary`",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.command == "probe":
            return cmd_probe(args)
        if args.command == "inspect":
            return cmd_inspect(args)
        if args.command == "calibrate":
            return cmd_calibrate(args)
        if args.command == "list":
            return cmd_list(args)
        if args.command == "fleet":
            return cmd_fleet(args, _join_negative_values(own))
        if args.command == "vm":
            return cmd_vm(args)
        ref = db_ref(args.db)
        readers = {"report": cmd_report, "compare": cmd_report, "explain": cmd_explain,
                   "advise": cmd_advise}
        sources = _report_sources(args) if args.command in readers else []
        if sources and all(is_file_ref(r) for r in sources):
            # Exported files only: no database is opened (a shared one may be out of reach).
            return readers[args.command](args, None)
        if args.command == "run":
            return _with_run_store(args, ref)
        if args.command == "push":
            return cmd_push(args, ref)
        # The commands that only read open it read-only: they work on a read-only file,
        # directory or mount (or a read-only role), and never migrate or write it.
        store = open_store(ref, readonly=args.command in _READ_COMMANDS)
        try:
            handler = {"runs": cmd_runs, "report": cmd_report, "compare": cmd_report,
                       "import": cmd_import, "export": cmd_export, "explain": cmd_explain,
                       "advise": cmd_advise, "history": cmd_history}[args.command]
            return handler(args, store)
        finally:
            store.close()
    except AbibenchError as exc:
        _say(f"abibench: error: {exc}", sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("abibench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
