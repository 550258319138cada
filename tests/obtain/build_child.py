"""One build in a process of its own, for the tests that kill it: `python -m
tests.obtain.build_child PROFILE CACHE TOKEN`. SIGTERM ends it as Ctrl-C does, through the
same run/signals.py that `abibench run` uses."""

from __future__ import annotations

import sys
from pathlib import Path

from abibench.abi import ABIS
from abibench.obtain.build import build
from abibench.run.signals import signals_as_interrupt
from abibench.workloads.profile import load_profile


def main() -> int:
    wl = load_profile(Path(sys.argv[1])).with_params({"tok": sys.argv[3]})
    try:
        with signals_as_interrupt():
            art = build(wl, ABIS["x86_64"], "gcc", ("-O2",), Path(sys.argv[2]))
    except KeyboardInterrupt:
        return 130
    print(art.cache_key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
