"""The arrays the statistics accept (flat, finite, positive where a ratio needs it), and a median
and linear statistics that stay finite near the end of the float range."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

# 1/0.6745 and sqrt(pi/2): scale MAD and mean absolute deviation so each
# estimates the standard deviation of a normal distribution.
_MAD_TO_SIGMA = 1.0 / 0.6745
_MEANAD_TO_SIGMA = math.sqrt(math.pi / 2.0)


def _as_array(values: Sequence[float], name: str) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains nan or inf; drop failed runs before the statistics")
    return arr


def _positive(arr: FloatArray, name: str) -> FloatArray:
    if not np.all(arr > 0.0):
        raise ValueError(f"{name} has values <= 0: a ratio of them means nothing, no verdict")
    return arr


def _midpoint(lo: FloatArray, hi: FloatArray) -> FloatArray:
    """(lo + hi) / 2 elementwise for lo <= hi, without overflowing at the end of the range.

    The plain form is used wherever it is finite, so ordinary data keep their exact medians.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        plain = 0.5 * (lo + hi)
        # Same sign: hi - lo cannot overflow; opposite signs: lo + hi cannot.
        safe = np.where(np.sign(lo) == np.sign(hi), lo + (hi - lo) * 0.5, plain)
    out: FloatArray = np.where(np.isfinite(plain), plain, safe)
    return out


def median(values: Sequence[float] | FloatArray) -> float:
    """The median of finite values, exact where numpy's is and finite where numpy's overflows
    (the mean of the two middle values of [1e308, 1e308] is inf in numpy)."""
    arr = np.sort(np.asarray(values, dtype=np.float64))
    if arr.size == 0:
        return math.nan
    k = arr.size // 2
    if arr.size % 2:
        return float(arr[k])
    return float(_midpoint(arr[k - 1:k], arr[k:k + 1])[0])


def _scaled(arr: FloatArray, stat: Callable[[FloatArray], float]) -> float:
    """stat(arr) for a linear statistic (mean, stdev, MAD), computed on arr / max|arr| and
    scaled back when the direct computation overflowed: exact for ordinary data, finite for
    values near 1e308."""
    with np.errstate(over="ignore", invalid="ignore"):
        direct = stat(arr)
    if math.isfinite(direct):
        return direct
    top = float(np.max(np.abs(arr)))
    if top == 0.0 or not math.isfinite(top):
        return direct
    return float(stat(arr / top) * top)


def _check_confidence(confidence: float, resamples: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
