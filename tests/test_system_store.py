"""A system run in the results database: stored boot by boot, listed, reported, exported and
imported; a hostile system document is refused in one line and nothing of it stored.

The boots are made by the real path from a guest's frames (tests/sysframes.py, parsed by
run/sysboot.py, made records by run/sysrecord.py; the real boots are
tests/test_system_boot.py's); the hostile documents are generated: any leaf of a system boot or
of the run's system configuration replaced by what no guest reports.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench import __version__
from abibench.analyse.system import analyse_doc
from abibench.cli.system import resume_plan, system_sink
from abibench.probe.host import capture
from abibench.records import Run, RunConfig
from abibench.report import system as shown
from abibench.run.sysboot import X86, Combination, boot_order, pending_boots
from abibench.run.sysrecord import SAME_SYSTEM, system_mismatch
from abibench.store.exchange import SchemaError, load_file
from abibench.store.open import open_store
from abibench.store.spool import SpooledSink
from abibench.sysrecords import MAX_TEXT, SystemBoot, SystemConfig

from .sysframes import system_boot, system_config

Cli = Callable[..., Any]
COMBOS = ("amd64:i386", "amd64:x86_64")
# The fields that are mappings (their keys are data, unlike a record's, whose unknown keys a
# later version may have added and are ignored)
MAPPINGS = ("meminfo", "kernel_image", "threads", "kernels", "images")


def _boot(index: int, combo: str, used_kb: int, complete: bool = True) -> SystemBoot:
    return system_boot(index, combo, used_kb, complete)


def _config(boots: int = 2) -> SystemConfig:
    return system_config(COMBOS, boots)


def _store_run(db: str, boots: list[SystemBoot], status: str = "complete") -> str:
    store = open_store(db)
    try:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        store.create_run(Run("20261126-150000-abcd0123", now, None, "running", __version__,
                             RunConfig(system=_config())), capture())
        for b in boots:
            store.add_system_boot("20261126-150000-abcd0123", b)
        store.finish_run("20261126-150000-abcd0123", now, status)
    finally:
        store.close()
    return "20261126-150000-abcd0123"


BOOTS = [_boot(0, COMBOS[0], 330_000), _boot(1, COMBOS[1], 260_000),
         _boot(2, COMBOS[1], 258_000), _boot(3, COMBOS[0], 329_000)]


def test_a_stored_system_run_is_listed_reported_exported_and_imported(cli: Cli,
                                                                      tmp_path: Path) -> None:
    db, other = str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite")
    run_id = _store_run(db, BOOTS)
    assert "complete    system run, 4 boots" in cli("--db", db, "runs").stdout
    page = tmp_path / "r.html"
    done = cli("--db", db, "report", run_id, "--html", str(page), "--markdown",
               str(tmp_path / "r.md"))
    assert done.returncode == 0, done.stderr
    assert "<svg" in page.read_text() and "mariadbd: [heap] 78.1" in page.read_text()
    text = cli("--db", db, "report", run_id).stdout
    assert "amd64 kernel + i386 (idle; 2/2 boots reported)" in text
    assert "threads: mariadbd 11" in text and "disk i386 a1b2" in text
    exported = tmp_path / "sys.json"
    assert cli("--db", db, "export", run_id, "-o", str(exported)).returncode == 0
    assert cli("--db", other, "import", str(exported)).returncode == 0
    mine, theirs = (json.loads(cli("--db", d, "report", run_id, "--json").stdout)
                    for d in (db, other))
    assert mine == theirs and mine["results"][0]["boots_reported"] == 2
    assert cli("--db", db, "report", run_id, "--csv", str(tmp_path / "x.csv")).returncode == 2


def test_an_interrupted_run_reports_the_boots_it_has(tmp_path: Path) -> None:
    db = str(tmp_path / "a.sqlite")
    run_id = _store_run(db, BOOTS[:1], status="interrupted")
    store = open_store(db, readonly=True)
    try:
        doc = store.load_run(run_id)
    finally:
        store.close()
    result = analyse_doc(doc)
    assert result is not None and doc.run.status == "interrupted"
    assert any("3 of the run's 4 boots were not done" in p for p in result.problems)
    assert "amd64 kernel + i386 (idle; 1/1 boots reported)" in "\n".join(
        shown.text_lines(result))


# ------------------------------------------------------------------------- hostile documents


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(node, dict):
        return [x for k, v in node.items() for x in _leaves(v, (*path, k))]
    if isinstance(node, list):
        return [x for i, v in enumerate(node) for x in _leaves(v, (*path, i))]
    return [(path, node)]


def _hostile_for(value: Any) -> st.SearchStrategy[str]:
    """JSON text no guest writes where `value` stands: not finite, too long, the wrong type."""
    wrong = st.sampled_from(['[1]', '{"a": 1}'])
    if isinstance(value, bool):
        return st.one_of(wrong, st.sampled_from(['1', '"true"']))
    if isinstance(value, int | float):
        return st.one_of(wrong, st.sampled_from(['NaN', 'Infinity', '-Infinity', '1e999',
                                                 '"12"']))
    if isinstance(value, str):
        return st.one_of(wrong, st.sampled_from(['5', 'false']),
                         st.integers(MAX_TEXT + 1, 50_000).map(lambda n: json.dumps("x" * n)))
    return st.nothing()


@pytest.fixture(scope="module")
def system_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    db = str(tmp_path_factory.mktemp("sysdoc") / "a.sqlite")
    run_id = _store_run(db, BOOTS)
    store = open_store(db, readonly=True)
    try:
        doc: dict[str, Any] = json.loads(json.dumps(store.load_run_dict(run_id)))
    finally:
        store.close()
    return doc


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_hostile_system_value_is_refused_in_one_line(system_doc: dict[str, Any],
                                                        tmp_path_factory: pytest.TempPathFactory,
                                                        data: st.DataObject) -> None:
    # The family: any leaf of a system boot or of the system configuration (or a key of one of
    # their mappings) made not finite, too long or of the wrong type.
    leaves = [(p, v) for p, v in _leaves(system_doc) if v is not None
              and (p[0] == "system_boots" or p[:3] == ("run", "config", "system"))]
    path, value = data.draw(st.sampled_from(leaves))
    marker = "\u0001HOSTILE\u0001"
    doc = json.loads(json.dumps(system_doc))
    node = doc
    for step in path[:-1]:
        node = node[step]
    if data.draw(st.booleans()) and len(path) > 1 and path[-2] in MAPPINGS:
        node["k" * data.draw(st.integers(MAX_TEXT + 1, 5000))] = node[path[-1]]  # a long key
        text = json.dumps(doc)
    else:
        node[path[-1]] = marker
        text = json.dumps(doc).replace(json.dumps(marker), data.draw(_hostile_for(value)), 1)
    f = tmp_path_factory.mktemp("hostile") / "sys.json"
    f.write_text(text)
    with pytest.raises(SchemaError) as info:
        load_file(f)
    message = str(info.value)
    assert "\n" not in message and len(message) < 1000 and message.startswith(f"{f}: ")


def test_a_hostile_system_import_stores_nothing(cli: Cli, tmp_path: Path, db_rows: Any,
                                                system_doc: dict[str, Any]) -> None:
    doc = json.loads(json.dumps(system_doc))
    doc["system_boots"][1]["phases"]["idle"]["processes"][0]["comm"] = "x" * (MAX_TEXT + 1)
    f, db = tmp_path / "sys.json", str(tmp_path / "a.sqlite")
    f.write_text(json.dumps(doc))
    done = cli("--db", db, "import", str(f))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "$.system_boots[1].phases.idle.processes[0].comm" in done.stderr, done.stderr
    assert db_rows(db, "SELECT COUNT(*) FROM runs") in ([], [(0,)])


def test_the_site_lists_a_system_run_and_links_its_section(cli: Cli, tmp_path: Path) -> None:
    db, site = str(tmp_path / "a.sqlite"), tmp_path / "site"
    _store_run(db, BOOTS)
    done = cli("--db", db, "site", str(site))
    assert done.returncode == 0, done.stderr
    index = (site / "index.html").read_text()
    assert "system server (4 boots)" in index
    pages = [p.read_text() for p in site.rglob("*.html") if p.name != "index.html"]
    assert any("System server" in p and "<svg" in p for p in pages)


def test_resume_is_refused_for_what_it_cannot_resume(cli: Cli, tmp_path: Path,
                                                      make_doc: Callable[..., Any]) -> None:
    db = str(tmp_path / "a.sqlite")
    run_id = _store_run(db, BOOTS)
    programs = tmp_path / "programs.json"
    programs.write_text(json.dumps(make_doc()))
    assert cli("--db", db, "import", str(programs)).returncode == 0
    other = next(line.split()[0] for line in cli("--db", db, "runs").stdout.splitlines()
                 if "samples" in line)
    for ref, system, words in ((run_id, "server", "is complete: nothing to resume"),
                               (run_id, "minimal", "is not a system run of minimal"),
                               (other, "server", "is not a system run of server")):
        done = cli("--db", db, "system", "run", system, "--resume", ref)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert words in done.stderr, done.stderr


# ------------------------------------------------------------------------------ resumed runs


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from(X86), min_size=1, max_size=3, unique=True),
       st.integers(1, 3), st.integers(0, 2**16), st.data())
def test_a_run_resumed_after_any_interruptions_boots_each_place_once(
        combos: list[Combination], boots: int, seed: int, data: st.DataObject) -> None:
    # The family: a system run interrupted after any number of its boots, resumed, the resume
    # interrupted again after any number, a boot stored twice (the spool's copy and the
    # store's), until a resume runs to the end. Through the real paths: the command's sink
    # and resume plan, run/sysboot.pending_boots, the store.
    labels = tuple(f"{c.kernel}:{c.userspace}" for c in combos)
    order = boot_order(combos, boots, seed)
    with tempfile.TemporaryDirectory(prefix="abibench-sysresume-") as tmp:
        db = str(Path(tmp) / "r.sqlite")
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with system_sink(db) as sink:
            sink.create_run(Run(RUN, now, None, "running", __version__,
                                RunConfig(system=system_config(labels, boots, seed))), capture())
            todo = pending_boots(combos, boots, seed)
            _boot_some(sink, todo, data)
            sink.finish_run(RUN, now, "interrupted")
        for attempt in range(4):
            with system_sink(db) as sink:
                plan = resume_plan(sink, RUN, "server")
                assert (plan.combos, plan.boots, plan.seed) == (tuple(combos), boots, seed)
                todo = pending_boots(plan.combos, plan.boots, plan.seed, plan.done)
                assert not plan.done & {i for i, _ in todo}
                last = attempt == 3 or not todo
                _boot_some(sink, todo, data, every=last)
                sink.finish_run(RUN, now, "complete" if last else "interrupted")
            if last:
                break
        store = open_store(db, readonly=True)
        try:
            doc = store.load_run(RUN)
        finally:
            store.close()
    assert [b.index for b in doc.system_boots] == list(range(len(order)))
    assert [b.combination for b in doc.system_boots] == [f"{c.kernel}:{c.userspace}"
                                                         for c in order]
    result = analyse_doc(doc)
    assert result is not None and not any("not done" in p for p in result.problems)


RUN = "20261126-190500-7a7b7c7d"


def _boot_some(sink: SpooledSink, todo: list[tuple[int, Combination]], data: st.DataObject,
               every: bool = False) -> None:
    """Store the first of the places to boot as their boots end (all when `every`), one of
    them perhaps twice; an interrupt comes after them."""
    n = len(todo) if every else data.draw(st.integers(0, len(todo)), label="boots done")
    for i, c in todo[:n]:
        boot = system_boot(i, f"{c.kernel}:{c.userspace}", 300_000 - 1000 * i)
        sink.add_system_boot(RUN, boot)
        if data.draw(st.booleans(), label="stored again"):
            sink.add_system_boot(RUN, boot)


_CHANGED = {"release": st.sampled_from(["trixie", "sid"]), "memory_mb": st.integers(1, 4096),
            "settle_s": st.integers(0, 10**4), "load": st.booleans(),
            "kernels": st.dictionaries(st.sampled_from(["amd64", "686-pae"]),
                                       st.text(max_size=30), max_size=2),
            "images": st.dictionaries(st.sampled_from(["i386", "amd64"]), st.text(max_size=30),
                                      max_size=2)}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(SAME_SYSTEM), st.data())
def test_a_resume_never_mixes_two_systems_in_one_run(name: str, data: st.DataObject) -> None:
    # The family: boots a resume would make of another disk, kernel, memory size, settling or
    # load than the run's stored boots were made of.
    recorded = _config()
    value = data.draw(_CHANGED[name].filter(lambda v: v != getattr(recorded, name)))
    changes: dict[str, Any] = {name: value}
    why = system_mismatch(recorded, replace(recorded, **changes))
    assert why is not None and why.startswith(f"its {name} was ") and "\n" not in why
    assert system_mismatch(recorded, replace(recorded, description="changed words")) is None
