"""A target's counted run (valgrind natively, abibench's QEMU plugin under an emulator),
repeated until two counts agree, and the emulator's own peak memory (its baseline).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from ..records import Sample
from ..workloads.profile import Workload, substitute
from .counters import (
    CLOCK_READS_DIR,
    CLOCK_READS_ENV,
    MAX_ATTEMPTS,
    agreement,
    clear_clock_reads,
    clock_reads,
    count_events,
    count_guest_instructions,
    count_guest_shell,
    profile_of,
)
from .launcher import RawResult, run_sample
from .placement import COUNT_DIR_ENV, Placement
from .samples import sample_from

BASELINE_RUNS = 3  # runs of the empty program under an emulator, for its own peak memory


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def counting_env() -> dict[str, str]:
    """The environment of every counting run, whatever abibench was started with: the guest's
    environment is part of what its loader and C library execute (its length too: a HOME of
    the run's own directory made two counts differ), so a count repeats only with the same
    one. ABIBENCH_COUNTING tells abibench's own micro programs not to read /proc, whose
    numbers change from run to run (micro.h)."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C", "ABIBENCH_COUNTING": "1",
            CLOCK_READS_ENV: CLOCK_READS_DIR}


def count_target(wl: Workload, pl: Placement, run_id: str, label: str, number: int, pos: int,
                 base_env: dict[str, str], launch: Path,
                 simulation: str = "insn") -> tuple[Sample, RawResult, int] | None:
    """Runs under a counter, counting what the target's programs execute: valgrind natively,
    abibench's QEMU plugin under an emulator (instructions only). None inside a sysroot
    (valgrind would count chroot/bwrap, not the program) and for an emulated target without
    the plugin (the run says why once). The third value is the most clock readings one
    process of the last counted run made under the step clock (0 below clock_reads' floor).

    Counts repeat exactly for the same binary, inputs and environment (a fixed one, with the
    step clock preloaded), so the target is counted twice, and again (up to MAX_ATTEMPTS runs)
    until two runs agree; the stored profile is that of the last run, with every attempt's
    count, and says when none agreed.
    """
    if pl.in_sysroot:
        return None
    # [run] counters: a fixed amount of work for a program whose own command runs for a fixed
    # time (openssl speed), so that instruction counts compare the same work.
    command = wl.count_command or wl.command
    # Under an emulator the program's own view (the built program, run under the emulator
    # directly, or the emulator's scripts in {bin} for a shell command).
    # Whether it is the counted command that starts a built program, not the timed one: a
    # profile may time `{bin}/zstd -b` and count `sh -c "{bin}/zstd -d ..."` (unzstd), whose
    # shell must see the emulator's scripts, or the reverse.
    direct = command[0].startswith("{bin}/")
    argv = [substitute(a, pl.values(direct=direct) if pl.emulated else pl.host_values())
            for a in command]
    files, _ = pl.output_files()
    started = now_iso()
    attempts: list[int] = []
    raw = None
    parsed = None
    # No environment padding and a fixed environment: the count must repeat exactly.
    env = counting_env()
    clock = pl.runtime.stepclock
    emu, plugin = pl.runtime.emulator, pl.runtime.plugin
    if pl.emulated and (emu is None or plugin is None):
        return None
    counter = "the QEMU plugin" if pl.emulated else "valgrind"
    reads = 0
    while len(attempts) < MAX_ATTEMPTS:
        clear_clock_reads(pl.work)
        if pl.emulated and emu is not None and plugin is not None:
            if direct:
                raw, parsed = count_guest_instructions(emu, plugin, argv, pl.work, env,
                                                       pl.timeout(wl.timeout), launch,
                                                       pl.stdin_path(), clock)
            else:
                raw, parsed = count_guest_shell(argv, pl.work, env, pl.timeout(wl.timeout),
                                                launch, COUNT_DIR_ENV, pl.stdin_path())
        else:
            raw, parsed = count_events(argv, pl.work, env, wl.timeout, launch,
                                       pl.stdin_path(), pl.program_files(), simulation, clock,
                                       pl.runner.sysroot.path if pl.runner else None)
        reads = clock_reads(pl.work)
        if parsed is None or not raw.ok:
            break
        attempts.append(parsed.totals[parsed.events.index("Ir")] if "Ir" in parsed.events
                        else parsed.totals[0])
        if len(attempts) >= 2 and agreement(attempts) is not None:
            break
    assert raw is not None
    files, _ = pl.output_files()  # again, as after every sample
    sample = sample_from(raw, wl, run_id, label, number, pos, False, started, 0, files,
                         emulated=pl.emulated)
    if wl.count_command:
        # The program's own metrics and checks belong to its timed command, not to this one.
        sample = replace(sample, status="ok" if raw.ok else sample.status, metrics={},
                         check=None, error=None if raw.ok else sample.error)
    if parsed is None or not attempts:
        return replace(sample, kind="counters", instructions=None,
                       status="failed" if sample.status == "ok" else sample.status,
                       error=sample.error or f"{counter} wrote no instruction count"), raw, reads
    # The plugin counts instructions only, whatever --counters asked to simulate.
    profile = profile_of(parsed, attempts, "insn" if pl.emulated else simulation)
    return (replace(sample, kind="counters", instructions=attempts[-1], counters=profile), raw,
            reads)


def baseline_samples(wl: Workload, pl: Placement, run_id: str, label: str, number: int,
                     pos: int, launch: Path) -> list[Sample]:
    """The ABI's empty program under the target's emulator: the peak memory a program has
    there before doing anything (the emulator, the loader, the C library). Nothing for a
    target that is not emulated."""
    empty, emu = pl.runtime.empty, pl.runtime.emulator
    if not pl.emulated or empty is None or emu is None:
        return []
    out = []
    for _ in range(BASELINE_RUNS):
        started = now_iso()
        raw = run_sample(emu.wrap([str(empty)]), cwd=pl.work, env=counting_env(),
                         timeout_s=pl.timeout(10.0), launch=launch)
        out.append(Sample(run_id=run_id, workload=wl.id, target=label, round=number,
                          position=pos, warmup=False,
                          status="ok" if raw.ok else "failed", exit_code=raw.exit_code,
                          wall_s=raw.wall_s, user_s=raw.user_s, sys_s=raw.sys_s,
                          max_rss_kb=raw.max_rss_kb, stdout_digest=raw.stdout_digest,
                          check=None, error=None if raw.ok else raw.describe_failure(),
                          started_at=started, kind="baseline", emulated=True))
    return out
