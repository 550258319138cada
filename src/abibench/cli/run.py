"""`abibench run`: the plan from the options, the measurement (run/suite.py), the report printed."""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EXIT_INTERRUPTED, EXIT_WORKLOAD, AbibenchError, UsageError
from .argtypes import Commands, _duration, _ident, _Parser
from .options import _against_options, _asked_abis, _check_outputs, _db_option, _parse_sets, _plan_options
from .printing import _console, _print_json, _print_terminal, _say

# What a run needs (the suite, the builders, the analysis, rich's progress bar) is imported in
# the functions that run it, not here: a start that parses `run` and refuses it, or prints its
# --help, imports this module and the shared options alone (tests/invariants/test_lazy_imports.py).
if TYPE_CHECKING:
    from ..analyse import report as analysis
    from ..records import RunDoc, Sample
    from ..run.suite import Request
    from ..store.spool import SpooledSink
    from ..store.sql import SqlStore

    # What a run writes to and reads back from: a store, or a shared one through its spool.
    RunStore = SqlStore | SpooledSink


def add_parser(sub: Commands) -> None:
    r = sub.add_parser("run")
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


def _binary_profile(args: argparse.Namespace, store: RunStore) -> Path:
    """The profile a --binary command line stands for, written beside the results."""
    from ..abi import get_abi
    from ..ids import ID_MAX, file_name, id_problem
    from ..outputs import write_atomic
    from ..workloads.oneliner import parse_binary, parse_check, parse_metric, profile_text
    from ..workloads.profile import ID_RE

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


# A run without --budget has this much time per workload for its adaptive rounds, as the
# per-workload limit used to be; spent wherever precision is furthest.
DEFAULT_BUDGET_PER_WORKLOAD_S = 120.0


PLAN_OPTIONS = ("workloads", "workload", "suite", "abi", "family", "rounds", "min_rounds", "max_rounds",
                "precision", "max_time", "budget", "design", "warmup", "cflags", "cc", "provenance",
                "allow_version_skew", "set", "seed", "counters", "keep_going", "binary", "metric",
                "label", "fleet", "allow_host_libs",
                "name", "check_stdout", "check", "timeout", "program_args")


def _run_parser() -> argparse.ArgumentParser:
    """`run`'s options alone, as `abibench run` parses them: what --resume compares with."""
    p = _Parser(prog="abibench")
    add_parser(p.add_subparsers(dest="command", required=True, parser_class=_Parser))
    return p


def _resume_request(args: argparse.Namespace, store: RunStore) -> tuple[Request, RunDoc]:
    from ..run.resume import request_of

    defaults = _run_parser().parse_args(["run"])
    defaults.program_args = []
    given = [o for o in PLAN_OPTIONS if getattr(args, o, None) != getattr(defaults, o, None)]
    if given:
        raise UsageError(f"--resume continues a run with its own plan: leave out "
                         f"{', '.join('--' + g.replace('_', '-') for g in given)}")
    doc = store.load_run(store.resolve_run(args.resume))
    return request_of(doc), doc


def cmd_run(args: argparse.Namespace, store: RunStore) -> int:
    from ..abi import get_abi
    from ..obtain.prebuilt import identify
    from ..run.preflight import check_plan_numbers
    from ..workloads.oneliner import parse_binary
    from ..workloads.profile import load_workloads

    check_plan_numbers(args.warmup, args.min_rounds, args.max_rounds)
    if args.resume is not None:
        req, resumed = _resume_request(args, store)
        _check_outputs(("--report", args.report), ("--html", args.html))
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
    # What the options and the workloads alone refuse is refused before the run's machinery is
    # imported and the host probed: outputs over an input of the run, a wrong prebuilt program.
    _check_outputs(("--report", args.report), ("--html", args.html))
    for wl in workloads:
        for name, path in wl.binaries.items():
            identify(get_abi(name), path)
    # The run's machinery (the scheduler, the suite, with numpy and the browser driver) is
    # imported once the plan's values and the workloads are checked: a refused run never does.
    from ..run.schedule import Plan
    from ..run.suite import Request

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
                  allow_host_libs=args.allow_host_libs,
                  keep_going=args.keep_going or args.family is not None,
                  label=args.label or None, fleet=args.fleet or None,
                  explicit_abis=args.abi is not None)
    return _measure(args, store, req, None)


def _measure(args: argparse.Namespace, store: RunStore, req: Request, resume: RunDoc | None) -> int:
    from ..analyse import report as analysis
    from ..paths import cache_dir
    from ..report import formatting as fmt
    from ..report import render, write_file
    from ..report.terminal import e
    from ..run.progress import RunTracker
    from ..run.signals import signals_as_interrupt
    from ..run.suite import measure_suite
    from .against import _against, _baseline

    workloads, abis, plan = req.workloads, req.abis, req.plan
    baseline = _baseline(args, store)  # a wrong name fails before anything is measured
    err = sys.stderr
    # A progress bar on a terminal: what is building or running, and the time left (the
    # measuring part; builds are extra). Plain lines when not a terminal, nothing in CI.
    tracker = RunTracker([w.id for w in workloads], plan, targets=len(abis))
    bar, task = _progress_bar(err)

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
        _write_run_html(args, store, doc, rep, sys.stderr if args.json else sys.stdout, baseline)
    if result.interrupted:
        _say(f"abibench: interrupted; {len(doc.samples)} samples of run {result.run_id} are "
             f"stored in {store.label}; `abibench run --resume {result.run_id}` measures the "
             "rest", err)
        return EXIT_INTERRUPTED
    slow = _against(args, doc, baseline, err if args.json else sys.stdout)
    problems = list(result.failures)
    problems += [f"{b.result.id}: outputs differ between ABIs" for b in rep.workloads
                 if b.result.validation == "miscompare"]
    problems += [f"{b.result.id} {line}" for b in rep.workloads for line in b.result.withheld]
    if problems:
        more = f" (and {len(problems) - 1} more, in the report above)" if len(problems) > 1 else ""
        _say(f"abibench: error: run {result.run_id}: {' '.join(problems[0].split())[:300]}"
             f"{more}", err)
        return max(result.exit_code, EXIT_WORKLOAD)
    return result.exit_code or slow


def _progress_bar(err: Any) -> tuple[Any, Any]:
    """rich's progress bar and its task on a terminal outside CI, else (None, None)."""
    if not err.isatty() or os.environ.get("CI") == "true":
        return None, None
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[left]}"),
                   TimeElapsedColumn(), console=_console(err), transient=True)
    return bar, bar.add_task("starting", total=1.0, left="")


def _write_run_html(args: argparse.Namespace, store: RunStore, doc: RunDoc,
                    rep: analysis.Report, out: Any, baseline: RunDoc | None = None) -> None:
    from ..analyse.baseline import against
    from ..ids import file_name
    from ..report import write_file
    from ..report.baselinehtml import page

    try:
        path = args.html or store.local_dir / "reports" / file_name("run id", doc.run.id, ".html")
        cmp = None if baseline is None else against(doc, baseline)
        write_file(path, page(rep, cmp, args.fail_on_slowdown), "--html")
    except AbibenchError as exc:  # the results are stored; only the file is missing
        _say(f"abibench: warning: {exc} (`abibench report {doc.run.id} --html FILE` "
             "writes it again)", sys.stderr)
        return
    _say(f"report: {path} (open it in a browser; Markdown, CSV, JSON: abibench report "
         f"{doc.run.id} --markdown/--csv/--json)", out)


def _with_run_store(args: argparse.Namespace, ref: str) -> int:
    """`run` writes a SQLite file, or a shared server through its local spool (store/spool.py)."""
    from ..store.spool import SpoolingSink, journaled
    from ..store.url import is_url, sqlite_file

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
