"""The terminal table prints names from results as text, never as rich markup."""

from __future__ import annotations

import io

from abibench import analyse
from abibench.report import terminal

from .synthetic import make_doc


def test_markup_in_result_strings_is_printed_literally() -> None:
    evil = "w[red]x[/red][link=file:///etc/passwd]y"
    doc = make_doc(workloads={evil: {"i386": 90.0, "x86_64": 100.0}})
    out = io.StringIO()
    terminal.render(analyse.analyse(doc), "run [bold]h[/bold]", ["warn [blink]z"],
                    terminal.console(out))
    text = out.getvalue()
    assert evil in text
    assert "run [bold]h[/bold]" in text and "warn [blink]z" in text
