"""Outputs never touch inputs (src/abibench/outputs.py), tried on generated paths.

Every option that writes a file, given a path that is (through a symlink, a symlinked directory,
`..`, `.`, `//`, a relative path or a hard link) the results database or a file SQLite keeps
beside it, a profile or source file the command reads, an exported run it reads, or a file in
the cache or the data directory's internals: the command refuses with one line and exit 2, and
the protected file is exactly what it was. The command line runs in this process (the real
`main`, on real files): a subprocess per case would cost seconds of imports each.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.cli import main

ErrorLine = Callable[[int, str, int], str]

PROFILE = """id = "inv-metric"
title = "invariant test"
primary = "value"
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

# bench/invariants.py runs these tests with more examples (a multiple of each test's own).
SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))


@dataclass
class World:
    root: Path
    db: Path
    profile: Path
    source: Path
    exported: Path
    other: Path
    cache_file: Path
    kept_profile: Path
    counter: itertools.count[int]

    def fresh(self) -> Path:
        d = self.root / "aliases" / str(next(self.counter))
        d.mkdir(parents=True)
        return d


@pytest.fixture
def world(tmp_path: Path, fixtures: Path, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str], make_doc: Callable[..., dict[str, object]]) -> World:
    data, cache = tmp_path / "data", tmp_path / "cache"
    monkeypatch.setenv("ABIBENCH_DATA", str(data))
    monkeypatch.setenv("ABIBENCH_CACHE", str(cache))
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("ABIBENCH_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "metric.c").write_bytes((fixtures / "metric.c").read_bytes())
    (proj / "inv.toml").write_text(PROFILE)
    exported, other = tmp_path / "a.json", tmp_path / "b.json"
    exported.write_text(json.dumps(make_doc()))
    other.write_text(json.dumps(make_doc(run_id="20260101-000000-bbbb", host="hw")))
    assert main(["import", str(exported)]) == 0
    (cache / "builds").mkdir(parents=True)
    (cache / "builds" / "artifact.json").write_text("{}")
    (data / "profiles").mkdir(parents=True)
    (data / "profiles" / "kept.toml").write_text(PROFILE)
    capsys.readouterr()
    return World(tmp_path, data / "results.sqlite", proj / "inv.toml", proj / "metric.c",
                 exported, other, cache / "builds" / "artifact.json",
                 data / "profiles" / "kept.toml", itertools.count())


# A writing command: its argv for an output path, and which of the world's files it reads.
Command = tuple[str, Callable[[World, str], list[str]], tuple[str, ...]]
NO_RUN = "20990101-000000-none"
ALWAYS = ("db", "db-wal", "db-shm", "db-journal", "cache_file", "kept_profile")
COMMANDS: list[Command] = [
    ("export -o", lambda w, p: ["export", "latest", "-o", p], ALWAYS),
    ("report --html", lambda w, p: ["report", "latest", "--html", p], ALWAYS),
    ("report --markdown", lambda w, p: ["report", "--markdown", p], ALWAYS),
    ("report --csv", lambda w, p: ["report", "latest", "--csv", p], ALWAYS),
    ("report --samples-csv", lambda w, p: ["report", "latest", "--samples-csv", p], ALWAYS),
    ("report FILE --markdown", lambda w, p: ["report", str(w.exported), "--markdown", p],
     (*ALWAYS, "exported")),
    ("compare FILES --csv", lambda w, p: ["compare", str(w.exported), str(w.other), "--csv", p],
     (*ALWAYS, "exported", "other")),
    ("run --report", lambda w, p: ["run", str(w.profile), "--abi", "x86_64", "--report", p],
     (*ALWAYS, "profile", "source")),
    ("run --html", lambda w, p: ["run", str(w.profile), "--abi", "x86_64", "--html", p],
     (*ALWAYS, "profile", "source")),
    ("fleet run --html", lambda w, p: ["fleet", "run", str(w.root / "inventory.ini"),
                                       str(w.profile), "--html", p],
     (*ALWAYS, "profile", "source")),
    # A system run checks its outputs before it builds or boots anything; the resume of a run
    # that does not exist ends the command right after, should a check ever let one through.
    ("system run --json", lambda w, p: ["system", "run", "minimal", "--combo", "amd64:x86_64",
                                        "--resume", NO_RUN, "--json", p], ALWAYS),
    ("system run --keep-reports", lambda w, p: ["system", "run", "minimal", "--combo",
                                                "amd64:x86_64", "--resume", NO_RUN,
                                                "--keep-reports", p], ALWAYS),
]


def target_path(w: World, name: str) -> Path:
    if name.startswith("db-"):
        return w.db.with_name(w.db.name + name[2:])
    return {"db": w.db, "profile": w.profile, "source": w.source, "exported": w.exported,
            "other": w.other, "cache_file": w.cache_file, "kept_profile": w.kept_profile}[name]


DIR_FORMS = ("real", "relative", "dotdot", "dot", "slashes", "dir-symlink")
NAME_FORMS = ("name", "symlink", "relative-symlink", "chain", "hardlink")


def alias(w: World, target: Path, dir_form: str, name_form: str) -> str:
    """A path that names `target` without being its plain absolute path."""
    here = w.fresh()
    name = target.name
    if name_form != "name":
        if name_form == "hardlink" and target.is_file():
            os.link(target, here / "hard")
        elif name_form == "relative-symlink":
            (here / "link").symlink_to(os.path.relpath(target, here))
        elif name_form == "chain":
            (here / "first").symlink_to(target)
            (here / "link").symlink_to(here / "first")
        else:
            (here / "link").symlink_to(target)
        name = "hard" if (here / "hard").exists() else "link"
        parent = here
    else:
        parent = target.parent
    if dir_form == "relative":
        return os.path.relpath(parent / name, w.root)
    if dir_form == "dotdot":
        (parent / "sub").mkdir(exist_ok=True)
        return f"{parent}/sub/../{name}"
    if dir_form == "dot":
        return f"{parent}/./{name}"
    if dir_form == "slashes":
        return f"{parent}//{name}"
    if dir_form == "dir-symlink":
        (here / "dir").symlink_to(parent, target_is_directory=True)
        return f"{here}/dir/{name}"
    return str(parent / name)


def snapshot(path: Path) -> tuple[bool, str]:
    return (path.exists(), hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "")


def guarded_file(w: World, name: str) -> Path:
    """What must not change: SQLite itself creates and empties the -wal and -shm files of a
    database it opens, so for those it is the database they belong to."""
    return w.db if name.startswith("db") else target_path(w, name)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Command, str, str, str]:
    command = draw(st.sampled_from(COMMANDS))
    name = draw(st.sampled_from(command[2]))
    # Hard links are recognised (by inode) for the files a command opened; one to a file of a
    # protected directory is a name of its own, and the atomic rename replaces only that name.
    forms = NAME_FORMS if name not in ("cache_file", "kept_profile") else NAME_FORMS[:-1]
    return command, name, draw(st.sampled_from(DIR_FORMS)), draw(st.sampled_from(forms))


@settings(max_examples=40 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_no_output_option_writes_over_an_input(world: World, capsys: pytest.CaptureFixture[str],
                                               error_line: ErrorLine,
                                               case: tuple[Command, str, str, str]) -> None:
    (label, argv, _), name, dir_form, name_form = case
    target = target_path(world, name)
    before = snapshot(guarded_file(world, name))
    given_path = alias(world, target, dir_form, name_form)
    code = main(argv(world, given_path))
    _, err = capsys.readouterr()
    line = error_line(code, err, 2)
    assert "never writes over" in line or "is a directory" in line, (label, given_path, line)
    assert snapshot(guarded_file(world, name)) == before, f"{label} {given_path} changed {target}"


@settings(max_examples=8 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from([c for c in COMMANDS if c[0].split()[0] in ("report", "compare",
                                                                              "export")]),
       dir_form=st.sampled_from(DIR_FORMS))
def test_an_output_beside_the_inputs_is_written(world: World, capsys: pytest.CaptureFixture[str],
                                                command: Command, dir_form: str) -> None:
    """The control: the same options and path forms, on a new file, write it."""
    label, argv, _ = command
    out = world.fresh() / "out.txt"
    given_path = alias(world, out, dir_form, "name")
    code = main(argv(world, given_path))
    _, err = capsys.readouterr()
    assert code == 0 and out.is_file() and out.stat().st_size > 0, (label, given_path, err)
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")], "a temporary is left"


def test_a_failed_write_keeps_the_old_file(world: World, mounts: Any, error_line: ErrorLine,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Atomic: the report is written to a temporary beside it, then renamed; a disk that fills
    up meanwhile leaves the old report whole."""
    small = mounts.tmpfs("64k")
    old = small / "report.html"
    old.write_bytes(b"old report\n" * 4000)
    assert main(["report", "latest", "--html", str(old)]) == 2  # the HTML is > 100 kB
    _, err = capsys.readouterr()
    assert "No space left" in error_line(2, err, 2)
    assert old.read_bytes() == b"old report\n" * 4000
    assert sorted(p.name for p in small.iterdir()) == ["report.html"]


@pytest.mark.parametrize("device", ["/dev/null", "/dev/stderr"])
def test_a_device_is_written_in_place(world: World, capsys: pytest.CaptureFixture[str],
                                      device: str) -> None:
    """A device or a descriptor's name cannot be renamed over: it is written as it is."""
    assert main(["report", "latest", "--csv", device]) == 0, capsys.readouterr().err
