"""Stored runs read for comparisons over time: a baseline named by run id, file or tag, and
every run of a workload for `abibench history`.

The axes of a run (analyse/axes.py) are derived from what each run already stores, so no
column is needed: a tag is the `label` a run recorded (`abibench run --label NAME`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..analyse.axes import axes_of
from ..errors import UsageError
from ..records import RunDoc
from .exchange import load_file
from .sources import is_file_ref


class Reader(Protocol):
    """What every store and the spooling sink of a shared one can do."""

    def run_ids(self) -> list[str]: ...

    def resolve_run(self, ref: str | None) -> str: ...

    def load_run(self, run_id: str) -> RunDoc: ...


def stored_runs(store: Reader) -> list[RunDoc]:
    """Every stored run, oldest first."""
    return [store.load_run(i) for i in store.run_ids()]


def tagged(store: Reader, tag: str, exclude: str | None = None) -> RunDoc | None:
    """The newest run whose tag (`run --label`) is ``tag``, but ``exclude``."""
    for run_id in reversed(store.run_ids()):
        if run_id == exclude:
            continue
        doc = store.load_run(run_id)
        if axes_of(doc)["tag"] == tag:
            return doc
    return None


def resolve_baseline(ref: str, store: Reader | None, exclude: str | None = None) -> RunDoc:
    """A baseline named by an exported file, a run id (or prefix, `latest`) or a tag; a tag
    names its newest run (other than ``exclude``, the run being compared)."""
    if is_file_ref(ref):
        return load_file(Path(ref))
    if store is None:
        raise UsageError(f"--against '{ref}' is not an exported .json file and there is no "
                         "results database: pass --db")
    try:
        return store.load_run(store.resolve_run(ref))
    except UsageError:
        found = tagged(store, ref, exclude)
        if found is None:
            raise UsageError(f"--against '{ref}' is neither a run id nor a tag of a stored run: "
                             "see `abibench runs`, or tag runs with `abibench run --label "
                             "NAME`") from None
        return found
