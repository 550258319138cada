"""The terminal table prints names from results as text, never as rich markup."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from abibench.analyse import report as analysis
from abibench.records import RunWarning
from abibench.report import terminal
from abibench.store.exchange import document

MakeDoc = Callable[..., dict[str, Any]]


def test_markup_in_result_strings_is_printed_literally(make_doc: MakeDoc) -> None:
    evil = "w[red]x[/red][link=file:///etc/passwd]y"
    doc = document(make_doc(workloads={evil: {"i386": 90.0, "x86_64": 100.0}}), "t")
    doc = type(doc)(doc.run, doc.host, doc.samples, doc.artifacts, doc.statuses,
                    (RunWarning("warn [blink]z"),), doc.outcomes)
    text = terminal.render(analysis.from_run(doc, heading="run [bold]h[/bold]"))
    assert evil in text
    assert "run [bold]h[/bold]" in text and "warn [blink]z" in text
