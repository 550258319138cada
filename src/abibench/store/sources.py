"""Result sets named on the command line: run ids in the database or exported JSON files."""

from __future__ import annotations

from pathlib import Path

from ..analyse.merge import ResultSet
from .exchange import load_file
from .sqlite import Store


def load_sources(refs: list[str], store: Store) -> list[ResultSet]:
    """Each ref is a path to an exported JSON file or a run id (prefix, `latest`) in the DB."""
    sets = []
    for ref in refs:
        path = Path(ref)
        if path.suffix.lower() == ".json" or path.is_file():
            sets.append(ResultSet(load_file(path), str(path)))
        else:
            run_id = store.resolve_run(ref)
            sets.append(ResultSet(store.load_run(run_id), f"run {run_id}"))
    return sets
