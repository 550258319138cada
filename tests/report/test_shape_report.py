"""A target whose samples have a slow tail is said so in every format, and drawn in the HTML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from abibench.errors import EXIT_OK
from tests.conftest import synthetic_doc


def test_a_slow_tail_reaches_the_terminal_markdown_and_the_html_chart(cli: Any,
                                                                      tmp_path: Path) -> None:
    d: dict[str, Any] = synthetic_doc(rounds=24, noise=0.004,
                                      workloads={"alpha": {"i386": 90.0, "x86_64": 100.0}})
    slow = {5: 1.15, 13: 1.30, 21: 1.45}  # three rounds, each slower by its own amount: a tail
    for s in d["samples"]:
        if s["target"] == "i386" and s["round"] in slow:
            factor = slow[s["round"]]
            s["metrics"] = {"rate": s["metrics"]["rate"] / factor,
                            "time": s["metrics"]["time"] * factor}
            s["wall_s"] *= factor
    path = tmp_path / "run.json"
    path.write_text(json.dumps(d))
    assert cli("import", str(path)).returncode == EXIT_OK
    run_id = d["run"]["id"]

    term = cli("report", run_id)
    assert term.returncode == EXIT_OK, term.stderr
    words = " ".join(term.stdout.split())
    assert "i386: a slow tail: 3 of 24 samples" in words
    assert "x86_64: a slow tail" not in words and "x86_64: two modes" not in words

    md = tmp_path / "r.md"
    assert cli("report", run_id, "--markdown", str(md)).returncode == EXIT_OK
    assert "i386: a slow tail: 3 of 24 samples" in md.read_text()

    html = tmp_path / "r.html"
    assert cli("report", run_id, "--html", str(html)).returncode == EXIT_OK
    page = html.read_text()
    assert "alpha: the shape of the samples" in page
    assert page.count('aria-label="alpha: the shape of the samples"') == 1
