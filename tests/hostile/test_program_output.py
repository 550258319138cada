"""A measured program that attacks the terminal, or prints numbers that are not: the run, its
report and its export stay readable, and nothing the program wrote is obeyed by the terminal."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
FIXTURES = Path(__file__).parents[1] / "fixtures"
HOSTILE = str(FIXTURES / "hostile.toml")

# What a terminal would obey: C0 but tab and newline, DEL, C1, bidi overrides and isolates.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _clean(r: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in r.stderr, r.stderr
    assert not UNSAFE.search(r.stdout + r.stderr), repr(UNSAFE.search(r.stdout + r.stderr))


def test_stderr_title_and_unit_are_shown_not_obeyed(cli: Cli) -> None:
    r = cli("run", HOSTILE, "--abi", "i386,x86_64", "--rounds", "2", "--no-html")
    assert r.returncode == 0, r.stdout + r.stderr
    _clean(r)
    out = r.stdout
    assert "Hostile [bold]title[/bold] :x: [link=file:///etc/passwd]here" in out
    assert "value in ops[/bold], higher is better" in out
    assert "❌" not in out  # ":x:" is text, not an emoji

    r = cli("run", HOSTILE, "--abi", "x86_64", "--rounds", "2", "--set", "mode=fail",
            "--no-html")
    assert r.returncode == 1, r.stdout + r.stderr
    _clean(r)
    # The program's last line of stderr, its escape sequences gone and its markup as text.
    assert "exit code 2: link\ufffdgnp.exe[bold]boom[/bold][link=file:///etc/passwd]x" in r.stdout


def test_a_metric_that_is_not_finite_fails_and_every_report_still_works(
        cli: Cli, db_file: Path, tmp_path: Path) -> None:
    r = cli("run", HOSTILE, "--abi", "x86_64", "--rounds", "2", "--set", "mode=1e999",
            "--no-html")
    assert r.returncode == 1, r.stdout[-1500:] + r.stderr[-1500:]
    _clean(r)
    rows = sqlite3.connect(db_file).execute("SELECT status, error FROM samples").fetchall()
    assert rows and all(status == "failed" for status, _ in rows)
    assert {error for _, error in rows} == {"metric 'value': '1e999' is not a finite number"}
    assert "metric 'value': '1e999' is not a finite number" in r.stdout

    exported = tmp_path / "run.json"
    for args in (("report",), ("report", "--json"),
                 ("report", "--html", str(tmp_path / "r.html"), "--csv", str(tmp_path / "r.csv")),
                 ("export", "-o", str(exported)), ("import", str(exported))):
        r = cli(*args)
        assert r.returncode == 0, (args, r.stderr)
        _clean(r)
    assert "NaN" not in exported.read_text() and "Infinity" not in exported.read_text()


@pytest.mark.parametrize(("i386", "x86_64", "which"), [("-10", "-5", "i386"), ("1", "0", "x86_64")],
                         ids=["negative", "zero"])
def test_values_not_all_positive_give_a_reason_never_a_verdict(
        cli: Cli, tmp_path: Path, i386: str, x86_64: str, which: str) -> None:
    # The case 4: with -10 on i386 and -5 on x86_64, higher being better, the ratio
    # said "x86_64 is 100.0% faster" though i386's value was the higher one.
    (tmp_path / "metric.c").write_bytes((FIXTURES / "metric.c").read_bytes())
    prof = tmp_path / "signs.toml"
    prof.write_text(
        'id = "signs"\ntitle = "signs"\nprimary = "value"\n'
        '[source]\nfiles = ["metric.c"]\nartifacts = ["metric"]\n'
        '[run]\ncommand = ["sh", "-c", "{bin}/metric 0 > /dev/null && case {abi} in '
        f"i386) echo 'value: {i386}';; *) echo 'value: {x86_64}';; esac\"]\n"
        'timeout = "30s"\n[[metric]]\nname = "value"\n'
        "parse = { regex = '(?m)^value: (\\S+)$' }\nunit = \"units\"\nbetter = \"higher\"\n")
    reason = f"value: {which} has values <= 0: a ratio of them means nothing, no verdict"
    r = cli("run", str(prof), "--abi", "i386,x86_64", "--rounds", "3", "--warmup", "0",
            "--no-html")
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    md = tmp_path / "r.md"
    assert cli("report", "latest", "--markdown", str(md)).returncode == 0
    # Markdown escapes "_" and "<": read it as the text it shows.
    for out in (r.stdout, cli("report", "latest").stdout, md.read_text().replace("\\", "")):
        text = " ".join(out.split())
        assert reason in text, out[-2000:]
        assert "value ratio" not in text and "faster" not in text and "slower" not in text
