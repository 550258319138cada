"""This machine's noise: how steadily each CPU runs a fixed loop, and for how long it stays at
one speed.

A shared VM's vCPU speeds up and slows down on a time scale of seconds, whatever is measured;
pinning does not cure it. How an ABI comparison should be sampled depends on that spectrum:

* ``cv``: the spread of the loop's speed between 10 ms slices;
* ``window_cv``: the spread between the means of longer windows (0.1 s, 1 s, 5 s): what one
  sample of that length suffers from the machine alone;
* ``correlation_time``: how long the speed stays where it is (the lag at which the
  autocorrelation of the speed falls below 1/e); two samples closer together than this share
  the machine's state, so their ratio cancels it;
* ``cross_cpu``: whether the CPUs change speed together (Pearson correlation of their speeds,
  measured at the same moments): simultaneous samples on two CPUs cancel the noise only then.

* ``pairs``: for samples of 0.1 to 3 s, the spread of the log ratio of two samples of one program
  as each sampling design takes them (run/designs.py chooses by it): ``sequential``, one window
  after the other on a CPU with the others idle; ``simultaneous``, two CPUs over the same window;
  ``covariate``, sequential with a loop on another CPU, what is left after regressing on the
  loop's speed.

`measure` runs abibench's calibrate program on one CPU alone, then on every CPU at once, and
computes these; the result travels with every run's host context.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ..errors import HostError
from ..locks import exclusive, made_once
from ..records import JSONDict
from ..tools import native_tool
from ..workspace import owned_dir

SLICE_S = 0.010  # one chunk of the loop, and the resolution of the spectrum
WINDOWS_S = (0.1, 0.3, 1.0, 3.0)
CACHE_TTL_S = 3600.0  # a cached profile older than this is measured again at a run's start
BRIEF_S = 20.0  # the measurement at a run's start when there is no fresh profile
FULL_S = 60.0  # `abibench calibrate`
FloatArray = npt.NDArray[np.float64]
MIN_PAIRS = 8  # fewer pairs than this say too little about a window's spread


@dataclass(frozen=True)
class CpuNoise:
    cpu: int
    cv: float  # of 10 ms slices
    window_cv: dict[str, float]  # "0.1", "1", "5" (seconds) -> cv of window means
    correlation_time_s: float  # nan: the speed never decorrelated within the measurement
    slices: int


@dataclass(frozen=True)
class PairNoise:
    """Standard deviation of log(a/b) for two samples of one program, each `window` long."""

    sequential: float
    simultaneous: float  # nan with one CPU
    covariate: float  # nan with one CPU
    windows: int  # how many pairs each number is from (the fewest of the three)


@dataclass(frozen=True)
class NoiseProfile:
    measured_at: float  # time.time()
    duration_s: float
    boot_id: str
    cpus: tuple[CpuNoise, ...]
    cross_cpu: float | None  # None with one CPU
    pairs: dict[str, PairNoise] = field(default_factory=dict)  # window (s, "%g") -> spreads
    foreign_cpu: float = 0.0  # CPUs' worth of other processes' work while it measured
    chunk_iters: int = 0  # iterations of the loop that took one 10 ms slice here

    def pair_noise(self, sample_s: float) -> PairNoise | None:
        """The spreads measured for the window closest to a sample of this length (on a log
        scale), or None when no window has enough pairs."""
        usable = {float(k): v for k, v in self.pairs.items()
                  if v.windows >= MIN_PAIRS and math.isfinite(v.sequential)}
        if not usable or sample_s <= 0:
            return None
        best = min(usable, key=lambda w: abs(math.log(w / sample_s)))
        return usable[best]

    @property
    def cv(self) -> float:
        return max(c.cv for c in self.cpus)

    @property
    def correlation_time_s(self) -> float:
        finite = [c.correlation_time_s for c in self.cpus if math.isfinite(c.correlation_time_s)]
        return min(finite) if finite else math.nan

    def window_cv(self, seconds: float) -> float:
        """The spread a sample of about this length suffers from the machine alone."""
        best = min(WINDOWS_S, key=lambda w: abs(math.log(w / seconds)))
        return max(c.window_cv.get(f"{best:g}", math.nan) for c in self.cpus)

    def to_dict(self) -> JSONDict:
        """JSON without NaN (an export must import): a value not measured is null."""
        def finite(v: object) -> object:
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, dict):
                return {k: finite(x) for k, x in v.items()}
            if isinstance(v, list | tuple):
                return [finite(x) for x in v]
            return v

        d: JSONDict = json.loads(json.dumps(finite(asdict(self))))
        return d

    @staticmethod
    def from_dict(d: JSONDict) -> NoiseProfile:
        """A stored profile (the cache, a run's host context); ValueError when malformed."""
        def num(v: object) -> float:
            if v is None:
                return math.nan  # measured but undefined (stored as null)
            if not isinstance(v, int | float) or isinstance(v, bool):
                raise ValueError(f"not a number: {v!r}")
            return float(v)

        cpus = d.get("cpus")
        if not isinstance(cpus, list) or not cpus:
            raise ValueError("no cpus")
        noise = []
        for c in cpus:
            if not isinstance(c, dict) or not isinstance(c.get("window_cv"), dict):
                raise ValueError("malformed cpu")
            windows = c["window_cv"]
            assert isinstance(windows, dict)
            noise.append(CpuNoise(int(num(c.get("cpu"))), num(c.get("cv")),
                                  {str(k): num(v) for k, v in windows.items()},
                                  num(c.get("correlation_time_s")), int(num(c.get("slices")))))
        cross = d.get("cross_cpu")
        pairs_in = d.get("pairs") or {}
        if not isinstance(pairs_in, dict):
            raise ValueError("malformed pairs")
        pairs = {}
        for k, v in pairs_in.items():
            if not isinstance(v, dict):
                raise ValueError("malformed pair")
            pairs[str(k)] = PairNoise(num(v.get("sequential")), num(v.get("simultaneous")),
                                      num(v.get("covariate")), int(num(v.get("windows"))))
        return NoiseProfile(num(d.get("measured_at")), num(d.get("duration_s")),
                            str(d.get("boot_id")), tuple(noise),
                            None if cross is None else num(cross), pairs,
                            num(d.get("foreign_cpu", 0.0)), int(num(d.get("chunk_iters", 0))))

    def stays_words(self) -> str:
        """How long the speed stays where it is, in words: "0.12 s", "under 10 ms"."""
        tau = self.correlation_time_s
        return (f"over {self.duration_s:.0f} s" if not math.isfinite(tau) else
                "under 10 ms" if tau < SLICE_S else f"{tau:.2f} s")

    def cross_words(self) -> str:
        """Whether the CPUs change speed together, in words with the correlation."""
        r = self.cross_cpu
        return ("one CPU" if r is None else
                f"the CPUs change speed together (r={r:.2f})" if r >= 0.3 else
                f"the CPUs change speed in turn, one slows as the other speeds up (r={r:.2f})"
                if r <= -0.3 else f"the CPUs change speed independently (r={r:.2f})")

    def summary(self) -> str:
        """One line for probe, the report and the stopping reasons."""
        text = (f"CPU speed varies {self.cv * 100:.1f}% between 10 ms slices, "
                f"{self.window_cv(1.0) * 100:.1f}% between 1 s windows; it stays put for "
                f"{self.stays_words()}; {self.cross_words()}")
        one = self.pair_noise(1.0)
        if one is not None:
            text += (f"; two 1 s samples one after the other differ by "
                     f"{one.sequential * 100:.1f}% (sd)")
        if self.foreign_cpu >= 0.1:
            text += f"; other processes were using {self.foreign_cpu:.1f} CPUs meanwhile"
        return text


# --------------------------------------------------------------------------- pure statistics


def speeds(lines: list[str]) -> tuple[FloatArray, FloatArray]:
    """(end times in s, relative speeds) of one calibrate output; speed 1.0 = the median."""
    ends, durs = [], []
    for line in lines:
        if not line or line.startswith("#"):
            continue
        a, b = line.split()
        ends.append(int(a) / 1e9)
        durs.append(int(b) / 1e9)
    t = np.asarray(ends, dtype=np.float64)
    d = np.asarray(durs, dtype=np.float64)
    if t.size < 10 or np.any(d <= 0):
        raise ValueError("too few chunks measured")
    s = 1.0 / d
    return t, s / float(np.median(s))


def window_cv(grid: FloatArray, slices_per_window: int) -> float:
    """Spread (sd of the log, about the coefficient of variation) of the mean speeds of
    consecutive windows of n bins; nan with fewer than 3 windows."""
    logs = window_logs(grid, slices_per_window)
    logs = logs[np.isfinite(logs)]
    return float(np.std(logs, ddof=1)) if logs.size >= 3 else math.nan


def correlation_time(s: FloatArray, slice_s: float) -> float:
    """The lag (s) at which the autocorrelation of the speed first falls below 1/e."""
    x = s - s.mean()
    var = float(np.dot(x, x))
    if var == 0.0:
        return 0.0
    n = x.size
    # Autocorrelation through the FFT: O(n log n) for the few thousand slices of a profile.
    f = np.fft.rfft(x, n=2 * n)
    acf = np.fft.irfft(f * np.conj(f))[:n] / var
    below = np.flatnonzero(acf < 1.0 / math.e)
    if below.size == 0 or below[0] >= n // 2:
        return math.nan
    return float(below[0]) * slice_s


def on_grid(series: tuple[FloatArray, FloatArray], start: float, stop: float,
            bin_s: float = SLICE_S) -> FloatArray:
    """A CPU's speeds averaged into bins of the shared monotonic clock; nan where none ended."""
    t, s = series
    edges = np.arange(start, stop + bin_s / 2, bin_s)
    idx = np.searchsorted(edges, t) - 1
    ok = (idx >= 0) & (idx < edges.size - 1)
    sums = np.bincount(idx[ok], weights=s[ok], minlength=edges.size - 1)
    counts = np.bincount(idx[ok], minlength=edges.size - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: FloatArray = sums / counts
    return out


def aligned_correlation(a: tuple[FloatArray, FloatArray], b: tuple[FloatArray, FloatArray],
                        bin_s: float = SLICE_S) -> float:
    """Pearson correlation of two CPUs' speeds over the same moments (binned on the shared
    monotonic clock)."""
    start = max(a[0][0], b[0][0])
    stop = min(a[0][-1], b[0][-1])
    if stop - start < 20 * bin_s:
        return math.nan
    x, y = on_grid(a, start, stop, bin_s), on_grid(b, start, stop, bin_s)
    both = np.isfinite(x) & np.isfinite(y)
    if both.sum() < 20 or np.std(x[both]) == 0 or np.std(y[both]) == 0:
        return math.nan
    return float(np.corrcoef(x[both], y[both])[0, 1])


def window_logs(grid: FloatArray, slices: int) -> FloatArray:
    """log of the mean speed of consecutive windows of `slices` bins (nan: a window without
    any measured bin)."""
    k = grid.size // slices
    if k == 0:
        return np.zeros(0)
    w = grid[: k * slices].reshape(k, slices)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-nan window is nan, as meant
        out: FloatArray = np.log(np.nanmean(w, axis=1))
    return out


def _sd(x: FloatArray) -> tuple[float, int]:
    x = x[np.isfinite(x)]
    return (float(np.std(x, ddof=1)), int(x.size)) if x.size >= 2 else (math.nan, int(x.size))


def residual_sd(y: FloatArray, x: FloatArray) -> tuple[float, int]:
    """Spread of y left after a least-squares fit on x (two parameters fitted)."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 4 or np.std(x) == 0:
        return _sd(y)
    slope, icpt = np.polyfit(x, y, 1)
    r = y - (slope * x + icpt)
    return float(math.sqrt(np.sum(r * r) / (r.size - 2))), int(r.size)


def pair_noise(alone: FloatArray, together: tuple[FloatArray, FloatArray] | None,
               slices: int) -> PairNoise:
    """The spread of log(a/b) of two windows of `slices` bins under each design.

    `alone`: one CPU's speeds on the grid with the other CPUs idle; `together`: two CPUs' speeds
    on one grid, both running the loop.
    """
    seq, n = _sd(np.diff(window_logs(alone, slices)))
    if together is None:
        return PairNoise(seq, math.nan, math.nan, n)
    a, b = (window_logs(g, slices) for g in together)
    sim, n_sim = _sd(a - b)
    # The covariate design: consecutive windows of the sample's CPU, regressed on the loop's
    # CPU over the same two windows.
    cov, n_cov = residual_sd(np.diff(a), np.diff(b))
    return PairNoise(seq, sim, cov, min(n, n_sim, n_cov))


def cpu_noise(cpu: int, series: tuple[FloatArray, FloatArray]) -> CpuNoise:
    """One CPU's spectrum, on the 10 ms grid of the shared clock (a slow chunk is one slice of
    the loop, but it stands for the whole time it took)."""
    t, _ = series
    grid = on_grid(series, float(t[0]), float(t[-1]))
    finite = grid[np.isfinite(grid)]
    # Bins where no chunk ended (the CPU was elsewhere): the speed carried over, for the
    # autocorrelation, which needs an unbroken series.
    idx = np.where(np.isfinite(grid), np.arange(grid.size), 0)
    np.maximum.accumulate(idx, out=idx)
    filled = grid[idx]
    filled = filled[np.isfinite(filled)]
    return CpuNoise(cpu=cpu, cv=float(np.std(finite, ddof=1) / np.mean(finite)),
                    window_cv={f"{w:g}": window_cv(grid, max(1, round(w / SLICE_S)))
                               for w in WINDOWS_S},
                    correlation_time_s=correlation_time(filled, SLICE_S),
                    slices=int(finite.size))


# --------------------------------------------------------------------------- measuring


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _chunk_iters(tool: Path, work: Path) -> int:
    """Iterations of the loop that take about one slice on this machine now."""
    out = work / "size.txt"
    probe_iters = 200_000
    subprocess.run([str(tool), "-1", "200", str(probe_iters), str(out)], check=True,
                   capture_output=True)
    _, durs = zip(*(map(int, ln.split()) for ln in out.read_text().splitlines()
                    if ln and not ln.startswith("#")), strict=True)
    per_iter_ns = float(np.median(durs)) / probe_iters
    return max(1000, round(SLICE_S * 1e9 / per_iter_ns))


def _cpu_busy_s() -> float:
    """CPU time all processes of the machine have used since boot (/proc/stat)."""
    try:
        fields_ = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        v = [int(x) for x in fields_[:7]]
    except (OSError, ValueError):
        return math.nan
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def _loops(tool: Path, work: Path, cpus: list[int], seconds: float, iters: int, tag: str,
           ) -> tuple[dict[int, tuple[FloatArray, FloatArray]], float]:
    """The loop on each of `cpus` at once; their speed series and the other processes' CPU
    time per second meanwhile."""
    busy0, t0 = _cpu_busy_s(), time.monotonic()
    procs = {cpu: subprocess.Popen([str(tool), str(cpu), str(round(seconds * 1000)), str(iters),
                                    str(work / f"{tag}{cpu}.txt")],
                                   stderr=subprocess.PIPE, text=True) for cpu in cpus}
    try:
        for cpu, proc in procs.items():
            _, err = proc.communicate(timeout=seconds + 60)
            if proc.returncode != 0:
                raise HostError(f"the noise probe failed on CPU {cpu}: {err.strip()[:200]}")
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    elapsed = time.monotonic() - t0
    foreign = max(0.0, (_cpu_busy_s() - busy0) / elapsed - len(cpus))
    series = {cpu: speeds((work / f"{tag}{cpu}.txt").read_text().splitlines()) for cpu in cpus}
    return series, foreign


def measure(cache_root: Path, duration_s: float = FULL_S) -> NoiseProfile:
    """Half the time the loop on the first CPU alone (the sequential design's conditions), half
    on every CPU at once (the simultaneous and covariate designs', and how the CPUs move
    together); the profile computed from both."""
    tool = native_tool("calibrate", cache_root)
    cpus = sorted(os.sched_getaffinity(0))
    half = duration_s / 2 if len(cpus) > 1 else duration_s
    with owned_dir("calibrate") as work:
        iters = _chunk_iters(tool, work)
        alone, foreign_alone = _loops(tool, work, cpus[:1], half, iters, "alone")
        together, foreign = ({}, foreign_alone) if len(cpus) < 2 else \
            _loops(tool, work, cpus, half, iters, "together")
    series = together or alone
    noise = tuple(cpu_noise(cpu, s) for cpu, s in series.items())
    cross = None
    if len(cpus) >= 2:
        pairs = [aligned_correlation(series[a], series[b])
                 for i, a in enumerate(cpus) for b in cpus[i + 1:]]
        finite = [p for p in pairs if math.isfinite(p)]
        cross = float(np.mean(finite)) if finite else None
    first = alone[cpus[0]]
    alone_grid = on_grid(first, first[0][0], first[0][-1])
    both = None
    if len(cpus) >= 2:
        a, b = together[cpus[0]], together[cpus[1]]
        start, stop = max(a[0][0], b[0][0]), min(a[0][-1], b[0][-1])
        both = (on_grid(a, start, stop), on_grid(b, start, stop))
    pairs_by_window = {f"{w:g}": pair_noise(alone_grid, both, max(1, round(w / SLICE_S)))
                       for w in WINDOWS_S}
    return NoiseProfile(time.time(), duration_s, boot_id(), noise, cross, pairs_by_window,
                        max(foreign_alone, foreign), iters)


def cache_file(cache_root: Path) -> Path:
    return cache_root / "noise" / "profile.json"


def cached(cache_root: Path, max_age_s: float = CACHE_TTL_S) -> NoiseProfile | None:
    """The last profile of this boot, if it is recent enough."""
    try:
        profile = NoiseProfile.from_dict(json.loads(cache_file(cache_root).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if profile.boot_id != boot_id() or time.time() - profile.measured_at > max_age_s:
        return None
    return profile


def store(cache_root: Path, profile: NoiseProfile) -> None:
    path = cache_file(cache_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(profile.to_dict(), indent=1))
    os.replace(tmp, path)


def remeasure(cache_root: Path, duration_s: float = FULL_S,
              measured: Callable[[Path, float], NoiseProfile] | None = None) -> NoiseProfile:
    """A new profile, measured and kept under the profile's lock (`abibench calibrate`): a run
    that starts meanwhile waits and reads it rather than measure beside it."""
    with exclusive(cache_file(cache_root)):
        profile = (measured or measure)(cache_root, duration_s)
        store(cache_root, profile)
        return profile


def current(cache_root: Path, duration_s: float = BRIEF_S,
            measured: Callable[[Path, float], NoiseProfile] | None = None) -> NoiseProfile:
    """The cached profile, or a brief new measurement (at the start of a run).

    Measured under the profile's lock: two runs that start together (two terminals, a test
    run's workers) measure once, the second reading the first's profile, rather than each
    measuring the machine while the other loads it."""
    def make() -> NoiseProfile:
        profile = (measured or measure)(cache_root, duration_s)
        store(cache_root, profile)
        return profile

    return made_once(cache_file(cache_root), lambda: cached(cache_root), make)
