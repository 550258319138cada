"""The shared part of bench/harness.py: sizes, the disturbance meter, the spin program and
its calibration, and small helpers used by every part (P1, P2, P3)."""

from __future__ import annotations

import math
import os
import resource
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from abibench import stats
from abibench.run.launcher import RawResult, run_sample

REPO = Path(__file__).resolve().parent.parent
SPIN_C = REPO / "tests" / "fixtures" / "spin.c"
SPIN_TOML = REPO / "tests" / "fixtures" / "spin.toml"
GCC = "/usr/bin/gcc"
CFLAGS = ("-O2",)
P3_WORKLOADS = ("ptrtree", "nbody", "stream")
P3_ABIS = ("i386", "x86_64")

# Wide enough for the tables when the output goes to a file or a pipe (rich would use 80 columns).
console = Console(highlight=False, width=None if sys.stdout.isatty() else 170)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Sizes:
    p1_batches: int  # batch pairs per command (abibench k samples, hyperfine k samples)
    p1_k: int  # samples per batch
    p1_spin_s: float  # target duration of the CPU-burner command
    p2_spin_s: float
    p2_rounds: int  # counted rounds (interleaved) = samples per target (sequential); even
    p2_reps: int
    p2_hogs: int  # busy-loop processes started halfway
    p3_params: dict[str, dict[str, str]]  # workload -> parameter overrides ({} = defaults)
    p3_min_rounds: int
    p3_max_rounds: int
    p3_max_time_s: float  # abibench's time budget per workload
    p3_pts_runs: int = 3
    p3_pts_max_factor: int = 4
    p3_pts_threshold: float = 0.035
    p4_batches: int = 6  # P4: interleaved batch pairs (abibench run, hyperfine)
    p4_rounds: int = 40  # P4: rounds of each `abibench run` = hyperfine's --runs


QUICK = Sizes(p1_batches=3, p1_k=10, p1_spin_s=0.05, p2_spin_s=0.04, p2_rounds=12, p2_reps=1,
              p2_hogs=2,
              p3_params={"ptrtree": {"nodes": "100000"}, "nbody": {"steps": "1000000"},
                         "stream": {"elements": "2000000", "times": "10"}},
              p3_min_rounds=5, p3_max_rounds=30, p3_max_time_s=10.0, p4_batches=2)
FULL = Sizes(p1_batches=10, p1_k=30, p1_spin_s=0.05, p2_spin_s=0.15, p2_rounds=30, p2_reps=3,
             p2_hogs=2, p3_params={}, p3_min_rounds=5, p3_max_rounds=100, p3_max_time_s=300.0)


# --------------------------------------------------------------------------- disturbance meter


def _proc_stat() -> tuple[float, float]:
    """(busy, steal) CPU seconds of the whole machine since boot, from /proc/stat."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    v = [int(x) for x in fields]
    hz = os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq = v[:7]
    steal = v[7] if len(v) > 7 else 0
    return (user + nice + system + irq + softirq) / hz, steal / hz


def _own_cpu() -> float:
    """CPU seconds of this process plus every descendant it (or they) waited for."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    return total


@dataclass
class CpuMeter:
    """CPU time used on the machine by anything other than this harness (and its children)."""

    t0: float = field(default_factory=time.monotonic)
    busy0: float = 0.0
    steal0: float = 0.0
    own0: float = 0.0
    load0: float = 0.0

    def __post_init__(self) -> None:
        self.busy0, self.steal0 = _proc_stat()
        self.own0 = _own_cpu()
        self.load0 = os.getloadavg()[0]

    def read(self) -> dict[str, float]:
        busy, steal = _proc_stat()
        elapsed = time.monotonic() - self.t0
        foreign = max(0.0, (busy - self.busy0) - (_own_cpu() - self.own0))
        return {
            "elapsed_s": elapsed,
            "foreign_cpu_s": foreign,
            "foreign_cores": foreign / elapsed if elapsed > 0 else 0.0,
            "steal_s": steal - self.steal0,
            "load1_start": self.load0,
            "load1_end": os.getloadavg()[0],
        }


def disturbance_note(d: dict[str, float]) -> str:
    text = (f"other processes used {d['foreign_cpu_s']:.1f} CPU-s in {d['elapsed_s']:.0f} s "
            f"(avg {d['foreign_cores']:.2f} cores), steal {d['steal_s']:.1f} s, "
            f"load {d['load1_start']:.2f} -> {d['load1_end']:.2f}")
    if d["foreign_cores"] > 0.1:
        text += "  ** DISTURBED: another process competed for the CPU; treat these numbers with care"
    return text


# --------------------------------------------------------------------------- helpers


def clean(obj: Any) -> Any:
    """JSON-safe copy: nan/inf become null, tuples lists, paths strings."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def ratio_dict(r: stats.Ratio) -> dict[str, Any]:
    return {**asdict(r), "half_width": r.half_width()}


def fmt_ratio(r: stats.Ratio) -> str:
    return f"{r.ratio:.4f} [{r.ci_low:.4f}, {r.ci_high:.4f}]"


def fmt_pct(x: float) -> str:
    return f"{x * 100:.2f}%" if math.isfinite(x) else "n/a"


def fmt_ms(s: float) -> str:
    return f"{s * 1000:.3f} ms"


def median(xs: Sequence[float]) -> float:
    return float(stats.summarize(xs).median)


def round_ratio_ci(a: Sequence[float], b: Sequence[float], resamples: int = 4000,
                   seed: int = 0) -> tuple[float, float, float]:
    """median over rounds of a_r / b_r with a bootstrap (over rounds) percentile 95% CI.

    Not what abibench computes (it takes median(a) / median(b)); shown next to it in P2 because
    a per-round ratio cancels a drift that hits both targets of a round alike.
    """
    lr = np.log(np.asarray(a, dtype=np.float64) / np.asarray(b, dtype=np.float64))
    rng = np.random.default_rng(seed)
    reps = np.median(lr[rng.integers(0, lr.size, size=(resamples, lr.size))], axis=1)
    lo, hi = np.quantile(reps, [0.025, 0.975])
    return math.exp(float(np.median(lr))), math.exp(float(lo)), math.exp(float(hi))


def build_spin(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = out_dir / "spin"
    subprocess.run([GCC, "-O2", "-o", str(exe), str(SPIN_C)], check=True)
    return exe


def sample_once(argv: list[str], launch: Path, cwd: Path, env: dict[str, str] | None = None,
                timeout_s: float = 120.0) -> RawResult:
    raw = run_sample(argv, cwd=cwd, env=env if env is not None else dict(os.environ),
                     timeout_s=timeout_s, launch=launch)
    if not raw.ok:
        raise RuntimeError(f"{shlex.join(argv)}: {raw.describe_failure()}")
    return raw


def calibrate_spin(spin: Path, launch: Path, cwd: Path, target_s: float) -> dict[str, Any]:
    """The spin argument (millions of steps) that takes about target_s here, measured now."""
    probe_n = 20
    walls = [sample_once([str(spin), str(probe_n)], launch, cwd).wall_s for _ in range(5)]
    # The fastest probe: another process competing for the CPU only ever makes a run slower.
    per_million = min(walls) / probe_n
    n = max(1, round(target_s / per_million))
    check = [sample_once([str(spin), str(n)], launch, cwd).wall_s for _ in range(3)]
    return {"millions": n, "per_million_s": per_million, "probe_walls_s": walls,
            "check_walls_s": check, "check_median_s": median(check), "target_s": target_s}


@contextmanager
def cpu_hog(spin: Path, count: int, record: dict[str, Any]) -> Iterator[Callable[[], None]]:
    """Yields start(); whatever happens, every hog started is killed by PID on exit."""
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        if procs:
            return
        record["started_at"] = time.monotonic()
        for _ in range(count):
            # spin with a huge count is a pure busy loop that runs for hours.
            procs.append(subprocess.Popen([str(spin), "100000000"], stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
        record["pids"] = [p.pid for p in procs]

    try:
        yield start
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for p in procs:
            p.wait()
        if procs:
            record["stopped_at"] = time.monotonic()
