"""The schedule: interleaving, adaptive stopping, instruction counts."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from abibench.abi import ABIS
from abibench.records import Target
from abibench.run.schedule import round_order

Cli = Callable[..., subprocess.CompletedProcess[str]]
FIXTURES = Path(__file__).parents[1] / "fixtures"



def test_round_order_alternates() -> None:
    a, b, c = Target(ABIS["i386"]), Target(ABIS["x86_64"]), Target(ABIS["x32"])
    assert round_order([a, b], 0) == [a, b]
    assert round_order([a, b], 1) == [b, a]
    assert round_order([a, b, c], 3) == [c, b, a]


def test_quiet_workload_stops_earlier_than_noisy_and_says_why(cli: Cli) -> None:
    r = cli("run", str(FIXTURES / "quiet.toml"), str(FIXTURES / "noisy.toml"), "--abi",
            "i386,x86_64", "--precision", "1%", "--max-rounds", "12", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    quiet, noisy = doc["outcomes"]["quiet"], doc["outcomes"]["noisy"]
    assert quiet["rounds"] == 5  # the minimum: its CI is already within ±1%
    assert quiet["stop_reason"].startswith("precision reached")
    assert noisy["rounds"] == 12
    assert noisy["stop_reason"].startswith("max 12 rounds reached")


def test_budget_stop_is_a_warning_in_the_report(cli: Cli) -> None:
    r = cli("run", str(FIXTURES / "noisy.toml"), "--abi", "i386,x86_64", "--precision", "1%",
            "--max-rounds", "6")
    assert "stopped by budget before reaching the asked precision" in r.stdout


def test_counters_repeat_exactly(cli: Cli) -> None:
    counts = []
    for _ in range(2):
        r = cli("run", str(FIXTURES / "spin.toml"), "--abi", "i386,x86_64", "--rounds", "1",
                "--set", "millions=1", "--counters", "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        got = {s["target"]: s["instructions"] for s in doc["samples"]
               if s["kind"] == "counters"}
        assert set(got) == {"i386", "x86_64"} and all(v and v > 1_000_000 for v in got.values())
        counts.append(got)
        timed = [s for s in doc["samples"] if s["kind"] == "timed"]
        assert len(timed) == 4  # the valgrind runs are not timing samples
    assert counts[0] == counts[1]
