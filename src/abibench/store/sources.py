"""Result sets named on the command line: run ids in the database or exported JSON files."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..errors import UsageError
from ..records import ResultSet, RunDoc
from .beside import Beside, started
from .columns import column_doc, load_columns, load_head, queried
from .exchange import load_file
from .filecolumns import load_file_columns
from .sql import SqlStore, guarded
from .sqlite import Store


def is_file_ref(ref: str) -> bool:
    """Whether a source names an exported JSON file rather than a stored run."""
    path = Path(ref)
    if path.suffix.lower() == ".json":
        return True
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, or with a NUL, for any file: a run id
        return False


# An exported file this large is read long enough for a stored run before it to be read beside
# it by a second process (store/beside.py): 8 MiB is about 15,000 samples, 0.2 s of reading.
BESIDE_FROM = 8 << 20
# ... and a stored run is read beside it only when it holds at most one sample per this many
# bytes of the file (an exported sample is about 530 bytes): the second process's own cost (at
# 10^6 samples 1.1 s of its CPU more than reading in-process, and 0.9 s here to read its
# columns back) is then hidden behind the file's reading (10.5 s for 10^6 samples).
BYTES_PER_STORED = 128


def load_sources(refs: list[str], store: SqlStore | None, columns: bool = False,
                 rows: bool = False, beside_from: int = BESIDE_FROM) -> list[ResultSet]:
    """Each ref is a path to an exported JSON file or a run id (prefix, `latest`) in the DB.

    store: None when there is no database; then every ref must be a file. columns: stored runs
    as columns (store/columns.py) for the views that show no sample, their records read while
    the store is open only if something walks them; rows: with every sample's fields as
    columns too (store/columns.scanned: the views that write every sample). Exported files
    likewise as columns (store/filecolumns.py), their records read again from the file if
    something walks them. A run or a file named twice is read once.

    A stored run named with an exported file of `beside_from` bytes or more has its columns
    read by a second process while this one reads the file (store/beside.py): started in its
    turn when named before the file, before anything is read when named after it. The sources
    are still settled in their order: a refusal is the first source's that has one, as if each
    were read in turn, and a run the second process gave nothing for is read here.
    """
    big = _big_files(refs, store, columns and not rows, beside_from)
    # the most stored samples worth reading beside; None (beside_from 0): any, always
    most = max(size for _, size in big) // BYTES_PER_STORED if big and beside_from else None
    got: list[tuple[RunDoc | _Later, str]] = []
    loaded: dict[str, RunDoc | _Later] = {}
    files: dict[str, RunDoc] = {}  # a file named twice is read once too
    with started():  # a second process left running (an error, Ctrl-C) is stopped
        early = _started_early(refs[big[-1][0] + 1:], store, most) if big else {}
        for i, ref in enumerate(refs):
            try:
                got.append(_one(ref, store, columns, rows, loaded, files,
                                most if big and i < big[-1][0] else -1, early))
            except Exception:
                for doc, _ in got:  # an earlier source's own refusal comes first
                    if isinstance(doc, _Later):
                        doc.doc()
                raise
        return [ResultSet(doc.doc() if isinstance(doc, _Later) else doc, label)
                for doc, label in got]


def _one(ref: str, store: SqlStore | None, columns: bool, rows: bool,
         loaded: dict[str, RunDoc | _Later], files: dict[str, RunDoc], most: int | None,
         early: dict[str, Beside]) -> tuple[RunDoc | _Later, str]:
    """One source's document (or its columns being read beside: a stored run of at most
    `most` samples, any if None), and its label."""
    if is_file_ref(ref):
        path = Path(ref)
        if ref not in files:
            files[ref] = load_file_columns(path) if columns else load_file(path)
        return files[ref], str(path)
    if store is None:
        raise UsageError(f"'{ref}' is not an exported .json file and there is no results "
                         "database: run `abibench run` first or pass --db")
    run_id = store.resolve_run(ref)
    if run_id not in loaded:
        if isinstance(store, Store) and (run_id in early or _worth(store, run_id, most)):
            loaded[run_id] = _Later(store, run_id, early.pop(run_id, None))
        else:
            loaded[run_id] = (load_columns(store, run_id, rows) if columns
                              else store.load_run(run_id))
    return loaded[run_id], f"run {run_id}"


def _big_files(refs: list[str], store: SqlStore | None, columns: bool,
               beside_from: int) -> list[tuple[int, int]]:
    """The places and sizes of the exported files of `beside_from` bytes or more, when stored
    runs are read as columns from SQLite and this process may run on two CPUs or more; else
    none."""
    if not columns or not isinstance(store, Store) or _cpus() < 2:
        return []  # one CPU to run on: a second process would only add its own work
    big = []
    for i, ref in enumerate(refs):
        if is_file_ref(ref):
            try:
                size = os.stat(ref).st_size
            except (OSError, ValueError):
                continue  # read in its turn, and refused there
            if size >= beside_from:
                big.append((i, size))
    return big


def _worth(store: SqlStore, run_id: str, most: int | None) -> bool:
    """Whether the run is read beside: at most `most` samples (any if None; none if -1)."""
    if most is None or most < 0:
        return most is None
    try:
        (n,) = next(iter(store.tuples("SELECT COUNT(*) AS n FROM samples WHERE run_id=?",
                                      (run_id,))))
    except Exception:  # the run is read, and refused, in its turn
        return False
    return int(n) <= most


def _started_early(refs: list[str], store: SqlStore | None, most: int | None,
                   ) -> dict[str, Beside]:
    """The stored runs named after the last large file, each read by a second process from
    now on. Nothing is refused here: a name that does not resolve is refused in its turn."""
    out: dict[str, Beside] = {}
    for ref in refs:
        if is_file_ref(ref) or not isinstance(store, Store):
            continue
        try:
            run_id = store.resolve_run(ref)
        except Exception:  # refused in its turn, by the same call
            continue
        if run_id not in out and _worth(store, run_id, most):
            with contextlib.suppress(OSError):  # no process to be had: read in turn
                out[run_id] = Beside(store, run_id)
    return out


def _cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _Later:
    """A stored run's head, read now, and its columns read by a second process: `doc()` waits
    for them, and reads them here when that process gave none (the refusal then is
    `load_columns`' own, by the same code)."""

    def __init__(self, store: Store, run_id: str, beside: Beside | None = None) -> None:
        self._store, self._run_id = store, run_id
        self._head = guarded(load_head)(store, run_id)
        self._beside = beside  # started already (named after the file), else now
        self._doc: RunDoc | None = None
        if beside is None:
            with contextlib.suppress(OSError):  # no process to be had (EAGAIN, ENOMEM)
                self._beside = Beside(store, run_id)

    def doc(self) -> RunDoc:
        if self._doc is None:
            cols = None if self._beside is None else self._beside.columns()
            if cols is None:
                cols = guarded(queried)(self._store, self._run_id)
            self._doc = column_doc(self._store, self._run_id, self._head, cols)
        return self._doc


def latest_fleet(store: SqlStore) -> list[str]:
    """The runs of the last fleet run in the database (abibench fleet), oldest first."""
    newest = None
    for run_id in store.runs_with('"fleet": "'):  # oldest first: the last one seen is newest
        fleet = store.run_config(run_id).get("fleet")
        if isinstance(fleet, str):
            newest = fleet
    return [] if newest is None else store.runs_with(f'"fleet": "{newest}"')
