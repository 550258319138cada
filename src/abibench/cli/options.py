"""Option groups several commands share (--db, the plan of a run, reports, deployments,
--against), and what their values mean once parsed."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EXIT_SLOWDOWN, UsageError
from ..paths import default_db
from ..store.open import DB_ENV
from .argtypes import _count, _duration, _ident, _limit, _percent, _positive

# Every command's parser takes options from here: what their values mean once parsed (ABIs,
# deployments, the build's flags) is imported where it is used, so that building a parser
# (every start, --help, a refusal) does not import the ELF reader, the analysis or the builder.
if TYPE_CHECKING:
    from ..abi import Abi
    from ..analyse.advise import Deployment


def _db_option(p: argparse.ArgumentParser, default: object = argparse.SUPPRESS) -> None:
    """--db, before the command (`abibench --db X runs`) or after it (`abibench runs --db X`).
    A command's own has no default, so that it never hides one given before the command."""
    p.add_argument("--db", default=default, metavar="PATH_OR_URL",
                   help=f"results database: a SQLite file (default {default_db()}) or a shared "
                   f"PostgreSQL server, postgresql://USER@HOST:PORT/DBNAME (or ${DB_ENV})")


def _against_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--against", default=None, metavar="RUN_OR_TAG",
                   help="also state each ABI's change against this baseline (a run id, an "
                   "exported file, or a tag given with `run --label`: its newest run), with CIs")
    p.add_argument("--fail-on-slowdown", type=_limit, default=None, metavar="PCT",
                   help=f"with --against: exit {EXIT_SLOWDOWN} when an ABI is significantly "
                   "slower than the baseline by more than PCT (e.g. 5%%)")


def _plan_options(r: argparse.ArgumentParser) -> None:
    """What a run measures and how: the options `run` and `fleet run` share."""
    from ..obtain.build import DEFAULT_CFLAGS

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
    r.add_argument("--allow-host-libs", action="store_true",
                   help="compare a program that loads libraries from the host (outside its "
                   "build or sysroot) anyway; without it such a target gets no verdict")
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
    from ..analyse.advise import Deployment, parse_mix, parse_size

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


def _asked_abis(args: argparse.Namespace) -> list[Abi]:
    from ..abi import family_abis, parse_abi_list

    if args.family is not None:
        if args.abi is not None:
            raise UsageError("--abi and --family both choose the ABIs: give one of them")
        return family_abis(args.family)
    return parse_abi_list(",".join(args.abi) if args.abi else _default_abis())


def _default_abis() -> str:
    from ..abi import ABIS, HOST_FAMILY

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


def _check_outputs(*outputs: tuple[str, Path | None]) -> None:
    """Report files can be written, and over no input of the run (outputs.py): checked once the
    workloads are loaded and before anything is measured."""
    from ..outputs import check_output

    for option, path in outputs:
        if path is not None:
            check_output(path, option)
