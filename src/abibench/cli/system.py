"""`abibench system run`: run/sysboot.py boots, stored as a run; analyse/system.py and
report/system.py show it (here, and from the store in `abibench report RUN`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_WORKLOAD, UsageError
from ..outputs import check_output, check_output_dir, write_output
from ..paths import cache_dir
from ..records import ResultSet, Run, RunConfig, RunDoc, RunWarning
from ..run.signals import signals_as_interrupt
from ..store.open import db_ref
from ..store.url import is_url, sqlite_file
from .argtypes import Commands
from .options import _db_option
from .printing import _say

if TYPE_CHECKING:
    from ..obtain.sysimage import SystemImage
    from ..obtain.syskernel import SystemKernel
    from ..run.sysboot import Combination
    from ..store.spool import SpooledSink
    from ..sysrecords import SystemConfig
    from ..workloads.system import SystemProfile

FORMATS = ("json", "html", "markdown")


def add_parser(sub: Commands) -> None:
    sysp = sub.add_parser("system")
    sys_run = sysp.add_subparsers(dest="system_command", required=True).add_parser(
        "run", help="build SYSTEM's disks, boot every combination --boots times, measure memory; "
        "each boot is stored as a run's the moment it ends")
    sys_run.add_argument("system", metavar="SYSTEM", help="minimal, server, or a .toml file")
    sys_run.add_argument("--boots", type=int, default=3, help="boots per combination")
    sys_run.add_argument("--combo", default=None, metavar="KERNEL:USERSPACE,...",
                         help="default: every combination of --family (x86: "
                         "686-pae:i386,amd64:i386,amd64:x86_64)")
    sys_run.add_argument("--family", default="x86", metavar="FAMILY",
                         help="x86 (default), arm (armmp-lpae:armhf,arm64:armhf,arm64:aarch64) "
                         "or all")
    sys_run.add_argument("--seed", type=int, default=0, help="of the boots' random order")
    sys_run.add_argument("--resume", default=None, metavar="RUN",
                         help="boot what an interrupted system run of SYSTEM has not (its "
                         "combinations, boots and seed are the run's own)")
    sys_run.add_argument("--keep-reports", type=Path, default=None, metavar="DIR",
                         help="also keep each boot's raw report (its hashed frames, with the "
                         "guest's /proc texts) in DIR, one file per boot")
    for fmt_ in FORMATS:
        sys_run.add_argument(f"--{fmt_}", type=Path, default=None, metavar="PATH",
                             help=f"also write the system section as {fmt_.upper()} here")
    _db_option(sys_run)


def _texts(result: object) -> dict[str, str]:
    from ..analyse.system import SystemAnalysis
    from ..report import system as shown

    assert isinstance(result, SystemAnalysis)
    return {"json": json.dumps(shown.to_json(result), indent=1) + "\n",
            "html": shown.to_html(result), "markdown": shown.to_markdown(result)}


def report_system(args: argparse.Namespace, sets: Sequence[ResultSet]) -> int | None:
    """`abibench report RUN` of a system run: its system section, in the formats asked (the
    report options a system run has no use for, CSV of samples, are refused). None: no
    system run among the sets, the ordinary report goes on."""
    from ..analyse.system import analyse_doc
    from ..report import system as shown

    systems = [s for s in sets if s.doc.run.config.system is not None]
    if not systems:
        return None
    if len(sets) > 1 or args.command != "report":
        raise UsageError(f"{systems[0].source} is a system run (abibench system run): report "
                         "it alone, `abibench report RUN`")
    if getattr(args, "csv", None) or getattr(args, "samples_csv", None):
        raise UsageError("a system run has no samples to write as CSV: use --json, --html or "
                         "--markdown")
    result = analyse_doc(systems[0].doc)
    assert result is not None
    texts = _texts(result)
    if args.json:
        sys.stdout.write(texts["json"])
    for k in ("html", "markdown"):
        path = getattr(args, k, None)
        if path is not None:
            write_output(path, texts[k], f"--{k}")
            _say(f"{k}: {path}", sys.stderr)
    if not (args.json or args.html or args.markdown):
        _say(f"run {systems[0].doc.id} ({systems[0].doc.run.status})")
        for line in shown.text_lines(result):
            _say(line)
    return EXIT_OK


@contextlib.contextmanager
def system_sink(ref: str) -> Iterator[SpooledSink]:
    """Where a system run's records go, as a suite run's do (store/spool.py): a SQLite file
    through a journal (the file lost mid-run loses no boot: exit 11 names the recovery file),
    a shared server through the local spool (the server lost mid-run loses no boot: `push`
    uploads it later, each boot once)."""
    from ..store.spool import SpoolingSink, journaled

    def notice(msg: str) -> None:
        _say(f"abibench: warning: {msg}", sys.stderr)

    if not is_url(ref):
        with journaled(sqlite_file(ref), notice) as journal:
            yield journal
        lost = journal.lost_error()
        if lost is not None:
            raise lost
        return
    sink = SpoolingSink(ref, notice)
    try:
        for pushed in sink.pushed:
            _say(f"pushed run {pushed.run_id} from the spool to {sink.label} "
                 f"({pushed.counted()})", sys.stderr)
        yield sink
    finally:
        sink.close()


def _resumed(store: SpooledSink, ref: str, profile_id: str) -> tuple[str, RunDoc, SystemConfig]:
    """The run to resume, and its recorded system configuration; refused when it is no system
    run, another system's, or running or complete (store.claim_run)."""
    run_id = store.resolve_run(ref)
    doc = store.load_run(run_id)
    config = doc.run.config.system
    if config is None or config.profile != profile_id:
        raise UsageError(f"run {run_id} is not a system run of {profile_id}: resume it with "
                         "the system it booted, or start a new run")
    store.claim_run(run_id)
    return run_id, doc, config


def resume_plan(store: SpooledSink, ref: str, profile_id: str) -> Plan:
    """What a resumed run boots: its own combinations, boots and seed, without the places of
    its order it has stored (run/sysboot.pending_boots boots the rest, each once)."""
    from ..run import sysboot

    run_id, doc, cfg = _resumed(store, ref, profile_id)
    return Plan(run_id, sysboot.parse_combinations(",".join(cfg.combinations)), cfg.boots,
                cfg.seed, frozenset(b.index for b in doc.system_boots), recorded=cfg)


def cmd_system(args: argparse.Namespace) -> int:
    from ..analyse.system import analyse_doc
    from ..report import system as shown
    from ..run import sysboot
    from ..run.request import new_run_id
    from ..workloads.system import load_system

    profile = load_system(args.system)
    if args.boots < 1:
        raise UsageError("--boots takes a positive number")
    combos = sysboot.parse_combinations(args.combo, args.family)
    ref = db_ref(args.db)  # first: the database is then protected from every output below
    outs = {k: getattr(args, k) for k in FORMATS if getattr(args, k)}
    for k, path in outs.items():
        check_output(path, f"--{k}")  # refused before an hour of booting, not after
    if args.keep_reports is not None:
        check_output_dir(args.keep_reports, "--keep-reports")
    with system_sink(ref) as store:
        if args.resume:
            plan = resume_plan(store, args.resume, profile.id)
        else:
            plan = Plan(new_run_id(), combos, args.boots, args.seed)
        status = _boot_and_store(store, plan, profile, args.keep_reports)
        result = analyse_doc(store.load_run(plan.run_id)) \
            if plan.run_id in store.run_ids() else None
    if result is None:  # interrupted before the first boot: nothing was stored
        return EXIT_INTERRUPTED
    _say(f"run {plan.run_id} ({status}): abibench report {plan.run_id} --html FILE")
    for line in shown.text_lines(result):
        _say(line)
    texts = _texts(result)
    for k, path in outs.items():
        write_output(path, texts[k], f"--{k}")
    if status == "interrupted":
        return EXIT_INTERRUPTED
    return EXIT_WORKLOAD if result.problems else EXIT_OK


@dataclass(frozen=True)
class Plan:
    run_id: str
    combos: tuple[Combination, ...]
    boots: int
    seed: int
    done: frozenset[int] = frozenset()  # places in the boot order already stored
    recorded: SystemConfig | None = None  # a resumed run's own configuration


def _boot_and_store(store: SpooledSink, plan: Plan, profile: SystemProfile,
                    keep_reports: Path | None = None) -> str:
    """Boot, storing the run's configuration before the first boot and each boot as it ends;
    the run ends complete, or interrupted (its boots kept) on Ctrl-C or a signal."""
    from ..probe import host
    from ..run import sysboot
    from ..run.sysrecord import boot_record, system_config, system_mismatch

    def ready(kernels: dict[str, SystemKernel], images: dict[str, SystemImage]) -> None:
        cfg = system_config(profile, plan.combos, plan.boots, plan.seed, kernels, images)
        if plan.recorded is not None:  # a resume: more boots of the very same systems only
            why = system_mismatch(plan.recorded, cfg)
            if why is not None:
                raise UsageError(f"run {plan.run_id} cannot be resumed here: {why} (its boots "
                                 "would be of another system); start a new run")
            return
        started = datetime.now(UTC).isoformat(timespec="seconds")
        store.create_run(Run(plan.run_id, started, None, "running", __version__,
                             RunConfig(system=cfg)), host.capture())
        store.add_warning(plan.run_id, RunWarning(
            "emulated: whole systems under QEMU TCG; their times are QEMU's, only their "
            "memory is the systems'"))

    status = "interrupted"
    try:
        with signals_as_interrupt():
            sysboot.measure(profile, plan.combos, plan.boots, cache_dir(), seed=plan.seed,
                            say=lambda line: _say(line, sys.stderr), on_ready=ready,
                            on_boot=lambda i, b: store.add_system_boot(plan.run_id,
                                                                        boot_record(i, b)),
                            done_before=plan.done, keep_reports=keep_reports)
        status = "complete"
    except KeyboardInterrupt:
        _say("abibench: interrupted: the boots done are stored", sys.stderr)
    finally:
        if plan.run_id in store.run_ids():
            store.finish_run(plan.run_id, datetime.now(UTC).isoformat(timespec="seconds"),
                             status)
    return status
