"""`abibench calibrate`: this machine's noise, measured and kept for adaptive runs."""

from __future__ import annotations

import argparse
import math
import sys

from ..errors import EXIT_OK, UsageError
from .argtypes import Commands, _duration
from .printing import _console, _print_json


def add_parser(sub: Commands) -> None:
    cal = sub.add_parser("calibrate")
    cal.add_argument("--duration", type=_duration, default=None,
                     help="how long to measure (default 60s)")
    cal.add_argument("--json", action="store_true")


def cmd_calibrate(args: argparse.Namespace) -> int:
    # Imported when the command runs, not at the top: parsing its command line (a refusal,
    # --help) does not pay for what only running it needs.
    from ..paths import cache_dir
    from ..probe import noise
    from ..report.terminal import e

    duration = args.duration if args.duration is not None else noise.FULL_S
    if not 5.0 <= duration <= 3600.0:
        raise UsageError(f"--duration {duration:g}s: give 5s to 1h (the default is "
                         f"{noise.FULL_S:g}s)")
    if not args.json:
        print(f"abibench: measuring this machine's noise for {duration:g} s (a fixed loop on "
              "one CPU alone, then on every CPU at once)", file=sys.stderr)
    profile = noise.remeasure(cache_dir(), duration)
    if args.json:
        _print_json(profile.to_dict())
        return EXIT_OK
    con = _console()
    con.print(e(profile.summary()))
    con.print(e("window  one after the other  two CPUs at once  with a loop covariate  pairs"))
    for window, pair in sorted(profile.pairs.items(), key=lambda kv: float(kv[0])):
        def pct(v: float) -> str:
            return f"{v * 100:.2f}%" if math.isfinite(v) else "-"
        con.print(e(f"{float(window):>5g}s  {pct(pair.sequential):>19}  "
                    f"{pct(pair.simultaneous):>16}  {pct(pair.covariate):>21}  "
                    f"{pair.windows:>5}"))
    con.print(e("(the sd of log(a/b) of two samples of one program taken each way; "
                "run/designs.py picks by sd² x time a round takes)"))
    return EXIT_OK
