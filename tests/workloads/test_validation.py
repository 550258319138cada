"""Every built-in workload proves its output; a user's profile may say why it cannot.

The family: a workload whose output is timed and compared although nothing checks it (a broken
build, a crashed sub-test, a wrong result measured like a correct one). The one rule: every
instance of every built-in profile (each [sweep] value, each [[validate.when]] case) compares
something across ABIs; a user's profile may instead say validate = "none: REASON", and that
reason is what every report prints where the check would be.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.errors import ProfileError
from abibench.text import one_line
from abibench.workloads.profile import (
    MAX_REASON,
    builtin_profiles,
    expand_sweep,
    load_profile,
)

Cli = Callable[..., subprocess.CompletedProcess[str]]
FIXTURES = Path(__file__).parents[1] / "fixtures"

BASE = """\
id = "demo"
title = "Demo"
[source]
files = ["metric.c"]
artifacts = ["metric"]
[run]
command = ["{bin}/metric", "0"]
timeout = "30s"
[[metric]]
name = "value"
parse = { regex = '(?m)^value: ([0-9.]+)$' }
unit = "units"
better = "higher"
"""


def _profile(tmp_path: Path, validate: str) -> Path:
    (tmp_path / "metric.c").write_text((FIXTURES / "metric.c").read_text())
    p = tmp_path / "demo.toml"
    p.write_text(BASE.replace("[source]", f"{validate}\n[source]", 1))
    return p


def test_every_builtin_instance_proves_its_output() -> None:
    unproven = []
    for name, path in builtin_profiles().items():
        wl = load_profile(path)
        assert wl.no_validation is None, f"{name}: a built-in profile proves its output"
        for inst in expand_sweep(wl):
            if not inst.with_validation().validates:
                unproven.append(inst.id)
        unproven += [f"{name} when {when}" for when, spec in wl.validate_when if not spec.any]
    assert unproven == []


def _toml_value(value: object) -> str:
    return json.dumps(value) if isinstance(value, str | bool) else repr(value)


# TOML takes any character but DEL raw or as a \\u escape (json.dumps writes both forms)
REASONS = st.text(st.characters(max_codepoint=0xFFFF, blacklist_categories=["Cs"],
                                blacklist_characters="\x7f"), max_size=MAX_REASON + 40)
VALUES = st.one_of(
    REASONS.map(lambda r: "none: " + r),
    REASONS.map(lambda r: "none:" + r),
    REASONS,
    st.sampled_from(["none", "none:", "None: x", "skip", "off", " none: x", "nothing: x"]),
    st.integers(-5, 5), st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
)


@settings(max_examples=150, deadline=None)
@given(value=VALUES)
def test_validate_none_takes_a_reason_and_nothing_else(tmp_path_factory: pytest.TempPathFactory,
                                                      value: object) -> None:
    tmp = tmp_path_factory.mktemp("p")
    path = _profile(tmp, f"validate = {_toml_value(value)}")
    m = re.fullmatch(r"none:[ \t]*(\S[^\n]*)", value.strip()) if isinstance(value, str) else None
    reason = one_line(m.group(1)).strip() if m else ""
    try:
        wl = load_profile(path)
    except ProfileError as exc:
        msg = str(exc)
        assert "\n" not in msg and msg.startswith(f"{path}:3: "), msg
        assert not reason or len(reason) > MAX_REASON
        return
    assert reason and len(reason) <= MAX_REASON
    assert wl.no_validation == reason and not wl.validates


@pytest.mark.parametrize("text,message", [
    ('[validate]\nafter_match = \'answer: (\\d+)\'',
     r"demo.toml:4: after_match reads what the \[run\] after step prints"),
    ('[validate]\nafter_match = \'answer: \\d+\'', r"demo.toml:4: 'after_match' needs one capture"),
    ('[validate]\nnone = "x"', r"demo.toml:4: \[validate\] has no key 'none'"),
])
def test_after_match_needs_an_after_step_and_a_group(tmp_path: Path, text: str,
                                                     message: str) -> None:
    with pytest.raises(ProfileError, match=message):
        load_profile(_profile(tmp_path, text))


REASON = "timing only: \x1b[31mthe <b>output</b> | is random\x1b[0m, =cmd"


def test_the_reason_is_printed_by_every_report_format(cli: Cli, tmp_path: Path) -> None:
    path = _profile(tmp_path, f"validate = {json.dumps('none: ' + REASON)}")
    md, csv_file, html = tmp_path / "r.md", tmp_path / "r.csv", tmp_path / "r.html"
    r = cli("run", str(path), "--abi", "x86_64", "--rounds", "1", "--warmup", "0",
            "--html", str(html))
    assert r.returncode == 0, r.stderr
    rep = cli("report", "--markdown", str(md), "--csv", str(csv_file))
    assert rep.returncode == 0, rep.stderr
    shown = one_line(REASON)  # the escape sequences removed, as every format receives it
    assert f"output check: not validated: {shown}" in r.stdout
    assert "\x1b" not in r.stdout and "no validation value" not in r.stdout
    assert "not validated: timing only: the \\<b\\>output\\</b\\> \\| is random" in md.read_text()
    assert "not validated: timing only: the &lt;b&gt;output&lt;/b&gt; | is random" in \
        html.read_text()
    rows = list(csv.DictReader(io.StringIO(csv_file.read_text())))
    assert rows and {row["validation_detail"] for row in rows} == {f"not validated: {shown}"}
    j = cli("report", "--json")
    assert j.returncode == 0, j.stderr
    assert f'"validation_detail": {json.dumps("not validated: " + shown)}' in j.stdout
    # stored with the run, so an export imported elsewhere reports the same reason
    exported = json.loads(cli("export").stdout)
    assert exported["run"]["config"]["workloads"]["demo"]["no_validation"] == shown
