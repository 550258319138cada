"""Every built-in workload proves its output; a user's profile may say why it cannot.

The family: a workload whose output is timed and compared although nothing checks it (a broken
build, a crashed sub-test, a wrong result measured like a correct one). The one rule: every
instance of every built-in profile (each [sweep] value, each [[validate.when]] case) compares
something across ABIs; a user's profile may instead say validate = "none: REASON", and that
reason is what every report prints where the check would be.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.analyse.results import validate_outputs, where_they_differ
from abibench.errors import ProfileError
from abibench.records import JSON, JSONDict, Sample
from abibench.run.launcher import RawResult
from abibench.run.samples import sample_from
from abibench.text import one_line
from abibench.workloads.profile import (
    MAX_REASON,
    Workload,
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


# -- the eight profiles' checks on outputs captured from Debian's i386 and amd64 builds --------

CAPTURED = Path(__file__).parents[1] / "data" / "validate"
ABIS = ("i386", "amd64")


@dataclass(frozen=True)
class Captured:
    """A profile instance, what its program printed and what its after step printed per ABI
    (tests/data/validate/PROFILE-{stdout,after}-ABI.txt, where the profile reads it)."""

    profile: str
    params: tuple[tuple[str, str], ...] = ()

    @property
    def workload(self) -> Workload:
        wl = load_profile(builtin_profiles()[self.profile])
        return wl.with_params(dict(self.params)).with_validation() if self.params else wl

    def text(self, kind: str, abi: str) -> str | None:
        p = CAPTURED / f"{self.profile}-{kind}-{abi}.txt"
        return p.read_text() if p.is_file() else None


CASES = (Captured("deb-7z"), Captured("deb-openssl"), Captured("deb-gcc"),
         Captured("node-octane"), Captured("mariadb-sysbench"),
         Captured("mariadb-sysbench", (("test", "oltp_read_write"),)))


def _raw(stdout: str) -> RawResult:
    return RawResult(status="exited", exit_code=0, signal=0, wall_s=1.0, user_s=0.9, sys_s=0.1,
                     max_rss_kb=1000, minflt=0, majflt=0, errno=0,
                     stdout_digest=hashlib.sha256(stdout.encode()).hexdigest(), stdout=stdout,
                     stderr_tail="")


def _sample(wl: Workload, target: str, stdout: str, after: str | None) -> Sample:
    return sample_from(_raw(stdout), wl, "run", target, 1, 0, False, "2026-01-01T00:00:00Z", 0,
                       [], after_out=after)


def _outcome(case: Captured, outputs: dict[str, tuple[str, str | None]]) -> tuple[str, list[str]]:
    """The output check of one sample per ABI, and the errors of the samples that failed."""
    wl = case.workload
    samples = [_sample(wl, abi, out, after) for abi, (out, after) in outputs.items()]
    failed = [s.error or s.status for s in samples if s.status != "ok"]
    return validate_outputs(samples, list(outputs), wl.validates)[0], failed


def _outputs(case: Captured) -> dict[str, tuple[str, str | None]]:
    return {abi: (case.text("stdout", abi) or "", case.text("after", abi)) for abi in ABIS}


def _case_id(case: Captured) -> str:
    return case.profile + "".join(f"[{k}={v}]" for k, v in case.params)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_captured_outputs_of_both_abis_validate(case: Captured) -> None:
    assert _outcome(case, _outputs(case)) == ("ok", [])


def _spans(case: Captured, abi: str) -> list[tuple[str, int, int]]:
    """Where in the captured outputs of one ABI the compared text is: (kind, start, end)."""
    wl, out = case.workload, _outputs(case)[abi]
    spans = []
    for kind, rx, text in (("stdout", wl.stdout_match, out[0]), ("after", wl.after_match, out[1])):
        found = rx.span(text or "") if rx is not None else None
        if found is not None and found[1] > found[0]:
            spans.append((kind, found[0], found[1]))
    return spans


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_any_change_to_what_is_compared_is_caught(data: st.DataObject) -> None:
    """One character of the compared text changed in one ABI's output (a digit of a known
    answer, a counter, a sub-test's name): a failed sample or a MISCOMPARE, never "ok"."""
    case = data.draw(st.sampled_from(CASES), label="profile")
    abi = data.draw(st.sampled_from(ABIS), label="abi")
    kind, start, end = data.draw(st.sampled_from(_spans(case, abi)), label="where")
    pos = data.draw(st.integers(start, end - 1), label="position")
    outputs = _outputs(case)
    stdout, after = outputs[abi]
    text = stdout if kind == "stdout" else after or ""
    char = data.draw(st.characters(min_codepoint=32, max_codepoint=126)
                     .filter(lambda c: c != text[pos]), label="character")
    changed = text[:pos] + char + text[pos + 1:]
    outputs[abi] = (changed, after) if kind == "stdout" else (stdout, changed)
    validation, failed = _outcome(case, outputs)
    assert validation == "miscompare" or failed, (validation, failed)


OCTANE_TESTS = ("Richards", "DeltaBlue", "Crypto", "RayTrace", "EarleyBoyer", "RegExp", "Splay",
                "SplayLatency", "NavierStokes", "PdfJS", "Mandreel", "MandreelLatency", "Gameboy",
                "CodeLoad", "Box2D", "zlib", "Typescript")


@settings(max_examples=40, deadline=None)
@given(test=st.sampled_from(OCTANE_TESTS), abi=st.sampled_from(ABIS),
       error=st.sampled_from(["TypeError: x is undefined", "RangeError: Maximum call stack size "
                              "exceeded", "Error: 42", "undefined"]))
def test_a_sub_test_that_throws_fails_its_sample(test: str, abi: str, error: str) -> None:
    """As the package's runner prints it: the error in place of the score, no Score line."""
    case = Captured("node-octane")
    outputs = _outputs(case)
    lines = outputs[abi][0].splitlines(keepends=True)
    lines = [(f"{test:20}: {error}\n" if ln.startswith(f"{test:20}: ") else ln) for ln in lines
             if not ln.startswith(("----", "Score (version"))]
    outputs[abi] = ("".join(lines), None)
    assert _outcome(case, outputs)[1]


@settings(max_examples=40, deadline=None)
@given(counter=st.sampled_from(["ignored errors", "reconnects"]), n=st.integers(1, 10**6),
       abi=st.sampled_from(ABIS))
def test_a_failed_query_or_lost_connection_fails_the_sample(counter: str, n: int,
                                                            abi: str) -> None:
    case = Captured("mariadb-sysbench")  # read-only and point-select: no error tolerated
    outputs = _outputs(case)
    stdout = re.sub(rf"(?m)^(\s+{counter}:\s+)0(\s+)\(0\.00 per sec\.\)$",
                    lambda m: f"{m.group(1)}{n}{m.group(2)}({n / 10:.2f} per sec.)",
                    outputs[abi][0])
    assert stdout != outputs[abi][0]
    outputs[abi] = (stdout, outputs[abi][1])
    failed = _outcome(case, outputs)[1]
    assert failed and "validation pattern" in failed[0]


def test_a_known_answer_from_the_after_step_passes_or_fails_the_sample(
        cli: Cli, tmp_path: Path) -> None:
    """End to end: the after step's output reaches [validate] after_match; a wrong known answer
    fails every sample with the reason, and the run says so."""
    base = _profile(tmp_path, "").read_text().replace(
        'timeout = "30s"', 'after = ["{bin}/metric", "0"]\ntimeout = "30s"')
    paths = []
    for answer in ("same", "other"):
        path = tmp_path / f"{answer}.toml"
        path.write_text(base.replace('id = "demo"', f'id = "{answer}"')
                        + f"[validate]\nafter_match = '(?m)^checksum: ({answer})$'\n")
        paths.append(str(path))
    r = cli("run", *paths, "--abi", "x86_64", "--rounds", "1", "--warmup", "0", "--no-html")
    assert r.returncode != 0 and "other" in r.stderr.strip().splitlines()[-1]
    samples = json.loads(cli("export").stdout)["samples"]
    good = [s for s in samples if s["workload"] == "same"]
    bad = [s for s in samples if s["workload"] == "other"]
    assert good and all(s["status"] == "ok" and s["check"] == "same" for s in good)
    assert bad and all(s["status"] == "failed" and "not found in what the [run] after step "
                       "printed (last line: 'checksum: same')" in s["error"] for s in bad)


@settings(max_examples=200, deadline=None)
@given(prefix=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80),
       a=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
       b=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30))
def test_a_miscompare_shows_where_the_outputs_differ(prefix: str, a: str, b: str) -> None:
    """However long the part every ABI printed alike (a counter's label), the detail shows the
    difference: a MISCOMPARE that printed two equal-looking values would explain nothing."""
    if a == b:
        return
    shown = where_they_differ([prefix + a, prefix + b])
    assert shown[0] != shown[1] and all(len(s) <= 25 for s in shown)


def _page(suites: list[str]) -> str:
    """What a chromium-octane sample's output is: the page's result as run/browser.py writes
    it (the fields octane.js fills; the scores are the run's)."""
    from abibench.run.browser import PageOutcome, with_result

    result: JSONDict = {
        "schema": "abibench-octane/1", "version": "9", "complete": False,
        "results": {n: 1000.0 + i for i, n in enumerate(suites)}, "score": 1000.0,
        "suites": list[JSON](suites), "load_ms": 10, "run_ms": 20, "user_agent": "HeadlessChrome"}
    return with_result(_raw(""), PageOutcome(result=result)).stdout


@settings(max_examples=40, deadline=None)
@given(suites=st.lists(st.sampled_from(OCTANE_TESTS), min_size=1, unique=True),
       drop=st.integers(0, 16))
def test_the_browser_octane_compares_which_sub_tests_scored(suites: list[str],
                                                            drop: int) -> None:
    wl = load_profile(builtin_profiles()["chromium-octane"])
    fewer = [s for i, s in enumerate(suites) if i != drop % len(suites)]
    same = [_sample(wl, t, _page(suites), None) for t in ("i386", "amd64")]
    assert validate_outputs(same, ["i386", "amd64"], wl.validates)[0] == "ok"
    differ = [_sample(wl, "i386", _page(suites), None), _sample(wl, "amd64", _page(fewer), None)]
    outcome, detail = validate_outputs(differ, ["i386", "amd64"], wl.validates)
    assert outcome == "miscompare" or any(s.status != "ok" for s in differ), detail


@pytest.mark.needs_apt
def test_deb_openssl_proves_its_answer_and_a_wrong_one_fails(cli: Cli, cli_env: dict[str, str],
                                                             debian_cache: Path,
                                                             tmp_path: Path) -> None:
    """End to end with Debian's i386 and amd64 openssl: the known digest passes on both; a copy
    of the profile expecting another digest fails every sample with the reason."""
    env = {**cli_env, "ABIBENCH_CACHE": str(debian_cache)}
    builtin = builtin_profiles()["deb-openssl"]
    text = builtin.read_text().replace('id = "deb-openssl"', 'id = "wrong-digest"')
    right = "258424e016354758373b7c6304c0a816440d4ea537765074f03a4c033defeebd"
    assert text.count(right) == 1
    (tmp_path / "deb").mkdir()
    (tmp_path / "deb" / "known.7z").write_bytes((builtin.parent / "deb" / "known.7z").read_bytes())
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(text.replace(right, right[::-1]))
    r = cli("run", "deb-openssl", str(wrong), "--provenance", "debian", "--abi", "i386,x86_64",
            "--rounds", "1", "--warmup", "0", "--set", "seconds=1", "--no-html", env=env)
    assert r.returncode == 1, r.stderr
    assert "output check: identical on i386, x86_64" in r.stdout
    samples = json.loads(cli("export", env=env).stdout)["samples"]
    good = [s for s in samples if s["workload"] == "deb-openssl"]
    bad = [s for s in samples if s["workload"] == "wrong-digest"]
    assert len(good) == 2 and all(s["status"] == "ok" for s in good)
    assert {s["check"] for s in good} == {right}
    assert len(bad) == 2 and all(s["status"] == "failed" and "SHA2-256" in s["error"]
                                 and right in s["error"] for s in bad)
