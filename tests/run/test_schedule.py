"""The schedule: interleaving, adaptive stopping, instruction counts."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.abi import ABIS
from abibench.records import Target
from abibench.run.designs import REPEAT_BELOW_S, repeats_for
from abibench.run.schedule import PAD_RANGE, round_order, round_pad

Cli = Callable[..., subprocess.CompletedProcess[str]]
FIXTURES = Path(__file__).parents[1] / "fixtures"
# These runs are read for their schedule (rounds, stop reasons, samples), never for the HTML
# report a run writes by default: --no-html spares each one its charts
# (about 1 CPU s a run). The run's own report is tested where it is read (tests/report,
# tests/run/test_run.py).
NO_HTML = "--no-html"



def test_round_order_alternates() -> None:
    a, b, c = Target(ABIS["i386"]), Target(ABIS["x86_64"]), Target(ABIS["x32"])
    assert round_order([a, b], 0) == [a, b]
    assert round_order([a, b], 1) == [b, a]
    assert round_order([a, b, c], 3) == [c, b, a]


def test_quiet_workload_stops_earlier_than_noisy_and_says_why(cli: Cli) -> None:
    r = cli("run", NO_HTML, str(FIXTURES / "quiet.toml"), str(FIXTURES / "noisy.toml"), "--abi",
            "i386,x86_64", "--precision", "1%", "--max-rounds", "12", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    quiet, noisy = doc["outcomes"]["quiet"], doc["outcomes"]["noisy"]
    assert quiet["rounds"] == 5  # the minimum: its CI is already within ±1%
    assert quiet["stop_reason"].startswith("precision reached")
    assert noisy["rounds"] == 12
    assert noisy["stop_reason"].startswith("max 12 rounds reached")


def test_budget_stop_is_a_warning_in_the_report(cli: Cli) -> None:
    r = cli("run", NO_HTML, str(FIXTURES / "noisy.toml"), "--abi", "i386,x86_64", "--precision", "1%",
            "--max-rounds", "6")
    assert "stopped by budget before reaching the asked precision" in r.stdout


def test_counters_repeat_exactly(cli: Cli) -> None:
    counts = []
    for _ in range(2):
        r = cli("run", NO_HTML, str(FIXTURES / "spin.toml"), "--abi", "i386,x86_64", "--rounds", "1",
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


def test_the_budget_goes_where_precision_is_furthest_and_says_what_noise_costs(
        cli: Cli) -> None:
    r = cli("run", NO_HTML, str(FIXTURES / "quiet.toml"), str(FIXTURES / "noisy.toml"), "--abi",
            "i386,x86_64", "--precision", "1%", "--budget", "15s", "--design", "sequential",
            "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    quiet, noisy = doc["outcomes"]["quiet"], doc["outcomes"]["noisy"]
    assert quiet["rounds"] == 5 and quiet["stop_reason"].startswith("precision reached")
    # Every round after the opening went to the noisy one, until the budget ended.
    assert noisy["rounds"] > 5
    assert noisy["stop_reason"].startswith("run budget 15s ended at ±")
    assert "machine noise floor: rounds vary" in noisy["stop_reason"]
    assert "--counters" in noisy["stop_reason"]


def test_a_budget_smaller_than_the_opening_ends_the_run_and_says_the_rounds_fell_short(
        cli: Cli) -> None:
    # The opening (a warm-up and two rounds of two targets: six samples) always runs; the
    # property is that a budget shorter than it ends the run there and says why. Only the
    # ratio of the two matters: six samples of 50 million steps (0.15-0.2 s each quiet, 3-4
    # ns a step; 0.3 s even at an impossible 1 ns) against a 50 ms budget. It was 500 million
    # (1-2 s a sample quiet, 5-11 s at load 10) against 1 s: the same ratio, ten times the CPU.
    r = cli("run", NO_HTML, str(FIXTURES / "spin.toml"), "--abi", "i386,x86_64", "--precision",
            "0.1%", "--budget", "50ms", "--set", "millions=50", "--design", "sequential",
            "--json")
    assert r.returncode == 0, r.stderr
    outcome = json.loads(r.stdout)["outcomes"]["spin"]
    assert outcome["rounds"] == 2
    assert "fewer than --min-rounds 5: the budget could not afford more" in outcome["stop_reason"]


def test_simultaneous_and_covariate_designs_record_how_each_sample_was_taken(cli: Cli) -> None:
    for design in ("simultaneous", "covariate"):
        r = cli("run", NO_HTML, str(FIXTURES / "spin.toml"), "--abi", "i386,x86_64", "--rounds", "4",
                "--set", "millions=10", "--design", design, "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        timed = [s for s in doc["samples"] if s["kind"] == "timed" and not s["warmup"]]
        assert len(timed) == 8 and {s["design"] for s in timed} == {design}
        assert all(s["foreign_cpu_s"] is not None and s["foreign_cpu_s"] >= 0 for s in timed)
        if design == "simultaneous":
            # Each target has each CPU in turn: swapped every round.
            for target in ("i386", "x86_64"):
                cpus = [s["cpu"] for s in sorted(timed, key=lambda s: s["round"])
                        if s["target"] == target]
                assert cpus[0] != cpus[1] and set(cpus) == {0, 1}
            by_round: dict[int, set[int]] = {}
            for s in timed:
                by_round.setdefault(s["round"], set()).add(s["cpu"])
            assert all(v == {0, 1} for v in by_round.values())
        else:
            assert all(s["cpu"] == 0 and s["covariate"] > 0 for s in timed)
        assert f"sampled {design}" in doc["outcomes"]["spin"]["stop_reason"]


def test_repeat_auto_runs_a_short_program_until_a_sample_lasts(cli: Cli, tmp_path: Path) -> None:
    prof = tmp_path / "tiny.toml"
    prof.write_text((FIXTURES / "spin.toml").read_text().replace(
        'timeout = "60s"', 'timeout = "60s"\nrepeat = "auto"'))
    (tmp_path / "spin.c").write_bytes((FIXTURES / "spin.c").read_bytes())
    r = cli("run", NO_HTML, str(prof), "--abi", "i386,x86_64", "--rounds", "2", "--set", "millions=0",
            "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    counted = [s for s in doc["samples"] if s["kind"] == "timed" and not s["warmup"]]
    warm = [s for s in doc["samples"] if s["warmup"]]
    assert all(s["repeat"] == 1 for s in warm)
    # A program of a few milliseconds is run back to back, as many times as its warm-ups' median
    # says it takes to last REPEAT_TARGET_S. The count is checked against the rule applied to the
    # warm-ups this run stored, not against a number: under a neighbour's load the same program
    # takes longer and is rightly repeated fewer times (a fixed ">= 10" failed at load 15).
    walls = sorted(s["wall_s"] for s in warm if s["status"] == "ok" and s["wall_s"] > 0)
    median = walls[len(walls) // 2]
    assert median < REPEAT_BELOW_S, f"the warm-ups took {walls}: not a short program"
    expected = repeats_for("auto", median)
    assert expected >= 2
    assert all(s["repeat"] == expected for s in counted), ([s["repeat"] for s in counted], expected)
    # The times stored are per run: the sample's total divided by its runs.
    assert all(s["wall_s"] < 0.05 for s in counted)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**63), workload=st.text(min_size=1, max_size=20),
       number=st.integers(0, 10_000))
def test_a_rounds_padding_is_a_function_of_the_round_alone(seed: int, workload: str,
                                                           number: int) -> None:
    # Family "a resumed or repeated run draws other paddings": the padding depends on nothing
    # but (seed, workload, round), so every target of a round, a resumed run and a rerun agree.
    pad = round_pad(seed, workload, number)
    assert 0 <= pad < PAD_RANGE
    assert pad == round_pad(seed, workload, number)


def test_every_target_of_a_round_gets_the_same_padding(cli: Cli) -> None:
    r = cli("run", NO_HTML, str(FIXTURES / "quiet.toml"), "--abi", "i386,x86_64", "--rounds", "4",
            "--json")
    assert r.returncode == 0, r.stderr
    pads: dict[int, set[int]] = {}
    for s in json.loads(r.stdout)["samples"]:
        if s["kind"] == "timed":
            pads.setdefault(s["round"], set()).add(s["env_pad"])
    assert len(pads) == 5 and all(len(p) == 1 for p in pads.values()), pads
    assert len({p for ps in pads.values() for p in ps}) > 1  # and it changes between rounds
