"""The digests of the programs a profile's source build makes, per ABI: run it in two checkouts
(before and after a change to a build recipe) and compare, to show the benchmarked programs are
the same byte for byte.

    .venv/bin/python bench/build_digests.py CACHE_DIR gzip:i386,x86_64,x32 lame-encode:i386,x86_64

Each build runs as `abibench run` makes it (obtain/build.py: the sandbox, the host's compiler for
the ABI, the default flags) into CACHE_DIR, a build cache of its own (use a new one per checkout,
or the second run reuses the first's builds). One line per build: profile, ABI, each artifact's
sha256, the build's wall seconds. Another checkout's abibench: PYTHONPATH=OTHER/src.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from abibench.abi import get_abi
from abibench.obtain.build import DEFAULT_CFLAGS, build
from abibench.paths import PROFILES_DIR
from abibench.probe.abis import compiler_for
from abibench.workloads.profile import load_profile


def parse_spec(spec: str) -> tuple[str, list[str]]:
    """'gzip:i386,x86_64' -> ('gzip', ['i386', 'x86_64'])."""
    name, sep, abis = spec.partition(":")
    if not sep or not name or not abis:
        raise SystemExit(f"build_digests: '{spec}': expected PROFILE:ABI[,ABI...]")
    return name, abis.split(",")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache", type=Path, help="a build cache of this run's own")
    ap.add_argument("specs", nargs="+", metavar="PROFILE:ABI[,ABI...]")
    args = ap.parse_args(argv)
    for name, abis in map(parse_spec, args.specs):
        wl = load_profile(PROFILES_DIR / f"{name}.toml")
        for abi in map(get_abi, abis):
            cc = compiler_for(abi)
            if cc is None:
                raise SystemExit(f"build_digests: no compiler for {abi.name} here")
            t0 = time.monotonic()
            art = build(wl, abi, cc, DEFAULT_CFLAGS, args.cache)
            digests = " ".join(f"{f}={d}" for f, d in sorted((art.digests or {}).items()))
            print(f"{name} {abi.name} {digests} {time.monotonic() - t0:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
