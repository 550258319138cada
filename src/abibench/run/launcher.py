"""Execute one sample: spawn without a shell, enforce the timeout, measure the process alone.

Timing, rusage and peak RSS come from a small C launcher (native/launch.c) rather than from
Python's os.wait4: Linux carries a parent's resident high-water mark into the child at exec, so a
Python parent would inflate the peak memory of every small program it measures.

Nothing of a sample outlives it: the launcher kills whatever the program left behind (and counts
it: RawResult.escaped), and dies with abibench, even when abibench is killed with SIGKILL; the
sample's temporary directory is owned by this process (workspace.py), so a later run removes it
if this one could not.

A sample of a whole process tree (`[run] memory = "tree"`) also reports the tree's peak memory:
the launcher joins the sample's own memory cgroup before the program starts and reads the group's
high-water mark, or, without a cgroup, a thread here samples the tree's PSS (run/treemem.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from ..errors import HostError, UsageError
from ..files import open_regular
from ..probe.memory import TreeAccounting
from ..tools import native_tool
from ..workspace import owned_dir
from .treemem import GroupError, PssSampler, SampleGroup

STDOUT_PARSE_LIMIT = 16 * 1024 * 1024  # metrics are parsed from at most this much output
# The PID the launcher must find as its parent; it removes the variable before the program runs.
PARENT_ENV = "ABIBENCH_LAUNCH_PARENT"
GUARD_GRACE_S = 10.0  # a launcher that ignores SIGTERM this long is killed
GUARD_MARGIN_S = 60.0  # the guard acts this long after the sample's own timeout
STOP_READY_S = 5.0  # how long a stop waits for a just-started launcher to block SIGUSR1
# A sample alone also starts its program through the gate (run_together); False only to
# measure what that changes (bench/harness.py P1).
GATE_ALONE = True
# A sample alone starts its program on the launcher's CPU (launch.c's -s, hold_cpu), free from
# its exec on: the kernel otherwise put it on the other, halted vCPU of this VM. False only to
# measure what that changes (bench/harness_floor.py).
START_HERE = True


@dataclass(frozen=True)
class RawResult:
    status: str  # exited | signaled | timeout | interrupted | stopped | execfail
    exit_code: int
    signal: int
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_kb: int
    minflt: int
    majflt: int
    errno: int
    stdout_digest: str
    stdout: str  # decoded (first STDOUT_PARSE_LIMIT bytes), for metric parsing
    stderr_tail: str
    escaped: int = 0  # processes the program left alive when it ended, killed by the launcher
    subreaper: bool = True  # False: refused (qemu-user); what left the process group is not caught
    repeat: int = 1  # back-to-back runs; the times above are their mean
    t0_ns: int = 0  # CLOCK_MONOTONIC at the first spawn and the last reap
    t1_ns: int = 0
    busy_s: float = 0.0  # CPU time of the whole machine over the sample (all processes)
    steal_s: float = 0.0  # CPU time the hypervisor took from this VM over the sample
    covariate: float | None = None  # the machine loop's speed during the sample (iterations/s)
    covariate_cpu_s: float = 0.0  # the loop's own CPU time, part of busy_s
    # [run] memory = "tree": the whole process tree's peak (KiB) and how it was measured
    # (probe/memory.py: cgroup-v2, cgroup-v1 or sampled)
    tree_peak_kb: int | None = None
    tree_memory: str | None = None
    # Why the sample failed although the program may have exited 0 (a browser whose page
    # failed: run/browser.py); None when nothing beyond the exit status is wrong.
    failure: str | None = None
    # How often the program was stopped (SIGSTOP, SIGTSTP) while it ran: its wall time holds
    # the time it stood still, so the sample is stored but is no measurement (run/samples.py).
    stops: int = 0

    def foreign_cpu_s(self, ours_s: float = 0.0) -> float:
        """CPU time that processes other than this sample (and `ours_s` more of abibench's
        own) used while it ran; /proc/stat counts in ticks, so this is good to about 10 ms."""
        own = (self.user_s + self.sys_s) * self.repeat + self.covariate_cpu_s + ours_s
        return max(0.0, self.busy_s - own)

    @property
    def ok(self) -> bool:
        return self.status == "exited" and self.exit_code == 0 and self.failure is None

    def describe_failure(self) -> str:
        if self.status == "timeout":
            return "timed out"
        if self.failure is not None:
            return self.failure
        if self.status == "interrupted":
            return "interrupted"
        if self.status == "stopped":
            return "stopped by abibench"
        if self.status == "execfail":
            return f"could not execute ({os.strerror(self.errno)})"
        if self.status == "signaled":
            name = signal.Signals(self.signal).name if self.signal in signal.valid_signals() \
                else str(self.signal)
            return f"killed by {name}"
        tail = self.stderr_tail.strip().splitlines()
        return f"exit code {self.exit_code}" + (f": {tail[-1]}" if tail else "")


@cache
def launcher(cache_root: Path) -> Path:
    """The launcher binary, compiled once per source version with the host compiler."""
    return native_tool("launch", cache_root)


def parse_result_line(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def _digest_file(path: Path) -> tuple[str, str]:
    h = hashlib.sha256()
    head = bytearray()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            if len(head) < STDOUT_PARSE_LIMIT:
                head += chunk[: STDOUT_PARSE_LIMIT - len(head)]
    return h.hexdigest(), head.decode("utf-8", errors="replace")


def _tail(path: Path, limit: int = 4000) -> str:
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - limit))
        return fh.read().decode("utf-8", errors="replace")


def resolve_program(program: str) -> str:
    if "/" in program:
        return program
    found = shutil.which(program)
    if found is None:
        raise UsageError(f"program '{program}' not found on PATH: install it or give its path")
    return found


def _guard(proc: subprocess.Popen[bytes]) -> None:
    """A launcher gone wrong: SIGTERM first (it kills its sample and everything it started)."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(GUARD_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()


@dataclass(frozen=True)
class How:
    """How a sample is launched, beyond its command (run/designs.py chooses)."""

    cpu: int | None = None  # pin the program to this CPU
    repeat: int = 1  # back-to-back runs in one sample; its times are their mean
    covariate: tuple[int, int] | None = None  # (CPU, iterations per chunk) of the machine loop

    def options(self) -> list[str]:
        out = []
        if self.cpu is not None:
            out += ["-c", str(self.cpu)]
        if self.repeat != 1:
            out += ["-r", str(self.repeat)]
        if self.covariate is not None:
            out += ["-v", f"{self.covariate[0]}:{self.covariate[1]}"]
        return out


class Stopper:
    """Ends a running sample from another thread (a browser's driver whose page failed): the
    launcher kills the program's tree and reports the sample as stopped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._asked = False

    def attach(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._proc = proc
            if self._asked:
                self._signal()

    def stop(self) -> None:
        with self._lock:
            self._asked = True
            if self._proc is not None:
                self._signal()

    def _signal(self) -> None:
        # The launcher is our child and unreaped until we wait for it: its PID is still ours.
        # Until it has blocked SIGUSR1 (its first steps), the signal would kill it outright.
        proc = self._proc
        end = time.monotonic() + STOP_READY_S
        while proc is not None and proc.poll() is None:
            if _blocks(proc.pid, signal.SIGUSR1) or time.monotonic() > end:
                proc.send_signal(signal.SIGUSR1)
                return
            time.sleep(0.001)


def _blocks(pid: int, sig: int) -> bool:
    """Whether a process has blocked a signal (SigBlk of /proc/PID/status)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigBlk:"):
                return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    except (OSError, ValueError, IndexError):
        return False
    return False


@dataclass(frozen=True)
class Job:
    """One program to run as a sample."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    timeout_s: float
    stdin: Path | None = None
    how: How = How()
    tree: TreeAccounting | None = None  # measure the whole process tree's memory this way
    stopper: Stopper | None = None
    merge_stderr: bool = False  # the program's stderr into its stdout (one file, in order)


class _Launched:
    """One launcher process and its files, from start to result."""

    def __init__(self, job: Job, launch: Path, stack: contextlib.ExitStack,
                 gate: int | None = None, alone: bool = False) -> None:
        # Owned by this process (workspace.py): a later run removes it if this one is killed.
        tmp = stack.enter_context(owned_dir("sample"))
        self.result = tmp / "result"
        self.out_path, self.err_path = tmp / "stdout", tmp / "stderr"
        gate_opt = ["-g", str(gate)] if gate is not None else []
        # Two programs at once are placed by the kernel: held, both could start on one CPU.
        if alone and START_HERE and job.how.cpu is None:
            gate_opt.append("-s")
        # The group outlives the launcher in the stack: it is emptied and removed after the
        # launcher has ended, however it ended.
        self.tree_memory: str | None = None
        self.sampler: PssSampler | None = None
        group_opt: list[str] = []
        if job.tree is not None:
            self.tree_memory = "sampled"
            if job.tree.kind != "sampled":
                try:
                    group = stack.enter_context(SampleGroup(job.tree))
                    group_opt = ["-m", str(group.path)]
                    self.tree_memory = job.tree.kind
                except GroupError:
                    pass  # the hierarchy changed since the probe: sample the tree instead
        # The timeout covers every repeat of the sample.
        cmd = [str(launch), *job.how.options(), *gate_opt, *group_opt, str(self.result),
               str(int(job.timeout_s * job.how.repeat * 1000)),
               resolve_program(job.argv[0]), *job.argv[1:]]
        # The launcher enforces the timeout; this guard only catches a launcher gone wrong. It is
        # started before the launcher, so that once the launcher runs, nothing of this process's
        # own set-up (a thread's start) is left to run beside the sample. Its cancel is
        # registered first, and it is a daemon: a SIGTERM that lands while the thread starts
        # (right after a sample was stored, when a polite kill tends to come) would otherwise
        # leave it waiting out the timeout, and abibench with it.
        self.guard = threading.Timer(job.timeout_s * job.how.repeat + GUARD_MARGIN_S,
                                     self._guard)
        self.guard.daemon = True
        stack.callback(self.guard.cancel)
        self.guard.start()
        try:
            # Only a regular file, opened without waiting (a FIFO) or following a link planted
            # since the path was checked: files.open_regular, again right before the sample.
            stdin_fd = open_regular(job.stdin, None, follow=False) if job.stdin else None
        except OSError as exc:
            raise UsageError(f"cannot open standard input {job.stdin}: {exc.strerror}; check "
                             "[run] stdin: it must name a regular file") from None
        with self.out_path.open("wb") as out, self.err_path.open("wb") as err:
            try:
                # The launcher checks it is still our child: if we died before it could ask
                # the kernel to tell it so (PR_SET_PDEATHSIG), it runs nothing.
                self.proc = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL if stdin_fd is None else stdin_fd, stdout=out,
                    stderr=subprocess.STDOUT if job.merge_stderr else err,
                    cwd=job.cwd, env={**job.env, PARENT_ENV: str(os.getpid())},
                    pass_fds=(gate,) if gate is not None else ())
            finally:
                if stdin_fd is not None:
                    os.close(stdin_fd)
        if self.tree_memory == "sampled":
            self.sampler = PssSampler(self.proc.pid).start()
            stack.callback(self.sampler.stop)
        if job.stopper is not None:
            job.stopper.attach(self.proc)
        stack.callback(self._stop)

    def _guard(self) -> None:
        proc: subprocess.Popen[bytes] | None = getattr(self, "proc", None)
        if proc is not None:
            _guard(proc)

    def _stop(self) -> None:
        """On every way out: a launcher still running is told to stop and waited for."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait()

    def wait(self) -> None:
        # A blocking wait, not wait(timeout=...): that polls with sleeps of up to 50 ms, which
        # delays every sample and wakes the parent during the measurement.
        try:
            self.proc.wait()
        except KeyboardInterrupt:
            # When Ctrl-C came from a terminal the launcher saw it too; otherwise tell it.
            self._stop()
            raise
        finally:
            self.guard.cancel()
            if self.sampler is not None:
                self.sampler.stop()

    def raw(self) -> RawResult:
        if self.proc.returncode != 0 or not self.result.is_file():
            raise HostError(f"the sample launcher failed (exit {self.proc.returncode}): "
                            f"{_tail(self.err_path).strip()[-300:]}")
        raw = raw_result(parse_result_line(self.result.read_text()),
                         *_digest_file(self.out_path), _tail(self.err_path))
        if self.tree_memory is None:
            return raw
        peak = raw.tree_peak_kb if self.sampler is None else (self.sampler.peak_kb or None)
        return replace(raw, tree_peak_kb=peak, tree_memory=self.tree_memory)


def raw_result(r: dict[str, str], digest: str, text: str, stderr_tail: str) -> RawResult:
    """The launcher's result line as a RawResult: times and page faults are per run (divided by
    the repeats)."""
    k = max(1, int(r.get("repeat", "1")))
    hz = int(r.get("hz", "100")) or 100
    cov_iters, cov_ns = int(r.get("cov_iters", "0")), int(r.get("cov_ns", "0"))
    tree = int(r.get("tree_peak_kb", "-1"))
    return RawResult(
        status=r["status"], exit_code=int(r["code"]), signal=int(r["signal"]),
        wall_s=int(r["wall_ns"]) / 1e9 / k, user_s=int(r["user_us"]) / 1e6 / k,
        sys_s=int(r["sys_us"]) / 1e6 / k, max_rss_kb=int(r["maxrss_kb"]),
        # page faults per run as well, so that samples of different repeats compare
        minflt=round(int(r["minflt"]) / k), majflt=round(int(r["majflt"]) / k),
        errno=int(r["errno"]),
        stdout_digest=digest, stdout=text, stderr_tail=stderr_tail,
        escaped=int(r.get("escaped", "0")), repeat=k,
        t0_ns=int(r.get("t0_ns", "0")), t1_ns=int(r.get("t1_ns", "0")),
        busy_s=int(r.get("busy_ticks", "0")) / hz, steal_s=int(r.get("steal_ticks", "0")) / hz,
        covariate=cov_iters / (cov_ns / 1e9) if cov_iters > 0 and cov_ns > 0 else None,
        covariate_cpu_s=cov_ns / 1e9 if cov_iters > 0 else 0.0,
        tree_peak_kb=tree if tree >= 0 else None,
        subreaper=r.get("subreaper", "1") != "0",
        stops=int(r.get("stops", "0")),
    )


def run_sample(argv: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float,
               launch: Path, stdin: Path | None = None, how: How = How(),
               tree: TreeAccounting | None = None, stopper: Stopper | None = None,
               merge_stderr: bool = False) -> RawResult:
    """Run argv once. KeyboardInterrupt propagates after the child's process group is dead."""
    return run_together([Job(argv, cwd, env, timeout_s, stdin, how, tree, stopper,
                             merge_stderr)], launch)[0]


def run_together(jobs: list[Job], launch: Path) -> list[RawResult]:
    """Run several samples at the same moment (one alone: a plain sample).

    Every launcher is started, then waits on a shared pipe; closing its write end starts every
    program at once, so the start of each does not depend on how long Python took to spawn the
    next launcher. A sample alone waits on the pipe too (GATE_ALONE): its program starts only
    once this process has done its own set-up (the guard thread started), which otherwise ran
    on the other CPU of a small machine during the program's first fraction of a millisecond
    (issue 30: the harness floor).
    """
    with contextlib.ExitStack() as stack:
        gate_r, gate_w = os.pipe() if len(jobs) > 1 or GATE_ALONE else (None, None)
        launched = []
        try:
            for job in jobs:
                launched.append(_Launched(job, launch, stack, gate_r, alone=len(jobs) == 1))
        finally:
            for fd in (gate_r, gate_w):
                if fd is not None:
                    os.close(fd)  # every launcher sees end-of-file: go (on an error: end)
        for one in launched:
            one.wait()
        return [one.raw() for one in launched]
