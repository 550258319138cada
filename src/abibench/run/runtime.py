"""What one target's samples run with besides its program: the emulator of an ABI this host
cannot run itself, the plugin that counts its guest instructions, and abibench's own helper
programs built for its ABI (obtain/helpers.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..obtain.qemuplugin import Plugin
from ..probe.emulator import Emulator

# How much longer than natively a program may take under an emulator before it times out
# (QEMU's TCG ran nbody about 16 times slower than the host here; room for a loaded machine).
EMULATION_SLOWDOWN = 50.0


@dataclass(frozen=True)
class AbiRuntime:
    emulator: Emulator | None = None  # None: the kernel runs the ABI itself
    plugin: Plugin | None = None  # counts guest instructions (--counters under an emulator)
    plugin_problem: str | None = None  # why there is no plugin, when one was wanted
    empty: Path | None = None  # the ABI's empty program: the emulator's own peak memory
    stepclock: Path | None = None  # preloaded into counting runs: the same count every time

    @property
    def emulated(self) -> bool:
        return self.emulator is not None

    def timeout(self, seconds: float) -> float:
        return seconds * EMULATION_SLOWDOWN if self.emulated else seconds
