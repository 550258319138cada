"""`abibench fleet`: the same run on every host of an inventory, then one comparison."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EXIT_OK, EXIT_SLOWDOWN, EXIT_WORKLOAD, AbibenchError, UsageError
from .argtypes import Commands, _limit, _Parser, _positive
from .options import _asked_abis, _check_outputs, _db_option, _parse_sets, _plan_options
from .printing import _print_terminal, _say

# What a fleet run needs (the controller with the whole run machinery, the analysis, the
# report) is imported in the functions that run it, not here: a start that parses `fleet` and
# refuses it, or prints its --help, imports this module and the shared options alone.
if TYPE_CHECKING:
    from ..fleet.controller import FleetResult
    from ..records import RunDoc


def add_parser(sub: Commands) -> None:
    fl = sub.add_parser("fleet")
    fsub = fl.add_subparsers(dest="fleet_command", required=True, parser_class=_Parser)
    fr = fsub.add_parser("run", help="run on every host of INVENTORY (Ansible's INI or YAML); "
                         "results into --db, then the N-way comparison")
    _fleet_run_options(fr)
    fsub.add_parser("playbook", help="print where the playbook is (to run it with "
                    "ansible-playbook yourself)")
    fs = fsub.add_parser("sdist", help="build the sdist the playbook copies to every host")
    fs.add_argument("outdir", type=Path, nargs="?", default=Path("dist"))


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
    fr.add_argument("--against", default=None, metavar="FLEET",
                    help="also state each host's change against its own run in that earlier "
                    "fleet run (the id `fleet run` printed), with CIs")
    fr.add_argument("--fail-on-slowdown", type=_limit, default=None, metavar="PCT",
                    help=f"with --against: exit {EXIT_SLOWDOWN} when an ABI of a host is "
                    "significantly slower than its baseline by more than PCT")
    _db_option(fr)


# Options of `fleet run` that are the fleet's own; every other one goes to `abibench run` on
# each host, as typed.
FLEET_FLAGS = {"--serial"}


FLEET_VALUES = {"--forks", "--html", "--baseline", "--db",  # --db: each host gets its own
                "--against", "--fail-on-slowdown"}


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
    from ..fleet.ansible import PLAYBOOK
    from ..fleet.package import build_sdist
    from ..outputs import check_output

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
    from ..analyse import report as analysis
    from ..axes import axes_of
    from ..fleet.controller import run_fleet
    from ..ids import file_name
    from ..paths import data_dir
    from ..report import Output, write
    from ..run.preflight import check_plan_numbers
    from ..store.open import db_ref
    from ..workloads.profile import load_workloads
    from .against import _against

    check_plan_numbers(args.warmup, args.min_rounds, args.max_rounds)
    # Checked here, before any host is touched: the hosts run this same abibench.
    load_workloads([*args.workloads, *args.workload] or None, args.suite, _parse_sets(args.set))
    _check_outputs(("--html", args.html))
    if args.abi or args.family:
        _asked_abis(args)
    ref = db_ref(args.db)
    baselines = _fleet_baselines(args, ref)  # a wrong fleet id fails before any host is touched
    err = sys.stderr
    # After `fleet run` (a --db value may be a file named "fleet").
    start = next(i for i in range(len(tokens) - 1) if tokens[i:i + 2] == ["fleet", "run"]) + 2
    result = run_fleet(args.inventory, fleet_run_args(tokens[start:]), ref,
                       lambda line: _say(line, err), serial=args.serial, forks=args.forks,
                       selected=[*args.workloads, *args.workload])
    sets = result.sets()
    _print_hosts(result)
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
    slow = EXIT_OK
    for doc in result.docs if baselines is not None else []:
        label = axes_of(doc)["tag"] or axes_of(doc)["host"] or doc.id
        if baselines is None or label not in baselines:
            _say(f"abibench: warning: host {label} has no run in fleet {args.against}: not "
                 "compared", err)
            continue
        slow = max(slow, _against(args, doc, baselines[label], sys.stdout))
    if result.failed:
        _say(f"abibench: error: fleet {result.fleet_id}: "
             f"{', '.join(f'{h.name} {h.status}' for h in result.failed)} (table above)", err)
        return EXIT_WORKLOAD
    return slow


def _print_hosts(result: FleetResult) -> None:
    """The fleet's table: each host's status, run, samples and where they are (or why not)."""
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


def _fleet_baselines(args: argparse.Namespace, ref: str) -> dict[str, RunDoc] | None:
    """`fleet run --against FLEET`: each host's run in that fleet run, by inventory name."""
    from ..store.history import fleet_baselines
    from ..store.open import open_store

    if args.against is None:
        if args.fail_on_slowdown is not None:
            raise UsageError("--fail-on-slowdown needs a baseline: add --against FLEET")
        return None
    store = open_store(ref, readonly=True)
    try:
        return fleet_baselines(store, args.against)
    finally:
        store.close()


def _shown(ref: str) -> str:
    from ..store.url import is_url, safe_url

    return safe_url(ref) if is_url(ref) else ref
