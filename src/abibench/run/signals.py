"""A polite kill ends a run like Ctrl-C does."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

POLITE = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise KeyboardInterrupt, so every `finally` runs: the
    sample in flight is stopped, servers are stopped by PID, temp dirs go, the run is marked."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, handler) for s in POLITE}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
