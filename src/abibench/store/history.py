"""Stored runs read for comparisons over time: a baseline named by run id, file or tag, and
every run of a workload for `abibench history`.

The axes of a run (axes.py) are derived from what each run already stores, so no
column is needed: a tag is the `label` a run recorded (`abibench run --label NAME`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from ..axes import axes_of
from ..errors import UsageError
from ..ids import check_id
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


class FleetReader(Reader, Protocol):
    def runs_with(self, text: str) -> list[str]: ...

    def run_config(self, run_id: str) -> dict[str, Any]: ...


def fleet_baselines(store: FleetReader, fleet: str) -> dict[str, RunDoc]:
    """`fleet run --against FLEET`: that fleet run's run of each host, by the host's inventory
    name (the label `fleet run` gives each host's run); UsageError when no run has that fleet
    id. The id is checked first (ids.py): it goes into a LIKE pattern, and an id holds no
    wildcard."""
    check_id("--against fleet id", fleet)
    ids = [r for r in store.runs_with(f'"fleet": "{fleet}"')
           if store.run_config(r).get("fleet") == fleet]
    if not ids:
        raise UsageError(f"--against {fleet}: no stored run is part of a fleet run with that id; "
                         "name the fleet id `abibench fleet run` printed ('fleet ID: ...')")
    out: dict[str, RunDoc] = {}
    for run_id in ids:  # oldest first: a host's newest run of the fleet wins
        doc = store.load_run(run_id)
        out[axes_of(doc)["tag"] or axes_of(doc)["host"] or run_id] = doc
    return out
