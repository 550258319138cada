"""How a workload's rounds are sampled: the design (records.DESIGNS) and the repeats per sample.

The design is chosen from the machine's measured noise (probe/noise.py), not assumed: for a
sample of the workload's length, the noise profile says how far apart two samples of one program
fall when they are taken one after the other, on two CPUs at once, or one after the other with a
loop on another CPU as a covariate. What a design buys is precision per minute, so each is
scored by the variance of a round's log ratio times the time a round takes (Kalibera and Jones
allocate repetitions by the same product); a design other than sequential must beat it clearly.

A design that pins samples to CPUs is only for what can be pinned: one program of one thread,
no server, exactly two targets (simultaneous), and CPUs that nothing else is using.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..probe.noise import NoiseProfile, PairNoise
from ..workloads.profile import Workload
from .launcher import How

# A short program's sample is repeated until it lasts about this long.
REPEAT_TARGET_S = 0.1
REPEAT_BELOW_S = 0.05  # "auto" repeats only programs shorter than this
# Another design must cut variance x cost by this fraction to replace the sequential one: the
# profile is measured with a loop, not the workload, so a small predicted gain is no gain.
MIN_GAIN = 0.25
# Other processes' work, in CPUs, above which no CPU is taken for a second program or a loop.
FOREIGN_LIMIT = 0.25
# Chunk of the covariate loop, as a fraction of the noise probe's 10 ms chunk.
LOOP_CHUNK_FRACTION = 0.1

DesignName = Literal["auto", "sequential", "simultaneous", "covariate", "short"]


@dataclass(frozen=True)
class Design:
    name: str  # one of records.DESIGNS
    reason: str  # why: shown with the workload's outcome
    cpus: tuple[int, int] | None = None  # simultaneous: the pair's CPUs; covariate: sample, loop
    loop_iters: int = 0  # covariate: iterations per chunk of the loop

    def how(self, slot: int, rnd: int, repeat: int) -> How:
        """How the target in position `slot` of round `rnd` is launched."""
        if self.name == "simultaneous" and self.cpus is not None:
            # By position in the round, and the order of a round alternates (A B, B A): each
            # target has each CPU every other round, so a faster CPU favours neither.
            return How(cpu=self.cpus[slot % 2], repeat=repeat)
        if self.name == "covariate" and self.cpus is not None:
            return How(cpu=self.cpus[0], repeat=repeat,
                       covariate=(self.cpus[1], self.loop_iters))
        return How(repeat=repeat)


def repeats_for(setting: int | Literal["auto"], sample_s: float | None) -> int:
    """Runs per sample: the profile's number, or for "auto" enough back-to-back runs of a
    program shorter than REPEAT_BELOW_S to last REPEAT_TARGET_S (1 for longer ones)."""
    if setting != "auto":
        return setting
    if sample_s is None or not math.isfinite(sample_s) or sample_s >= REPEAT_BELOW_S:
        return 1
    return max(1, min(1000, math.ceil(REPEAT_TARGET_S / max(sample_s, 1e-6))))


def cost_factor(name: str) -> float:
    """A round's duration in units of one sample: two samples one after the other, or two at
    once."""
    return 1.0 if name == "simultaneous" else 2.0


def spread_of(pair: PairNoise, name: str) -> float:
    return {"sequential": pair.sequential, "simultaneous": pair.simultaneous,
            "covariate": pair.covariate}.get(name, math.nan)


def score(pair: PairNoise, name: str) -> float:
    """Variance of a round's log ratio times its duration (smaller: more precision a minute)."""
    sd = spread_of(pair, name)
    return sd * sd * cost_factor(name) if math.isfinite(sd) else math.inf


def pinnable(wl: Workload, n_targets: int, in_sysroot: bool, cpus: list[int],
             noise: NoiseProfile | None) -> str | None:
    """Why this workload's samples cannot be pinned to CPUs here; None when they can."""
    if len(cpus) < 2:
        return "one CPU"
    if wl.server is not None:
        return "a server workload"
    if wl.threads > 1:
        return f"the program uses {wl.threads} threads"
    if in_sysroot:
        return "it runs in a sysroot"
    if noise is not None and noise.foreign_cpu >= FOREIGN_LIMIT:
        return f"other processes were using {noise.foreign_cpu:.1f} CPUs"
    if n_targets < 2:
        return "one target"
    return None


def choose(asked: DesignName, wl: Workload, noise: NoiseProfile | None,
           sample_s: float | None, n_targets: int, in_sysroot: bool, cpus: list[int],
           loop_iters: int) -> Design:
    """The design for a workload whose samples take about `sample_s` (its warm-up)."""
    pair_cpus = (cpus[0], cpus[1]) if len(cpus) >= 2 else None
    blocked = pinnable(wl, n_targets, in_sysroot, cpus, noise)
    if asked == "short":
        if not wl.short:
            raise ValueError(f"{wl.id}: --design short needs the profile's [run] short = "
                             "{ param = value }")
        return Design("short", "asked for (--design short)")
    if asked in ("simultaneous", "covariate"):
        # Asked for by name: only what makes it impossible stops it, not a neighbour's load
        # (a study of the designs measures exactly that).
        blocked = pinnable(wl, n_targets, in_sysroot, cpus, None)
        if blocked is not None:
            return Design("sequential", f"{asked} asked for, but not possible: {blocked}")
        if asked == "simultaneous" and n_targets != 2:
            return Design("sequential", "simultaneous asked for, but it takes exactly 2 targets")
        return Design(asked, f"asked for (--design {asked})", pair_cpus, loop_iters)
    if asked == "sequential":
        return Design("sequential", "asked for (--design sequential)")
    # auto
    if noise is None:
        return Design("sequential", "no noise profile of this machine (abibench calibrate)")
    pair = noise.pair_noise(sample_s) if sample_s else None
    if pair is None:
        return Design("sequential", "the noise profile has no window near this sample's length")
    base = score(pair, "sequential")
    options = [] if blocked is not None else \
        [n for n in ("simultaneous", "covariate") if n != "simultaneous" or n_targets == 2]
    best = min(options, key=lambda n: score(pair, n), default=None)
    seq_text = f"{pair.sequential * 100:.1f}%"
    if best is not None and score(pair, best) < (1 - MIN_GAIN) * base:
        gain = base / score(pair, best)
        return Design(best, f"a pair varies {spread_of(pair, best) * 100:.1f}% this way against "
                      f"{seq_text} one after the other: {gain:.1f}x the precision a minute",
                      pair_cpus, loop_iters)
    why = f"pairs one after the other vary {seq_text}"
    if blocked is not None:
        return Design("sequential", f"{why}; no pinned design: {blocked}")
    alternatives = ", ".join(f"{n} {spread_of(pair, n) * 100:.1f}%" for n in options)
    return Design("sequential", f"{why}; {alternatives}: no better per minute")
