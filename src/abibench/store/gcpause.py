"""The cyclic garbage collector paused while the store reads or writes millions of objects.

An import makes millions of tuples and dicts (columns, rows) that hold no cycle, and a run read
into columns makes millions of values; the collector walked the young ones after every 700
allocations and counted each growing column again (about 5% of an import's CPU, a third of a
10^6-sample read into columns). Reference counting frees them as before; whatever cycle is left
is collected once the collector is back on. Resumed as it was, on every path.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused_collector() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
