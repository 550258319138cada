"""Command line: parse, call the stages, print. No measurement logic lives here."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from . import __version__, analyse, host
from .abi import ABIS, HOST_FAMILY, parse_abi_list
from .errors import EXIT_INTERRUPTED, EXIT_OK, AbibenchError, UsageError
from .measure import Request, execute
from .paths import cache_dir, default_db
from .probe import counters_status, probe_all
from .provenance.source import DEFAULT_CFLAGS
from .records import Sample
from .report import markdown, terminal
from .schedule import Plan
from .store import Store
from .workloads.profile import builtin_profiles, load_profile, load_workloads, parse_duration


def _percent(text: str) -> float:
    t = text.strip().rstrip("%")
    try:
        value = float(t) / 100.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a percentage like 2%") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"precision {text} must be between 0% and 100%")
    return value


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} must be at least 1")
    return n


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # One line naming the problem and where help is, exit code 2 as documented.
        self.exit(2, f"abibench: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="abibench", description="Is the 32-bit or the 64-bit build faster here?")
    p.add_argument("--version", action="version", version=f"abibench {__version__}")
    p.add_argument("--db", type=Path, default=None,
                   help=f"results database (default {default_db()})")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    pr = sub.add_parser("probe", help="what this host can build and run for each ABI")
    pr.add_argument("--json", action="store_true")

    ls = sub.add_parser("list", help="the built-in workloads and their suites")
    ls.add_argument("--json", action="store_true")

    r = sub.add_parser("run", help="build and measure workloads per ABI")
    r.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                   help="built-in workload ids or paths to .toml profiles (default: --suite)")
    r.add_argument("--workload", action="append", default=[], help="same as a positional id")
    r.add_argument("--suite", default=None, help="run every workload of this suite (default: "
                   "'default')")
    r.add_argument("--abi", default=None, help="comma-separated ABIs (default: every ABI of this "
                   "host's family)")
    r.add_argument("--rounds", type=_positive, default=None,
                   help="exactly N counted rounds (turns off adaptive stopping)")
    r.add_argument("--min-rounds", type=_positive, default=5)
    r.add_argument("--max-rounds", type=_positive, default=30)
    r.add_argument("--precision", type=_percent, default=0.02,
                   help="stop when every ratio's 95%% CI is within ±this (default 2%%)")
    r.add_argument("--max-time", type=_duration, default=120.0,
                   help="time budget per workload (default 120s)")
    r.add_argument("--warmup", type=int, default=1, help="warm-up runs per target (default 1)")
    r.add_argument("--cflags", default=" ".join(DEFAULT_CFLAGS),
                   help="flags for every ABI (default -O2); the ABI flag is added per target")
    r.add_argument("--cc", default=None, help="C compiler (default: gcc)")
    r.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="override a workload parameter, e.g. --set nodes=20000")
    r.add_argument("--seed", type=int, default=0, help="seed for environment-size randomisation")
    r.add_argument("--counters", action="store_true",
                   help="also count instructions: one run per target under valgrind")
    r.add_argument("--report", type=Path, default=None, help="also write a Markdown report")
    r.add_argument("--json", action="store_true", help="print the run document as JSON")

    rs = sub.add_parser("runs", help="list stored runs")
    rs.add_argument("--json", action="store_true")

    rp = sub.add_parser("report", help="show a stored run")
    rp.add_argument("run", nargs="?", default="latest")
    rp.add_argument("--markdown", type=Path, default=None, help="write Markdown to this file")
    rp.add_argument("--json", action="store_true")

    ex = sub.add_parser("export", help="write a run as a versioned JSON document")
    ex.add_argument("run", nargs="?", default="latest")
    ex.add_argument("--json", action="store_true", help="JSON (the only format; accepted for "
                    "clarity)")
    ex.add_argument("-o", "--output", type=Path, default=None)
    return p


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


def cmd_probe(args: argparse.Namespace) -> int:
    statuses = probe_all()
    ctx = host.capture()
    counters = counters_status()
    if args.json:
        _print_json({"abis": [s.to_dict() for s in statuses], "host": ctx, "counters": counters,
                     "warnings": host.context_warnings(ctx)})
        return EXIT_OK
    con = terminal.console()
    con.print(f"host: {ctx['cpu_model']}, {ctx['cpus_online']} CPUs, {ctx['machine']} kernel "
              f"{ctx['kernel_release']} ({ctx['kernel_bits']}-bit), {ctx['libc']}")
    con.print(f"governor: {ctx['governor'] or 'not exposed (no cpufreq)'}; turbo: "
              f"{ctx['turbo'] or 'unknown'}; load {ctx['load_average'][0]:.2f}; "
              f"compilers: {'; '.join(ctx['compilers'].values()) or 'none'}")
    for s in statuses:
        build = "builds" if s.can_build else "cannot build"
        run = "runs" if s.can_run else "cannot run here"
        line = f"  {s.abi:8s} {build:13s} {run:16s}"
        if s.reason:
            line += f" {s.reason}; fix: {s.fix}"
        con.print(line)
    perf = counters["perf"]
    con.print(f"instruction counts: perf {'yes' if perf['available'] else 'no (' + str(perf['reason']) + ')'}"
              f"; valgrind {'yes' if counters['valgrind']['available'] else 'no'}")
    for w in host.context_warnings(ctx):
        con.print(f"warning: {w}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    wls = [load_profile(p) for p in builtin_profiles().values()]
    if args.json:
        _print_json([{"id": w.id, "title": w.title, "suites": list(w.suites),
                      "primary": w.primary, "params": w.params, "path": str(w.path)} for w in wls])
        return EXIT_OK
    con = terminal.console()
    for w in wls:
        con.print(f"{w.id:16s} {','.join(w.suites):22s} {w.title}")
    return EXIT_OK


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


def cmd_run(args: argparse.Namespace, store: Store) -> int:
    abis = parse_abi_list(args.abi or _default_abis())
    selection = [*args.workloads, *args.workload]
    workloads = load_workloads(selection or None, args.suite, _parse_sets(args.set))
    plan = Plan(min_rounds=args.min_rounds, max_rounds=max(args.max_rounds, args.min_rounds),
                fixed_rounds=args.rounds, precision=args.precision, max_time_s=args.max_time,
                warmup=max(args.warmup, 0), seed=args.seed, counters=args.counters)
    req = Request(workloads=workloads, abis=abis, plan=plan, cflags=tuple(args.cflags.split()),
                  cc=args.cc)
    err = sys.stderr
    show = err.isatty() and os.environ.get("CI") != "true"
    con = terminal.console(err)
    status = con.status("starting") if show else None

    def progress(msg: str) -> None:
        if status is not None:
            status.update(msg)
        elif os.environ.get("CI") != "true":
            print(msg, file=err)

    def on_sample(s: Sample) -> None:
        if status is not None:
            kind = "warm-up" if s.warmup else f"round {s.round}"
            status.update(f"{s.workload}: {s.target} {kind} {s.status} {s.wall_s:.2f}s")

    if status is not None:
        status.start()
    try:
        result = execute(req, store, cache_dir(), progress, on_sample)
    finally:
        if status is not None:
            status.stop()
    doc = store.load_run(result.run_id)
    results = analyse.analyse(doc)
    if args.json:
        _print_json(doc)
    else:
        header = (f"run {result.run_id}: {len(workloads)} workloads on "
                  f"{', '.join(a.name for a in abis)} in {result.elapsed_s:.1f}s "
                  f"(builds: {result.built} new, {result.reused} reused from cache)")
        terminal.render(results, header, [w["message"] for w in doc["warnings"]
                                          if not w.get("workload")], terminal.console())
    if args.report:
        args.report.write_text(markdown.render(doc, results))
        print(f"report: {args.report}", file=err)
    if result.interrupted:
        n = len(doc["samples"])
        print(f"abibench: interrupted; {n} samples of run {result.run_id} are stored in "
              f"{store.path}", file=err)
        return EXIT_INTERRUPTED
    if any(r.validation == "miscompare" for r in results):
        return max(result.exit_code, 1)
    return result.exit_code


def cmd_runs(args: argparse.Namespace, store: Store) -> int:
    runs = store.runs()
    if args.json:
        _print_json(runs)
        return EXIT_OK
    for r in runs:
        print(f"{r['id']}  {r['started']}  {r['status']:11s} {r['samples']} samples")
    return EXIT_OK


def cmd_report(args: argparse.Namespace, store: Store) -> int:
    doc = store.load_run(store.resolve_run(args.run))
    results = analyse.analyse(doc)
    if args.json:
        _print_json(doc)
    elif args.markdown:
        args.markdown.write_text(markdown.render(doc, results))
        print(f"report: {args.markdown}", file=sys.stderr)
    else:
        terminal.render(results, f"run {doc['run']['id']} ({doc['run']['status']})",
                        [w["message"] for w in doc["warnings"] if not w.get("workload")],
                        terminal.console())
    return EXIT_OK


def cmd_export(args: argparse.Namespace, store: Store) -> int:
    doc = store.load_run(store.resolve_run(args.run))
    if args.output:
        args.output.write_text(json.dumps(doc, indent=1, default=str) + "\n")
        print(f"exported: {args.output}", file=sys.stderr)
    else:
        _print_json(doc)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "probe":
            return cmd_probe(args)
        if args.command == "list":
            return cmd_list(args)
        store = Store(args.db or default_db())
        try:
            handler = {"run": cmd_run, "runs": cmd_runs, "report": cmd_report,
                       "export": cmd_export}[args.command]
            return handler(args, store)
        finally:
            store.close()
    except AbibenchError as exc:
        print(f"abibench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("abibench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
