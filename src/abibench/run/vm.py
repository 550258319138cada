"""Programs run inside a booted guest: Debian's kernel under full-system emulation (abibench vm).

Where this host's kernel cannot run an ABI (x32 without CONFIG_X86_X32_ABI) a whole system of
the same machine can: QEMU (TCG, never KVM: under a nested hypervisor a stock kernel hangs)
boots Debian's own kernel with every ABI's boot parameter, and abibench's init
(native/vminit.c) runs each target's static build in turn and reports its exit status, output
and the guest kernel's own wait4 peak resident set on a serial port of its own.

What is measured: whether the ABIs compute the same result, and each one's peak memory as a
real kernel of that machine counts it. What is not: speed. Every time under TCG is QEMU's
translation of the guest's instructions, shown as emulation time and never compared.

qemu is started by PID in a session of its own, and killed by that PID on every path out of
`boot` (its deadline, Ctrl-C, a guest that never reports); its files live in an owned
directory removed on every exit (workspace.owned_dir).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..abi import ABIS, Abi, vm_kernel_abi
from ..errors import HostError, UsageError
from ..obtain import qemuplugin, vmimage
from ..obtain.inputs import generate_input
from ..records import Artifact
from ..stats import median, median_ci
from ..text import one_line
from ..workloads.profile import Workload, substitute
from ..workspace import clean_stale, marked_env, owned_dir
from . import qemuargs
from .samples import ParseError, parse_metrics, validation_value

MEMORY_MB = 512
# Everything but the ABIs' own parameters: the console on the first port, no messages, and a
# panic (init gone) ends the machine at once instead of waiting for a reboot.
BASE_CMDLINE = ("console=ttyS0", "quiet", "panic=-1")
# A TCG boot of a stock kernel takes 5-30 s here; a program runs tens of times slower than on
# the host: what a boot may take before it is abandoned.
BOOT_ALLOWANCE_S = 120.0
SLOWDOWN = 30.0
GUEST_WORK = "/work"


@dataclass(frozen=True)
class GuestResult:
    """One program's run in the guest, as the guest's init reported it."""

    label: str
    kind: str  # exit, signal, timeout or spawn
    code: int
    wall_s: float  # emulation time: QEMU's, not the machine's
    max_rss_kb: int  # wait4's ru_maxrss in the guest kernel
    user_s: float
    sys_s: float
    minflt: int
    majflt: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.kind == "exit" and self.code == 0

    def failure(self) -> str:
        tail = one_line(self.stderr.decode("utf-8", "replace"))[-200:]
        what = {"exit": f"exited {self.code}", "signal": f"killed by signal {self.code}",
                "timeout": "ran past its timeout in the guest",
                "spawn": f"could not be started (errno {self.code})"}.get(self.kind, self.kind)
        return f"{what}{': ' + tail if tail else ''}"


@dataclass(frozen=True)
class Report:
    """The guest's report: its kernel, and every complete result line, in order."""

    release: str
    machine: str
    results: tuple[GuestResult, ...]
    complete: bool  # the END line came, and counted every result


class ReportError(ValueError):
    """The guest's report cannot be read at all (no BEGIN line)."""


_HEX = r"((?:[0-9a-f]{2})+|-)"
_BEGIN = re.compile(rf"ABIBENCH-VM 1 BEGIN {_HEX} {_HEX}")
_END = re.compile(r"ABIBENCH-VM 1 END (\d+)")
_RESULT = re.compile(r"R ([A-Za-z0-9_.-]{1,100}) (exit|signal|timeout|spawn) (-?\d+) (\d+) (\d+) "
                     rf"(\d+) (\d+) (\d+) (\d+) {_HEX} {_HEX}")


def _unhex(field_: str) -> bytes:
    return b"" if field_ == "-" else bytes.fromhex(field_)


def fnv1a(data: bytes) -> int:
    """The 32-bit FNV-1a hash native/vminit.c ends every frame with."""
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def verified_frames(data: bytes) -> list[str]:
    """The report's lines whose hash verifies, without it: a line cut by a deadline, or
    completed by anything the guest did not write as one frame, is no frame."""
    frames = []
    for line in data.split(b"\n")[:-1]:  # the last piece has no newline: never finished
        body, _, digest = line.rpartition(b" ")
        if len(digest) == 8 and re.fullmatch(rb"[0-9a-f]{8}", digest) \
                and fnv1a(body) == int(digest, 16):
            frames.append(body.decode("ascii", "replace"))
    return frames


def parse_report(data: bytes) -> Report:
    """Every verified frame of the guest's report, nothing guessed (`verified_frames`). Frames
    are hex and numbers, so no byte a program printed can end or forge one."""
    texts = verified_frames(data)
    begin = next((m for m in map(_BEGIN.fullmatch, texts) if m), None)
    if begin is None:
        raise ReportError("the guest reported nothing (no BEGIN frame)")
    results: list[GuestResult] = []
    end: int | None = None
    for t in texts:
        m = _RESULT.fullmatch(t)
        if m is not None:
            results.append(GuestResult(
                label=m[1], kind=m[2], code=int(m[3]), wall_s=int(m[4]) / 1e9,
                max_rss_kb=int(m[5]), user_s=int(m[6]) / 1e6, sys_s=int(m[7]) / 1e6,
                minflt=int(m[8]), majflt=int(m[9]), stdout=_unhex(m[10]),
                stderr=_unhex(m[11])))
            continue
        e = _END.fullmatch(t)
        if e is not None:
            end = int(e[1])
    return Report(release=_unhex(begin[1]).decode("utf-8", "replace"),
                  machine=_unhex(begin[2]).decode("utf-8", "replace"),
                  results=tuple(results), complete=end is not None and end == len(results))


# ------------------------------------------------------------------------------------------ boot


@dataclass(frozen=True)
class Boot:
    report: Report | None
    seconds: float  # from qemu's start to its exit: boot, programs and power-off, emulated
    ended: str  # "powered off", "deadline", or qemu's own exit status
    console_tail: str  # the kernel's last console lines, for a boot that reported nothing
    # With --counters: each job's user-space instructions, in the order the init ran them.
    counts: tuple[int, ...] = ()


def read_marks(path: Path) -> tuple[int, ...]:
    """The counts the plugin appended, one per job the init ran ("mark insns=N" lines); a line
    that is not whole ends the list (qemu killed while writing it)."""
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return ()
    out = []
    for line in text.split("\n")[:-1]:  # the last piece: "" or a line cut short
        key, _, value = line.partition("=")
        if key != "mark insns" or not value.isdigit():
            break
        out.append(int(value))
    return tuple(out)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """qemu killed by its PID (its session holds nothing else of ours) and reaped."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _wait(proc: subprocess.Popen[bytes], report: Path, t0: float, deadline_s: float,
          allowance_s: float = BOOT_ALLOWANCE_S) -> str:
    """How the boot ended: its power-off, qemu's own exit, or one of two deadlines: the boot's
    (no report begun within BOOT_ALLOWANCE_S: a kernel that hangs before init) and the whole
    run's (`deadline_s`: the guest's init times each program out itself, so this one is reached
    only by a guest that stops answering)."""
    while True:
        try:
            rc = proc.wait(timeout=0.5)
            return "powered off" if rc == 0 else f"qemu exited {rc}"
        except subprocess.TimeoutExpired:
            pass
        spent = time.monotonic() - t0
        if spent > deadline_s:
            return f"deadline of {deadline_s:.0f} s"
        if spent > allowance_s and not _begun(report):
            return f"no report after {allowance_s:.0f} s of booting"


def _begun(report: Path) -> bool:
    try:
        return report.stat().st_size > 0
    except OSError:
        return False


def run_guest(argv: list[str], work: Path, report: Path, deadline_s: float,
              allowance_s: float = BOOT_ALLOWANCE_S,
              on_start: Callable[[int], None] | None = None) -> tuple[str, float]:
    """Run qemu (`argv`, its files in the owned directory `work`) until its power-off or a
    deadline; how it ended and the seconds it took. qemu is killed by its PID on every way out,
    and its TMPDIR is `work` (a -snapshot overlay lives and dies there)."""
    t0 = time.monotonic()
    with (work / "qemu.log").open("wb") as log:
        # Marked with its directory: if abibench itself is SIGKILLed, the next abibench's
        # workspace.clean_stale kills this qemu, which its own session kept alive.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True,
                                env={**os.environ, **marked_env(work), "TMPDIR": str(work)})
    try:
        if on_start is not None:
            on_start(proc.pid)
        ended = _wait(proc, report, t0, deadline_s, allowance_s)
    finally:
        _stop(proc)
    return ended, time.monotonic() - t0


def boot(emulator: str, kernel: Path, initrd_bytes: bytes, cmdline: str, deadline_s: float,
         on_start: Callable[[int], None] | None = None,
         counter: qemuplugin.Plugin | None = None) -> Boot:
    """Boot once, wait for the power-off or the deadline, and read the report (and, with
    `counter`, each program's instructions)."""
    with owned_dir(".vm") as work:
        initrd, console, report = work / "initrd.gz", work / "console.log", work / "report"
        marks = work / "marks"
        initrd.write_bytes(initrd_bytes)
        plugin = f"{counter.argument(marks)},mode=system" if counter is not None else None
        # The PC's own board, console on the first serial port, the report on the second;
        # with `plugin`, abibench's instruction counter in its system mode.
        argv = qemuargs.qemu_argv(qemuargs.Machine(emulator), MEMORY_MB, console, report, kernel,
                                  initrd, cmdline, plugin=plugin)
        ended, seconds = run_guest(argv, work, report, deadline_s, on_start=on_start)
        data = report.read_bytes() if report.is_file() else b""
        try:
            parsed: Report | None = parse_report(data)
        except ReportError:
            parsed = None
        tail = ""
        if parsed is None:
            text = b""
            for f in (console, work / "qemu.log"):
                if f.is_file():
                    text += f.read_bytes()[-4000:]
            tail = " | ".join(one_line(ln) for ln in
                              text.decode("utf-8", "replace").splitlines()[-6:] if ln.strip())
        return Boot(parsed, seconds, ended, tail, read_marks(marks) if counter else ())


# ----------------------------------------------------------------------------------- the request


INPUTS_MAX_BYTES = 64 << 20  # a guest's files live in its RAM (MEMORY_MB), inputs included


@dataclass(frozen=True)
class Target:
    wl: Workload
    abi: Abi
    art: Artifact
    inputs: tuple[tuple[str, Path], ...] = ()  # the workload's generated [inputs], on the host

    def guest_input(self, name: str) -> str:
        return f"/inputs/{self.wl.id}/{name}"

    @property
    def label(self) -> str:
        return f"{self.wl.id}.{self.abi.name}"

    def guest_bin(self) -> str:
        return f"/bin/{self.abi.name}/{self.wl.id}"

    def argv(self) -> tuple[str, ...]:
        values = {"abi": self.abi.name, **self.wl.params, "bin": self.guest_bin(),
                  "work": GUEST_WORK, **{n: self.guest_input(n) for n, _ in self.inputs},
                  "program": f"{self.guest_bin()}/{self.art.files[0]}" if self.art.files else ""}
        return tuple(substitute(a, values) for a in self.wl.command)

    def programs(self) -> dict[str, Path]:
        """Every file the guest holds for this target, by its guest path: the programs and the
        files of its inputs."""
        out = {f"{self.guest_bin().lstrip('/')}/{f}": Path(self.art.bin_dir) / f
               for f in self.art.files}
        for name, host in self.inputs:
            out.update(input_files(self.guest_input(name).lstrip("/"), host))
        return out


def input_files(guest: str, host: Path) -> dict[str, Path]:
    """An input (a file, or a directory of regular files) as guest path -> host file; a usage
    error when it holds anything else or is larger than a guest's RAM can spare."""
    if host.is_file() and not host.is_symlink():
        files = {guest: host}
    elif host.is_dir() and not host.is_symlink():
        files = {}
        for path in sorted(host.rglob("*")):
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                raise UsageError(f"input {host} holds {path.name}, which is not a regular file: "
                                 "a guest takes files and directories only")
            if path.is_file():
                files[f"{guest}/{path.relative_to(host).as_posix()}"] = path
    else:
        raise UsageError(f"input {host} is neither a regular file nor a directory")
    size = sum(p.stat().st_size for p in files.values())
    if size > INPUTS_MAX_BYTES:
        raise UsageError(f"input {host} is {size >> 20} MiB, more than a booted guest holds "
                         f"({INPUTS_MAX_BYTES >> 20} MiB): give the workload a smaller input "
                         "with --set")
    return files


def unsupported(wl: Workload) -> str | None:
    """Why a workload cannot run in the guest (which holds only its static programs), or None."""
    checks = (
        (not wl.command or not wl.command[0].startswith("{bin}/"),
         "its [run] command does not start its built program"),
        (wl.server is not None or wl.browser is not None or wl.display is not None,
         "it needs a server, a browser or a display"),
        (bool(wl.setup or wl.after or wl.stdin), "it has [run] setup, after or stdin"),
        (bool(wl.validate_files or wl.close), "it validates output files"),
        (bool(wl.debian_packages or wl.binaries), "it is not built from source by abibench"),
        (wl.source.data != (), "its build has data files"),
    )
    return next((why for bad, why in checks if bad), None)


def vm_abis(abis: Sequence[Abi]) -> Abi:
    """The kernel ABI that runs all of `abis` in one guest; a usage error naming those it can't."""
    kernels = {a.name: vm_kernel_abi(a) for a in abis}
    without = [n for n, k in kernels.items() if k is None]
    if without:
        booted = sorted({a.vm_kernel for a in ABIS.values() if a.vm_kernel})
        raise UsageError(f"no booted system runs {', '.join(without)}: abibench vm boots "
                         f"{', '.join(booted) or 'no'} kernels; drop them from --abi")
    found = {k.name: k for k in kernels.values() if k is not None}
    if len(found) != 1:
        raise UsageError(f"--abi {','.join(kernels)} needs {len(found)} different guests: give "
                         "ABIs of one machine")
    return next(iter(found.values()))


def emulator_of(kernel_abi: Abi) -> str:
    exe = shutil.which(kernel_abi.vm_emulator)
    if exe is None:
        raise HostError(f"{kernel_abi.vm_emulator} not found: apt-get install "
                        f"{kernel_abi.vm_emulator_package} (or bash setup.sh)")
    return exe


def cmdline(abis: Sequence[Abi]) -> str:
    params = dict.fromkeys(a.kernel_param for a in abis if a.kernel_param)
    return " ".join((*BASE_CMDLINE, *params))


def plan_jobs(targets: Sequence[Target], rounds: int, boot_index: int) -> list[vmimage.Job]:
    """Every target once per round, the order rotated each round and boot (no target always
    first after the boot, when the guest's page cache and allocator are coldest)."""
    jobs = []
    n = len(targets)
    for r in range(rounds):
        shift = (r + boot_index) % n
        for t in (*targets[shift:], *targets[:shift]):
            jobs.append(vmimage.Job(f"{t.label}.{r}", t.argv(),
                                    t.wl.timeout * SLOWDOWN))
    return jobs


# -------------------------------------------------------------------------------------- results


@dataclass
class TargetResult:
    label: str
    workload: str
    abi: str
    checks: list[str | None] = field(default_factory=list)  # one per ok run
    max_rss_kb: list[float] = field(default_factory=list)
    emulation_s: list[float] = field(default_factory=list)
    metrics: list[dict[str, float]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    instructions: list[int] = field(default_factory=list)  # user-space, one per counted ok run

    def count(self) -> tuple[int, bool] | None:
        """The median count and whether every run counted the same (exact), or None."""
        if not self.instructions:
            return None
        return int(median([float(n) for n in self.instructions])), \
            len(set(self.instructions)) == 1

    def rss(self) -> tuple[float, float, float]:
        """Median peak RSS and its distribution-free CI (nan bounds below two runs)."""
        if not self.max_rss_kb:
            return math.nan, math.nan, math.nan
        lo, hi = median_ci(self.max_rss_kb)
        return median(self.max_rss_kb), lo, hi


def collect(targets: Sequence[Target], boots: Sequence[Boot]) -> list[TargetResult]:
    """The guests' results per target: validated as a run's samples are (the profile's
    [validate] pattern and metrics), peak memory from the guest's wait4, and the instructions
    the counter saw between the init's marks (the i-th count is the i-th job's)."""
    by_label = {t.label: TargetResult(t.label, t.wl.id, t.abi.name) for t in targets}
    wl_of = {t.label: t.wl for t in targets}
    for b in boots:
        if b.report is None:
            continue
        for i, res in enumerate(b.report.results):
            label = res.label.rsplit(".", 1)[0]
            tr = by_label.get(label)
            if tr is None:
                continue
            if not res.ok:
                tr.failures.append(res.failure())
                continue
            out = res.stdout.decode("utf-8", "replace")
            try:
                tr.metrics.append(parse_metrics(wl_of[label].metrics, out))
                tr.checks.append(validation_value(wl_of[label], out))
            except ParseError as exc:
                tr.failures.append(str(exc))
                continue
            tr.max_rss_kb.append(float(res.max_rss_kb))
            tr.emulation_s.append(res.wall_s)
            if i < len(b.counts):
                tr.instructions.append(b.counts[i])
    return list(by_label.values())


def agreement(results: Sequence[TargetResult]) -> dict[str, str | None]:
    """Per workload: None when every run of every ABI printed the same validated value, else
    why not (values differ, or no run could be checked)."""
    verdicts: dict[str, str | None] = {}
    for wl in dict.fromkeys(r.workload for r in results):
        mine = [r for r in results if r.workload == wl]
        values = {c for r in mine for c in r.checks}
        if any(not r.checks for r in mine):
            verdicts[wl] = "not every ABI has a successful run to compare"
        elif len(values) > 1:
            shown = "; ".join(f"{r.abi}: {', '.join(sorted({str(c) for c in r.checks}))}"
                              for r in mine)
            verdicts[wl] = f"outputs differ: {one_line(shown)[:300]}"
        else:
            verdicts[wl] = None
    return verdicts


# ------------------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class VmRun:
    kernel: vmimage.Kernel
    emulator: str
    cmdline: str
    targets: tuple[Target, ...]
    boots: tuple[Boot, ...]
    results: tuple[TargetResult, ...]
    agreement: dict[str, str | None]

    def problems(self) -> list[str]:
        """Everything that makes this run's answer incomplete, one line each."""
        out = [f"boot {i + 1} ({b.ended} after {b.seconds:.1f} s) reported "
               f"{'nothing: ' + b.console_tail if b.report is None else 'only part of its runs'}"
               for i, b in enumerate(self.boots)
               if b.report is None or not b.report.complete]
        out += [f"{r.label}: {f}" for r in self.results for f in dict.fromkeys(r.failures)]
        out += [f"{wl}: {why}" for wl, why in self.agreement.items() if why is not None]
        return out


def static_flags(cflags: Sequence[str]) -> tuple[str, ...]:
    """A guest holds no C library: its programs are linked statically (a build of its own,
    cached beside the dynamic one under another key)."""
    return (*cflags, "-static") if "-static" not in cflags else tuple(cflags)


def targets_of(workloads: Sequence[Workload], abis: Sequence[Abi], cflags: Sequence[str],
               cache_root: Path, build: Callable[[Workload, Abi, str, tuple[str, ...], Path],
                                                 Artifact],
               compiler: Callable[[Abi], str | None]) -> list[Target]:
    flags = static_flags(cflags)
    targets = []
    for wl in workloads:
        for abi in abis:
            cc = compiler(abi)
            if cc is None:
                raise HostError(f"no compiler for {abi.name}: apt-get install "
                                f"{' '.join(abi.multilib_packages or abi.cross_packages)}")
            inputs = tuple((name, generate_input(name, spec, cache_root))
                           for name, spec in wl.inputs.items())
            targets.append(Target(wl, abi, build(wl, abi, cc, flags, cache_root), inputs))
    return targets


def measure(workloads: Sequence[Workload], abis: Sequence[Abi], *, boots: int, rounds: int,
            cflags: Sequence[str], cache_root: Path,
            build: Callable[[Workload, Abi, str, tuple[str, ...], Path], Artifact],
            compiler: Callable[[Abi], str | None],
            say: Callable[[str], None] = lambda _: None, counters: bool = False) -> VmRun:
    """Build every (workload, ABI) statically, boot the guest `boots` times, each boot running
    every target `rounds` times, and compare what they printed and how much memory they took."""
    clean_stale(cache_root)  # first: a killed earlier run's guest, and its files
    if boots < 1 or rounds < 1:
        raise UsageError("--boots and --rounds take a positive number")
    for wl in workloads:
        why = unsupported(wl)
        if why is not None:
            raise UsageError(f"{wl.id} cannot run in a booted guest: {why}; choose a workload "
                             "that only runs its own built program")
    kernel_abi = vm_abis(abis)
    emulator = emulator_of(kernel_abi)
    targets = targets_of(workloads, abis, cflags, cache_root, build, compiler)
    kernel = vmimage.kernel(kernel_abi, cache_root)
    init = vmimage.init_program(cache_root)
    line = cmdline(abis)
    programs = {k: v for t in targets for k, v in t.programs().items()}
    counter = None
    if counters:
        try:
            counter = qemuplugin.build(cache_root, qemuplugin.qemu_source_version(
                kernel_abi.vm_emulator_package))
        except qemuplugin.PluginError as exc:
            raise HostError(f"--counters: {exc}") from None
    done: list[Boot] = []
    for b in range(boots):
        jobs = plan_jobs(targets, rounds, b)
        image = vmimage.initramfs(init, programs, vmimage.jobs_text(jobs))
        deadline = BOOT_ALLOWANCE_S + sum(j.timeout for j in jobs)
        say(f"boot {b + 1}/{boots}: {kernel.label()} under {kernel_abi.vm_emulator} (TCG), "
            f"{len(jobs)} program runs")
        done.append(boot(emulator, kernel.path, image, line, deadline, counter=counter))
        say(f"boot {b + 1}/{boots}: {done[-1].ended} after {done[-1].seconds:.1f} s")
    results = collect(targets, done)
    return VmRun(kernel, kernel_abi.vm_emulator, line, tuple(targets), tuple(done),
                 tuple(results), agreement(results))


def to_json(run: VmRun) -> dict[str, object]:
    """The run as a document (`abibench vm run --json`): every figure the terminal shows."""
    def target(r: TargetResult) -> dict[str, object]:
        mid, lo, hi = r.rss()
        return {"workload": r.workload, "abi": r.abi, "runs_ok": len(r.max_rss_kb),
                "max_rss_kb": r.max_rss_kb, "max_rss_kb_median": _num(mid),
                "max_rss_kb_ci": [_num(lo), _num(hi)], "checks": sorted({str(c) for c in r.checks}),
                "emulation_s": r.emulation_s, "failures": r.failures,
                "instructions": r.instructions}
    return {"kind": "vm", "placement": "vm: emulated", "kernel": run.kernel.label(),
            "emulator": run.emulator, "accel": "tcg", "memory_mb": MEMORY_MB,
            "cmdline": run.cmdline,
            "guest": [{"release": b.report.release, "machine": b.report.machine}
                      if b.report else None for b in run.boots],
            "boots": [{"seconds": round(b.seconds, 3), "ended": b.ended} for b in run.boots],
            "targets": [target(r) for r in run.results],
            "outputs_agree": {wl: why is None for wl, why in run.agreement.items()},
            "problems": run.problems()}


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None
