"""Result sets named on the command line: run ids in the database or exported JSON files."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..records import ResultSet, RunDoc
from .columns import load_columns
from .exchange import load_file
from .filecolumns import load_file_columns
from .sql import SqlStore


def is_file_ref(ref: str) -> bool:
    """Whether a source names an exported JSON file rather than a stored run."""
    path = Path(ref)
    if path.suffix.lower() == ".json":
        return True
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, or with a NUL, for any file: a run id
        return False


def load_sources(refs: list[str], store: SqlStore | None,
                 columns: bool = False, rows: bool = False) -> list[ResultSet]:
    """Each ref is a path to an exported JSON file or a run id (prefix, `latest`) in the DB.

    store: None when there is no database; then every ref must be a file. columns: stored runs
    as columns (store/columns.py) for the views that show no sample, their records read while
    the store is open only if something walks them; rows: with every sample's fields as
    columns too (store/columns.scanned: the views that write every sample). Exported files
    likewise as columns (store/filecolumns.py), their records read again from the file if
    something walks them. A run or a file named twice is read once.
    """
    sets = []
    loaded: dict[str, RunDoc] = {}
    files: dict[str, RunDoc] = {}  # a file named twice is read once too
    for ref in refs:
        if is_file_ref(ref):
            path = Path(ref)
            if ref not in files:
                files[ref] = load_file_columns(path) if columns else load_file(path)
            sets.append(ResultSet(files[ref], str(path)))
        elif store is None:
            raise UsageError(f"'{ref}' is not an exported .json file and there is no results "
                             "database: run `abibench run` first or pass --db")
        else:
            run_id = store.resolve_run(ref)
            if run_id not in loaded:
                loaded[run_id] = (load_columns(store, run_id, rows) if columns
                                  else store.load_run(run_id))
            sets.append(ResultSet(loaded[run_id], f"run {run_id}"))
    return sets


def latest_fleet(store: SqlStore) -> list[str]:
    """The runs of the last fleet run in the database (abibench fleet), oldest first."""
    newest = None
    for run_id in store.runs_with('"fleet": "'):  # oldest first: the last one seen is newest
        fleet = store.run_config(run_id).get("fleet")
        if isinstance(fleet, str):
            newest = fleet
    return [] if newest is None else store.runs_with(f'"fleet": "{newest}"')
