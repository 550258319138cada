from __future__ import annotations

from pathlib import Path

import pytest

from abibench.errors import ProfileError
from abibench.run.samples import ParseError, parse_metrics, validation_value
from abibench.workloads.profile import (
    builtin_profiles,
    load_profile,
    load_workloads,
    parse_duration,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"


GOOD = """\
id = "demo"
title = "Demo"
[source]
files = ["demo.c"]
artifacts = ["demo"]
[run]
command = ["{bin}/demo", "{n}"]
[params]
n = 10
[validate]
stdout_match = 'checksum: (\\S+)'
[[metric]]
name = "rate"
parse = { regex = 'rate: ([0-9.]+)' }
unit = "ops/s"
better = "higher"
"""


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "demo.c").write_text("int main(void){return 0;}\n")
    p = tmp_path / "demo.toml"
    p.write_text(text)
    return p


def test_every_builtin_profile_loads() -> None:
    profiles = builtin_profiles()
    assert {"ptrtree", "nbody", "stream"} <= set(profiles)
    for path in profiles.values():
        wl = load_profile(path)
        assert wl.primary and wl.suites
        if "default" in wl.suites:
            assert wl.metrics and wl.stdout_match is not None
        if wl.debian_packages and not wl.source.artifacts:
            # Debian-only profiles are in a suite that runs with --provenance debian
            # (games-media: `abibench run --suite games-media --provenance debian`).
            assert {"debian", "browser", "games-media"} & set(wl.suites), wl.id


def test_default_suite_has_the_three_foundation_workloads() -> None:
    ids = {w.id for w in load_workloads(None, None)}
    assert {"ptrtree", "nbody", "stream"} <= ids


def test_good_profile_and_parsing(tmp_path: Path) -> None:
    wl = load_profile(_write(tmp_path, GOOD))
    assert wl.primary == "rate" and wl.params == {"n": "10"} and wl.timeout == 300
    out = "rate: 12.5\nchecksum: abc\n"
    assert parse_metrics(wl.metrics, out) == {"rate": 12.5}
    assert validation_value(wl, out) == "abc"
    with pytest.raises(ParseError, match="metric 'rate' not found"):
        parse_metrics(wl.metrics, "nothing")
    assert wl.with_params({"n": "3"}).params["n"] == "3"
    with pytest.raises(ProfileError, match="unknown parameter m"):
        wl.with_params({"m": "3"})


@pytest.mark.parametrize("old,new,message", [
    ('better = "higher"', 'better = "faster"', r"demo.toml:16: metric 'rate': better = "),
    ("rate: ([0-9.]+)", "rate: [0-9.]+", r"demo.toml:14: 'regex' needs one capture group"),
    ('"{bin}/demo", "{n}"', '"{bin}/demo", "{size}"', r"demo.toml:7: unknown placeholder \{size\}"),
    ('title = "Demo"', 'title = 3', r"demo.toml:2: 'title' must be a string"),
    ('id = "demo"', 'id = "Demo!"', r"demo.toml:1: id 'Demo!' must be lowercase"),
    ('[run]', '[runn]', r"unknown key 'runn'"),
    ('artifacts = ["demo"]', '', r"missing 'artifacts'"),
    ('n = 10', 'n = [1]', r"demo.toml:9: parameter 'n' must be a string or a number"),
    ('[[metric]]', '[[metric]', r"not valid TOML"),
])
def test_malformed_profiles_name_file_line_and_fix(tmp_path: Path, old: str, new: str,
                                                   message: str) -> None:
    assert old in GOOD
    with pytest.raises(ProfileError, match=message):
        load_profile(_write(tmp_path, GOOD.replace(old, new)))


def test_fixture_malformed_profile() -> None:
    with pytest.raises(ProfileError, match=r"malformed.toml:\d+: metric 'rate': better"):
        load_profile(FIXTURES / "malformed.toml")


def test_unknown_workload_and_suite() -> None:
    with pytest.raises(ProfileError, match="unknown workload 'nope'"):
        load_workloads(["nope"], None)
    with pytest.raises(ProfileError, match="no workload in suite 'nosuch'"):
        load_workloads(None, "nosuch")


def test_durations() -> None:
    assert parse_duration("90s") == 90 and parse_duration("2m") == 120
    assert parse_duration("500ms") == 0.5 and parse_duration(3) == 3
    for bad in ("soon", "-1s", 0, "1d"):
        with pytest.raises(ValueError, match="bad duration"):
            parse_duration(bad)
