"""Fault injection at the store's checkpoints: a real signal, sent by the process to itself.

`ABIBENCH_FAULT_AT=sample:K:SIGNAL` makes a run send SIGNAL (KILL, INT, TERM, HUP or STOP) to
itself right after the K-th sample of this process is stored. Nothing is simulated: the signal
is delivered and handled as one from outside would be at that moment, so a harness can stop a
run at every checkpoint in turn (tests/faults/, bench/faults.py). With STOP the harness does its
fault (fills the disk, deletes the database, replaces the program) and then sends SIGCONT.
Unset, this costs one dictionary lookup per sample.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from ..errors import UsageError

FAULT_ENV = "ABIBENCH_FAULT_AT"
KINDS = ("sample",)
SIGNALS = {"KILL": signal.SIGKILL, "INT": signal.SIGINT, "TERM": signal.SIGTERM,
           "HUP": signal.SIGHUP, "STOP": signal.SIGSTOP}


@dataclass(frozen=True)
class FaultAt:
    kind: str
    count: int
    signal: signal.Signals


def parse(text: str) -> FaultAt:
    """KIND:K:SIGNAL, e.g. `sample:3:KILL`; anything else is refused in one line."""
    parts = text.strip().split(":")
    if (len(parts) != 3 or parts[0] not in KINDS or not parts[1].isdigit()
            or int(parts[1]) < 1 or parts[2].upper().removeprefix("SIG") not in SIGNALS):
        raise UsageError(f"{FAULT_ENV}={text!r}: expected KIND:K:SIGNAL with KIND one of "
                         f"{', '.join(KINDS)}, K from 1 and SIGNAL one of {', '.join(SIGNALS)} "
                         f"(like sample:3:KILL), or unset it")
    return FaultAt(parts[0], int(parts[1]), SIGNALS[parts[2].upper().removeprefix("SIG")])


_counts: dict[str, int] = {}


def reached(kind: str) -> None:
    """One more checkpoint of this kind was passed; the asked signal when it is the K-th."""
    text = os.environ.get(FAULT_ENV)
    if not text:
        return
    at = parse(text)
    _counts[kind] = _counts.get(kind, 0) + 1
    if at.kind == kind and _counts[kind] == at.count:
        os.kill(os.getpid(), at.signal)
