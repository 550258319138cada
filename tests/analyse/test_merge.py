"""N-way comparison across result sets, and importing others' results."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from abibench.analyse import report as analysis
from abibench.analyse.merge import ResultSet, default_tags, merge
from abibench.cli import main
from abibench.errors import EXIT_USAGE, UsageError
from abibench.report import csvout
from abibench.store.exchange import SchemaError, document, import_doc, load_file, validate
from abibench.store.sql import SqlStore

Cli = Callable[..., subprocess.CompletedProcess[str]]


MakeDoc = Callable[..., dict[str, Any]]


def _sets(make_doc: MakeDoc) -> list[ResultSet]:
    # Host "amd" runs a 64-bit kernel with both ABIs; host "old" a 32-bit kernel, i386 only.
    a = make_doc(run_id="run-a", host="amd", kernel_bits=64, seed=1)
    b = make_doc(run_id="run-b", host="old", kernel_bits=32, targets=("i386",), seed=2,
                 workloads={"alpha": {"i386": 80.0}, "beta": {"i386": 110.0}})
    return [ResultSet(document(a, "a.json"), "a.json"), ResultSet(document(b, "b.json"), "b.json")]


def test_sets_are_tagged_by_host_kernel_and_abi(make_doc: MakeDoc) -> None:
    merged = merge(_sets(make_doc))
    assert merged.tags == ["amd k64", "old k32"]
    assert [s.label for s in merged.series] == ["amd k64 i386", "amd k64 x86_64", "old k32 i386"]
    assert merged.references == {"alpha": "amd k64 x86_64", "beta": "amd k64 x86_64"}
    old = merged.series[2]
    assert (old.host, old.kernel_bits, old.abi) == ("old", 32, "i386")


def test_n_way_comparison_uses_the_same_statistics_and_never_pairs_across_sets(
        make_doc: MakeDoc) -> None:
    report = analysis.from_sets(_sets(make_doc))
    assert report.kind == "comparison"
    alpha = report.workloads[0].result
    assert [r.label for r in alpha.rows] == ["amd k64 i386", "amd k64 x86_64", "old k32 i386"]
    by = {c.a: c for c in alpha.comparisons}
    assert set(by) == {"amd k64 i386", "old k32 i386"}
    assert by["amd k64 i386"].ratio.paired  # same run: paired by round
    assert not by["old k32 i386"].ratio.paired  # another machine: rounds mean nothing
    assert by["old k32 i386"].ratio.ratio == pytest.approx(0.8, rel=0.03)
    assert by["old k32 i386"].verdict.winner == "amd k64 x86_64"
    # Holm over every primary comparison of the merged sets: 2 workloads x 2 series.
    assert all(c.p_adjusted >= c.ratio.p_value for w in report.workloads
               for c in w.result.comparisons)
    suites = {(s.a, s.b) for s in report.suites}
    assert suites == {("amd k64 i386", "amd k64 x86_64"), ("old k32 i386", "amd k64 x86_64")}
    rows = csvout.result_rows(report)
    old = next(r for r in rows if r["series"] == "old k32 i386" and r["metric"] == "rate"
               and r["workload"] == "alpha")
    assert (old["set"], old["host"], old["kernel_bits"], old["abi"]) == ("old k32", "old", 32,
                                                                         "i386")


def test_baseline_and_tags_can_be_chosen(make_doc: MakeDoc) -> None:
    merged = merge(_sets(make_doc), baseline="old k32 i386", tags=["fast", "slow"])  # no such series
    assert merged.references["alpha"] == "fast x86_64"
    assert any("baseline 'old k32 i386' has no measured samples" in w for w in merged.warnings)
    merged = merge(_sets(make_doc), baseline="slow i386", tags=["fast", "slow"])
    assert merged.references["alpha"] == "slow i386"
    assert merge(_sets(make_doc), baseline="slow", tags=["fast", "slow"]).references["beta"] == \
        "slow i386"
    report = analysis.from_sets(_sets(make_doc), baseline="i386")  # an ABI: the first set's series
    assert {b.reference for b in report.workloads} == {"amd k64 i386"}
    with pytest.raises(UsageError, match="one per set"):
        merge(_sets(make_doc), tags=["only-one"])
    with pytest.raises(UsageError, match="at least two"):
        merge(_sets(make_doc)[:1])


def test_same_host_twice_is_told_apart_by_date_then_id(make_doc: MakeDoc) -> None:
    a = make_doc(run_id="r1", started="2026-01-01T00:00:00+00:00")
    b = make_doc(run_id="r2", started="2026-02-01T00:00:00+00:00")
    c = make_doc(run_id="r3", started="2026-02-01T09:00:00+00:00")
    tags = default_tags([ResultSet(document(d, ""), "") for d in (a, b, c)])
    assert tags == ["vm k64 2026-01-01", "vm k64 2026-02-01 r2", "vm k64 2026-02-01 r3"]


def test_different_work_is_warned_about_and_different_metrics_left_out(make_doc: MakeDoc) -> None:
    a = make_doc(run_id="a", host="h1", params={"n": "1"})
    b = make_doc(run_id="b", host="h2", params={"n": "2"})
    c = make_doc(run_id="c", host="h3")
    c["run"]["config"]["workloads"]["alpha"]["primary"] = "time"
    merged = merge([ResultSet(document(d, ""), "") for d in (a, b, c)])
    text = " ".join(merged.warnings)
    assert "parameters differ" in text and "h1 k64: n=1" in text and "h2 k64: n=2" in text
    assert "h3 k64 is left out of this workload" in text
    assert "h3 k64 i386" not in merged.doc.workloads["alpha"].targets


# --------------------------------------------------------------------------- import


def test_valid_document_passes_and_broken_ones_name_the_field(make_doc: MakeDoc) -> None:
    validate(make_doc(), "ok.json")
    cases: list[tuple[str, Any, str]] = [
        ("samples", "nope", r"\$\.samples: expected a list, found a string"),
        ("wall", None, r"\$\.samples\[1\]\.wall_s: expected a number, found null"),
        ("warmup", None, r"\$\.samples\[1\]\.warmup: expected true or false"),
        ("target", None, r"\$\.samples\[1\]\.target: target 'arm' is not one of"),
        ("better", None, r"better: expected one of higher, lower"),
        ("primary", None, r"primary metric 'rate' is missing from a counted sample"),
    ]
    for what, value, message in cases:
        doc = make_doc()
        if what == "samples":
            doc["samples"] = value
        elif what == "wall":
            doc["samples"][1]["wall_s"] = None
        elif what == "warmup":
            doc["samples"][1]["warmup"] = 1
        elif what == "target":
            doc["samples"][1]["target"] = "arm"
        elif what == "better":
            doc["run"]["config"]["workloads"]["alpha"]["metrics"]["rate"]["better"] = "up"
        elif what == "primary":
            del doc["samples"][3]["metrics"]["rate"]
        with pytest.raises(SchemaError, match=message) as exc:
            validate(doc, "f.json")
        text = str(exc.value)
        assert text.startswith("f.json: ") and "abibench export" in text and "\n" not in text


def test_wrong_version_or_format_gets_its_own_message(make_doc: MakeDoc, tmp_path: Path) -> None:
    for version, words in ((2, "newer abibench"), (0, "not supported"), ("1", "not supported"),
                           (True, "not supported"), (None, "not supported")):
        doc = make_doc()
        doc["version"] = version
        with pytest.raises(SchemaError, match=words):
            validate(doc, "x.json")
    doc = make_doc()
    doc["format"] = "something-else"
    with pytest.raises(SchemaError, match="not an abibench run document"):
        validate(doc, "x.json")
    bad = tmp_path / "nan.json"
    bad.write_text(json.dumps(make_doc()).replace('"sys_s": 0.0', '"sys_s": NaN', 1))
    with pytest.raises(SchemaError, match="NaN is not a number JSON allows"):
        load_file(bad)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(SchemaError, match=r"not valid JSON \(line 1 column 2"):
        load_file(tmp_path / "broken.json")
    with pytest.raises(UsageError, match="no such file"):
        load_file(tmp_path / "missing.json")


def test_import_stores_never_overwrites_and_is_idempotent(make_doc: MakeDoc,
                                                           open_db: Callable[..., SqlStore]
                                                           ) -> None:
    store = open_db()
    doc = make_doc(run_id="run-x")
    first = import_doc(store, document(doc, "x.json"), "x.json")
    assert first.new and first.run_id == "run-x"
    again = import_doc(store, document(json.loads(json.dumps(doc)), "x.json"), "x.json")
    assert not again.new and again.run_id == "run-x"
    other = make_doc(run_id="run-x", host="elsewhere")  # same id, other content
    second = import_doc(store, document(other, "y.json"), "y.json")
    assert second.new and second.run_id == "run-x-i1"
    assert import_doc(store, document(other, "y.json"), "y.json").run_id == "run-x-i1"
    stored = store.load_run_dict("run-x-i1")
    assert stored["host"]["hostname"] == "elsewhere" and stored["run"]["status"] == "complete"
    assert stored["run"]["config"]["imported"]["original_id"] == "run-x"
    assert len(stored["samples"]) == len(other["samples"])
    # What was stored is itself a valid document with the same analysis.
    again_doc = document(stored, "db")
    assert analysis.from_run(again_doc).workloads[0].result.comparisons[0].ratio.ratio == \
        pytest.approx(analysis.from_run(document(other, "o")).workloads[0].result.comparisons[0]
                      .ratio.ratio)


@pytest.fixture
def abibench(db_ref: str, capsys: pytest.CaptureFixture[str]) -> Any:
    """The command line in-process (the subprocess route costs seconds of imports per call),
    on a new database of each backend."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main(["--db", db_ref, *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_cli_import_then_compare_two_hosts(make_doc: MakeDoc, abibench: Any,
                                           tmp_path: Path) -> None:
    a, b = _sets(make_doc)
    fa, fb = tmp_path / "a.json", tmp_path / "b.json"
    fa.write_text(json.dumps(a.doc.to_dict()))
    fb.write_text(json.dumps(b.doc.to_dict()))
    code, out, err = abibench("import", str(fa), str(fb))
    assert code == 0, err
    assert "imported" in out and "run-a" in out and "32-bit kernel" in out
    # A run exported from the store and re-imported elsewhere: the same file, another host.
    exported = json.loads(abibench("export", "run-a")[1])
    exported["host"]["hostname"] = "laptop"
    (tmp_path / "laptop.json").write_text(json.dumps(exported))
    assert abibench("import", str(tmp_path / "laptop.json"))[0] == 0
    runs = json.loads(abibench("runs", "--json")[1])
    assert [x["id"] for x in runs] == ["run-a", "run-a-i1", "run-b"]

    html_file = tmp_path / "cmp.html"
    code, out, err = abibench("compare", "run-a", "run-a-i1", str(fb), "--html", str(html_file),
                              "--csv", str(tmp_path / "c.csv"))
    assert code == 0, err
    page = html_file.read_text()
    assert len(re.findall(r'<figure class="wide"><svg', page)) == 1  # one difference chart
    assert page.count('id="summary"') == 1 and "laptop k64 i386" in page
    code, out, err = abibench("compare", "run-a", "run-a-i1", str(fb))
    assert code == 0, err
    assert len([line for line in out.splitlines() if "┃" in line]) == 1  # one table
    for label in ("amd k64 i386", "laptop k64 i386", "old k32 i386"):
        assert label in out
    data = json.loads(abibench("compare", "run-a", str(fb), "--json")[1])
    assert data["kind"] == "comparison" and len(data["sets"]) == 2


def test_cli_refuses_bad_input_with_exit_code_2(make_doc: MakeDoc, cli: Cli, abibench: Any,
                                                tmp_path: Path) -> None:
    doc = make_doc()
    doc["version"] = 99
    f = tmp_path / "future.json"
    f.write_text(json.dumps(doc))
    r = cli("import", str(f))  # the real entry point, exit status and all
    assert r.returncode == EXIT_USAGE
    assert r.stderr.count("\n") == 1 and "schema version 99" in r.stderr
    assert "upgrade abibench" in r.stderr and r.stdout == ""
    code, _, err = abibench("import", str(tmp_path / "missing.json"))
    assert code == EXIT_USAGE and "no such file" in err
    good = tmp_path / "good.json"
    good.write_text(json.dumps(make_doc()))
    code, _, err = abibench("import", str(good), str(f))  # all checked before any is stored
    assert code == EXIT_USAGE and "schema version 99" in err
    assert abibench("runs", "--json")[1].strip() == "[]"
    code, _, err = abibench("compare", str(good))
    assert code == EXIT_USAGE and "two or more" in err


def test_report_of_an_exported_file(make_doc: MakeDoc, abibench: Any, tmp_path: Path) -> None:
    f = tmp_path / "a.json"
    f.write_text(json.dumps(make_doc(run_id="run-f")))
    md = tmp_path / "r.md"
    code, _, err = abibench("report", str(f), "--markdown", str(md), "--samples-csv",
                            str(tmp_path / "s.csv"))
    assert code == 0, err
    assert md.read_text().startswith("# abibench run run-f")
    assert "Markdown report: " in err and (tmp_path / "s.csv").read_text().count("\n") > 10
    # Reading a file stores nothing: not even a database was created.
    code, _, err = abibench("runs", "--json")
    assert code == 2 and ("no results database at " in err or "holds no abibench results" in err)
    assert json.loads(abibench("report", str(f), "--json")[1])["kind"] == "run"
