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

`measure` runs abibench's calibrate program on every CPU at once and computes these; the result
travels with every run's host context.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ..errors import HostError
from ..records import JSONDict
from ..tools import native_tool
from ..workspace import owned_dir

SLICE_S = 0.010  # one chunk of the loop, and the resolution of the spectrum
WINDOWS_S = (0.1, 1.0, 5.0)
CACHE_TTL_S = 3600.0  # a cached profile older than this is measured again at a run's start
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class CpuNoise:
    cpu: int
    cv: float  # of 10 ms slices
    window_cv: dict[str, float]  # "0.1", "1", "5" (seconds) -> cv of window means
    correlation_time_s: float  # nan: the speed never decorrelated within the measurement
    slices: int


@dataclass(frozen=True)
class NoiseProfile:
    measured_at: float  # time.time()
    duration_s: float
    boot_id: str
    cpus: tuple[CpuNoise, ...]
    cross_cpu: float | None  # None with one CPU

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
        return NoiseProfile(num(d.get("measured_at")), num(d.get("duration_s")),
                            str(d.get("boot_id")), tuple(noise),
                            None if cross is None else num(cross))

    def summary(self) -> str:
        """One line for probe, the report and the stopping reasons."""
        tau = self.correlation_time_s
        tau_text = f"{tau:.1f} s" if math.isfinite(tau) else f"over {self.duration_s:.0f} s"
        r = self.cross_cpu
        cross = ("one CPU" if r is None else
                 f"the CPUs change speed together (r={r:.2f})" if r >= 0.3 else
                 f"the CPUs change speed in turn, one slows as the other speeds up (r={r:.2f})"
                 if r <= -0.3 else f"the CPUs change speed independently (r={r:.2f})")
        return (f"CPU speed varies {self.cv * 100:.1f}% between 10 ms slices, "
                f"{self.window_cv(1.0) * 100:.1f}% between 1 s windows; it stays put for "
                f"{tau_text}; {cross}")


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


def window_cv(s: FloatArray, slices_per_window: int) -> float:
    """Coefficient of variation of the means of consecutive windows of n slices."""
    n = slices_per_window
    k = s.size // n
    if k < 3:
        return math.nan
    means = s[: k * n].reshape(k, n).mean(axis=1)
    return float(np.std(means, ddof=1) / np.mean(means))


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


def aligned_correlation(a: tuple[FloatArray, FloatArray], b: tuple[FloatArray, FloatArray],
                        bin_s: float = SLICE_S) -> float:
    """Pearson correlation of two CPUs' speeds over the same moments (binned on the shared
    monotonic clock)."""
    start = max(a[0][0], b[0][0])
    stop = min(a[0][-1], b[0][-1])
    if stop - start < 20 * bin_s:
        return math.nan
    edges = np.arange(start, stop, bin_s)

    def binned(t: FloatArray, s: FloatArray) -> FloatArray:
        idx = np.searchsorted(edges, t) - 1
        ok = (idx >= 0) & (idx < edges.size - 1)
        sums = np.bincount(idx[ok], weights=s[ok], minlength=edges.size - 1)
        counts = np.bincount(idx[ok], minlength=edges.size - 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out: FloatArray = sums / counts
        return out

    x, y = binned(*a), binned(*b)
    both = np.isfinite(x) & np.isfinite(y)
    if both.sum() < 20 or np.std(x[both]) == 0 or np.std(y[both]) == 0:
        return math.nan
    return float(np.corrcoef(x[both], y[both])[0, 1])


def cpu_noise(cpu: int, series: tuple[FloatArray, FloatArray]) -> CpuNoise:
    _, s = series
    return CpuNoise(cpu=cpu, cv=float(np.std(s, ddof=1) / np.mean(s)),
                    window_cv={f"{w:g}": window_cv(s, max(1, round(w / SLICE_S)))
                               for w in WINDOWS_S},
                    correlation_time_s=correlation_time(s, SLICE_S), slices=int(s.size))


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


def measure(cache_root: Path, duration_s: float = 30.0) -> NoiseProfile:
    """Run the loop on every CPU at once for `duration_s` and compute the profile."""
    tool = native_tool("calibrate", cache_root)
    cpus = sorted(os.sched_getaffinity(0))
    with owned_dir("calibrate") as work:
        iters = _chunk_iters(tool, work)
        procs = {cpu: subprocess.Popen([str(tool), str(cpu), str(round(duration_s * 1000)),
                                        str(iters), str(work / f"cpu{cpu}.txt")],
                                       stderr=subprocess.PIPE, text=True) for cpu in cpus}
        try:
            for cpu, proc in procs.items():
                _, err = proc.communicate(timeout=duration_s + 60)
                if proc.returncode != 0:
                    raise HostError(f"the noise probe failed on CPU {cpu}: {err.strip()[:200]}")
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        series = {cpu: speeds((work / f"cpu{cpu}.txt").read_text().splitlines())
                  for cpu in cpus}
    noise = tuple(cpu_noise(cpu, s) for cpu, s in series.items())
    cross = None
    if len(cpus) >= 2:
        pairs = [aligned_correlation(series[a], series[b])
                 for i, a in enumerate(cpus) for b in cpus[i + 1:]]
        finite = [p for p in pairs if math.isfinite(p)]
        cross = float(np.mean(finite)) if finite else None
    return NoiseProfile(time.time(), duration_s, boot_id(), noise, cross)


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


def current(cache_root: Path, duration_s: float = 5.0) -> NoiseProfile:
    """The cached profile, or a brief new measurement (at the start of a run)."""
    found = cached(cache_root)
    if found is not None:
        return found
    profile = measure(cache_root, duration_s)
    store(cache_root, profile)
    return profile
