"""The shapes the SQL store hands over: what a backend's cursor offers, and a listed run.

Apart from store/sql.py only to keep that module to its queries; both names are re-exported
there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol


class Cursor(Protocol):
    """What both sqlite3's and psycopg's cursors offer (rows are read by column name)."""

    @property
    def rowcount(self) -> int: ...

    @property
    def description(self) -> Any: ...  # the columns of a query's rows: (name, ...) each

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


@dataclass(frozen=True)
class RunListing:
    """One line of `abibench runs`."""

    id: str
    started: str
    finished: str | None
    status: str
    samples: int
    system_boots: int = 0  # a system run's (abibench system run) stored boots

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "started": self.started, "finished": self.finished,
                "status": self.status, "samples": self.samples,
                "system_boots": self.system_boots}
