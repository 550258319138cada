"""Single-board computers (a Raspberry Pi, seed 003): the board, its clock, temperature and
throttling, read from the kernel's files (and the firmware's `vcgencmd` where it is present).

A Pi lowers its clock when it is hot or its supply sags, and that is invisible in a result
unless it is measured: the run reads the clock, the temperature and the firmware's throttling
bits after every sample, and the analysis warns on every result whose samples ran slowed down.
On a machine without these files (a VM) everything here is None and nothing is said.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/")
# The firmware's get_throttled bits (Raspberry Pi): what holds now, and what has happened.
THROTTLE_NOW = {0x1: "under-voltage", 0x2: "clock capped", 0x4: "throttled",
                0x8: "soft temperature limit"}
THROTTLE_SINCE_BOOT = {0x10000: "under-voltage", 0x20000: "clock capped",
                       0x40000: "throttled", 0x80000: "soft temperature limit"}
FIRMWARE_THROTTLED = "sys/devices/platform/soc/soc:firmware/get_throttled"


@dataclass(frozen=True)
class Reading:
    """The board's state at one moment (after a sample)."""

    clock_mhz: float | None  # the lowest current clock over the online CPUs
    temp_c: float | None  # the hottest thermal zone
    throttled: int | None  # the firmware's get_throttled bits, None where unknown


def _read(root: Path, rel: str) -> str | None:
    try:
        return (root / rel).read_text().strip("\0\n ")
    except (OSError, UnicodeDecodeError):
        return None


def board_model(root: Path = ROOT) -> str | None:
    """The device tree's model, e.g. "Raspberry Pi 4 Model B Rev 1.4" (None on PCs and VMs)."""
    model = _read(root, "proc/device-tree/model")
    return model or None


def _cpus(root: Path) -> list[Path]:
    return sorted((root / "sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq"))


def max_clock_mhz(root: Path = ROOT) -> float | None:
    """The highest clock any CPU may run at (cpuinfo_max_freq, kHz in sysfs)."""
    found = [int(v) for d in _cpus(root)
             if (v := _read(d, "cpuinfo_max_freq")) is not None and v.isdigit()]
    return max(found) / 1000.0 if found else None


def _clock(root: Path) -> float | None:
    found = [int(v) for d in _cpus(root)
             if (v := _read(d, "scaling_cur_freq")) is not None and v.isdigit()]
    return min(found) / 1000.0 if found else None


def _temperature(root: Path) -> float | None:
    found = []
    for zone in sorted((root / "sys/class/thermal").glob("thermal_zone*")):
        v = _read(zone, "temp")
        if v is not None and v.lstrip("-").isdigit():
            found.append(int(v) / 1000.0)  # millidegrees Celsius
    return max(found) if found else None


def throttled_bits(root: Path = ROOT) -> int | None:
    """The firmware's throttling bits: its sysfs node, else `vcgencmd get_throttled`."""
    text = _read(root, FIRMWARE_THROTTLED)
    if text is None and root == ROOT and shutil.which("vcgencmd"):
        try:
            out = subprocess.run(["vcgencmd", "get_throttled"], capture_output=True, text=True,
                                 timeout=5, check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        text = out.strip().partition("=")[2]  # "throttled=0x50005"
    if not text:
        return None
    try:
        return int(text, 16)
    except ValueError:
        return None


def read_now(root: Path = ROOT) -> Reading:
    return Reading(_clock(root), _temperature(root), throttled_bits(root))


def throttle_words(bits: int, table: dict[int, str] = THROTTLE_NOW) -> list[str]:
    return [word for bit, word in table.items() if bits & bit]
