"""Write a report in the formats asked for.

The HTML writer is imported only when HTML is asked for: matplotlib takes a second to load.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from . import csvout, markdown
from .content import Report


@dataclass(frozen=True)
class Outputs:
    html: Path | None = None
    markdown: Path | None = None
    csv: Path | None = None
    samples_csv: Path | None = None

    def any(self) -> bool:
        return any((self.html, self.markdown, self.csv, self.samples_csv))


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}; choose another path") from None


def write(report: Report, out: Outputs) -> list[tuple[str, Path]]:
    """Write every requested file; return (kind, path) for each one written."""
    done: list[tuple[str, Path]] = []
    if out.html:
        from . import html

        _write(out.html, html.render(report))
        done.append(("HTML report", out.html))
    if out.markdown:
        _write(out.markdown, markdown.render_report(report))
        done.append(("Markdown report", out.markdown))
    if out.csv:
        _write(out.csv, csvout.results_csv(report))
        done.append(("results CSV", out.csv))
    if out.samples_csv:
        _write(out.samples_csv, csvout.samples_csv(report))
        done.append(("samples CSV", out.samples_csv))
    return done
