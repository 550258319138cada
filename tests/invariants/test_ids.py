"""Identifiers are never paths (src/abibench/ids.py), tried on generated identifiers.

The rule itself: whatever `check_id` accepts is one file name inside its directory. Every entry
of the command line that takes an identifier (run ids, labels, fleet ids, tags, a --binary
workload's name, a profile's id and its [sweep] values) refuses a hostile one (`/`, `..`, NUL,
control and bidi characters, whitespace, thousands of characters) with one line and exit 2, and
no file appears anywhere. The command line runs in this process (the real `main`).
"""

from __future__ import annotations

import json
import os
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from abibench.cli import main
from abibench.ids import ID_MAX, BadId, check_id, file_name, id_problem, sweep_value_problem

ErrorLine = Callable[[int, str, int], str]
ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+=,:@[]~-"

# bench/invariants.py runs these tests with more examples (a multiple of each test's own).
SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))


def _hostile_piece() -> st.SearchStrategy[str]:
    return st.sampled_from(["/", "..", "../", "../../x", "/etc/passwd", "\x00", "\n", "\r",
                            "\x1b[31m", "\u202e", "\u2066", " ", "\t", ".", "~/x", "\\",
                            "a/b", "\x7f", "\u200b"])


# Mostly plausible ids with something hostile in them, and some long or arbitrary text.
HOSTILE = st.one_of(
    st.builds(lambda a, h, b: a + h + b, st.text(ID_CHARS, max_size=12), _hostile_piece(),
              st.text(ID_CHARS, max_size=12)),
    st.text(ID_CHARS, min_size=ID_MAX + 1, max_size=4000),
    st.text(max_size=40),
    st.sampled_from(["", ".", "..", "-rf", ".hidden", "[x]"]),
).filter(lambda s: id_problem(s) is not None)


@settings(max_examples=400 * SCALE, deadline=None)
@given(value=st.one_of(st.text(max_size=200), st.text(ID_CHARS, max_size=200), HOSTILE))
def test_what_the_rule_accepts_is_one_name_inside_its_directory(value: str) -> None:
    problem = id_problem(value)
    if problem is None:
        name = file_name("run id", value, ".html")
        assert "/" not in name and "\x00" not in name and name not in (".", "..")
        assert not name.startswith((".", "-", "~")) and len(value) <= ID_MAX
        assert all(unicodedata.category(c)[0] not in "CZ" for c in value)
        base = "/data/reports"
        assert os.path.dirname(os.path.normpath(os.path.join(base, name))) == base
    else:
        with pytest.raises(BadId) as caught:
            check_id("run id", value)
        assert "\n" not in str(caught.value) and len(str(caught.value)) < 400
        with pytest.raises(BadId):
            file_name("run id", value, ".html")


@settings(max_examples=200 * SCALE, deadline=None)
@given(value=st.text(max_size=40))
def test_a_sweep_value_accepted_makes_an_id_accepted(value: str) -> None:
    if sweep_value_problem(value) is None:
        assert id_problem(f"list[n={value}]") is None
        assert id_problem(f"list[n={value},m=1]") is None


def _profile(wid: str, sweep: str | None = None) -> str:
    # JSON strings are TOML basic strings (a value TOML cannot hold is refused as bad TOML:
    # refused all the same).
    text = (f"id = {json.dumps(wid, ensure_ascii=False)}\ntitle = \"t\"\nprimary = \"value\"\n"
            "[params]\nn = \"1\"\n")
    if sweep is not None:
        text += f"[sweep]\nn = [{json.dumps(sweep, ensure_ascii=False)}]\n"
    return text + ('[source]\nfiles = ["metric.c"]\nartifacts = ["metric"]\n[run]\n'
                   'command = ["{bin}/metric", "{n}"]\ntimeout = "30s"\n[[metric]]\n'
                   'name = "value"\nparse = { regex = \'(?m)^value: ([0-9.]+)$\' }\n'
                   'unit = "units"\nbetter = "higher"\n')


def _entry(world: Path, entry: str, value: str) -> list[str]:
    proj = world / "proj"
    if entry == "profile id":
        (proj / "p.toml").write_text(_profile(value), encoding="utf-8", errors="surrogatepass")
        return ["run", str(proj / "p.toml"), "--abi", "x86_64"]
    if entry == "sweep value":
        (proj / "p.toml").write_text(_profile("p", value), encoding="utf-8",
                                     errors="surrogatepass")
        return ["run", str(proj / "p.toml"), "--abi", "x86_64"]
    return {
        "run --resume": ["run", "--resume", value],
        "run --label": ["run", str(proj / "ok.toml"), "--abi", "x86_64", "--label", value],
        "run --fleet": ["run", str(proj / "ok.toml"), "--abi", "x86_64", "--fleet", value],
        "report --tag": ["report", "latest", "--tag", value],
        "report RUN": ["report", "--", value] if value.startswith("-") else ["report", value],
        "export RUN": ["export", value, "-o", str(world / "out.json")],
        "compare --tag": ["compare", "latest", "latest", "--tag", value, "--tag", "b"],
        "run --binary --name": ["run", "--binary", "x86_64=/bin/true", "--binary",
                                "i386=/bin/true", "--name", value],
    }[entry]


ENTRIES = ["run --resume", "run --label", "run --fleet", "report --tag", "compare --tag",
           "run --binary --name", "profile id", "sweep value", "report RUN", "export RUN"]


def _tree(root: Path) -> set[str]:
    """Every name under root, but the files SQLite makes and removes beside the database."""
    return {os.path.relpath(os.path.join(d, n), root) for d, dirs, names in os.walk(root)
            for n in (*dirs, *names) if not n.endswith(("-wal", "-shm", "-journal"))}


@pytest.fixture
def world(tmp_path: Path, fixtures: Path, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str], make_doc: Callable[..., dict[str, object]]) -> Path:
    # Deep, so that `../../x` from the data directory's reports/ still lands in this tree.
    data = tmp_path / "a" / "b" / "data"
    monkeypatch.setenv("ABIBENCH_DATA", str(data))
    monkeypatch.setenv("ABIBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("ABIBENCH_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "metric.c").write_bytes((fixtures / "metric.c").read_bytes())
    (proj / "ok.toml").write_text(_profile("ok"))
    (tmp_path / "a.json").write_text(json.dumps(make_doc()))
    assert main(["import", str(tmp_path / "a.json")]) == 0
    capsys.readouterr()
    return tmp_path


@settings(max_examples=80 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=st.sampled_from(ENTRIES), value=HOSTILE)
def test_every_entry_refuses_a_hostile_id_in_one_line(world: Path, entry: str, value: str,
                                                      capsys: pytest.CaptureFixture[str],
                                                      error_line: ErrorLine) -> None:
    if entry in ("sweep value",):
        assume(sweep_value_problem(value) is not None)
    if entry in ("run --binary --name", "export RUN"):
        assume(not value.startswith("-"))  # an option to argparse, refused as usage anyway
    before = _tree(world) - {"proj/p.toml"}
    code = main(_entry(world, entry, value))
    _, err = capsys.readouterr()
    error_line(code, err, 2)
    after = _tree(world) - {"proj/p.toml"}
    assert after == before, f"{entry} {value!r} created {sorted(after - before)[:5]}"
    if value.startswith("/") and "\x00" not in value:
        assert not os.path.lexists(value + ".html") and not os.path.lexists(value + ".json")
