"""`abibench fleet run`: one measuring run on every host of an Ansible inventory.

In order: list the inventory's hosts (ansible-inventory); build an sdist of this checkout;
run the shipped playbook (fleet/playbook.yml) with ansible-playbook, all hosts at once (forks)
or, with `serial`, one ansible-playbook per host in the inventory's order, so a host that fails
or cannot be reached never keeps the next from running; each host copies abibench, runs its
setup.sh and `abibench run` with the given options, straight into the shared database when
--db is a PostgreSQL server the host reaches, else into a local file whose run document is
fetched back and imported here. Every run records the fleet's id and its host's inventory name
(`run --fleet`, `--label`), which is how the runs are found again and tagged in the comparison.

Nothing here prints: progress goes to a callback, and the CLI shows the result.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..analyse.merge import ResultSet
from ..errors import AbibenchError, UsageError
from ..ids import file_name, id_problem
from ..paths import data_dir
from ..records import RunDoc
from ..run.suite import new_run_id
from ..store.exchange import import_doc, load_file
from ..store.open import open_store
from ..store.url import is_url, safe_url
from ..text import one_line
from ..workspace import owned_dir
from . import ansible
from .ansible import NOT_RUN, OK, Event, HostOutcome
from .credentials import DEFAULT_PORT, write_passfile
from .package import build_sdist
from .profiles import ship_profiles

Progress = Callable[[str], None]


@dataclass
class HostResult:
    name: str
    status: str  # ok | failed | unreachable | not run
    task: str | None = None  # where it failed
    reason: str | None = None
    run_id: str | None = None
    samples: int = 0
    stored: str = ""  # how its run reached the database

    def to_dict(self) -> dict[str, object]:
        return {"host": self.name, "status": self.status, "task": self.task,
                "reason": self.reason, "run_id": self.run_id, "samples": self.samples,
                "stored": self.stored}


@dataclass
class FleetResult:
    fleet_id: str
    hosts: list[HostResult]
    docs: list[RunDoc] = field(default_factory=list)  # the hosts' runs, in inventory order
    wall_s: float = 0.0
    kept: Path | None = None  # where the fetched run documents are kept

    @property
    def failed(self) -> list[HostResult]:
        return [h for h in self.hosts if h.status != OK]

    def sets(self) -> list[ResultSet]:
        return [ResultSet(doc, f"run {doc.id}") for doc in self.docs]


# Tasks that take long enough to be announced when they start (the others when they end).
_LONG = ("Set up", "Measure")


def _describe(ev: Event) -> str | None:
    """One line of live progress: a long task starting, a task done, a host failing."""
    host, task, kind = ev.get("host"), str(ev.get("task")), ev.get("event")
    if kind == "start" and task.startswith(_LONG):
        return f"[{host}] {task} ..."
    if kind in ("ok", "changed"):
        return f"[{host}] {task}: done"
    if kind in (ansible.FAILED, ansible.UNREACHABLE):
        return f"[{host}] {kind} at '{task}': {ansible.failure_reason(ev)}"
    return None


def _shared_db_vars(db: str, work: Path) -> dict[str, Any]:
    """What the hosts need to write straight into a shared database (nothing for a file)."""
    if not is_url(db):
        return {}
    host = urlsplit(db).hostname
    if not host or host.startswith("/"):  # a local socket: no host could reach it
        return {}
    out: dict[str, Any] = {"abibench_db": safe_url(db), "abibench_db_host": host,
                           "abibench_db_port": urlsplit(db).port or DEFAULT_PORT}
    passfile = write_passfile(db, work / "pgpass")
    if passfile is not None:
        out["abibench_pgpass"] = str(passfile)
    return out


def run_fleet(inventory: Path, run_args: list[str], db: str, progress: Progress, *,
              serial: bool = False, forks: int | None = None,
              selected: list[str] | None = None) -> FleetResult:
    """selected: the workloads as given (ids and profile paths; paths travel to the hosts)."""
    t0 = time.monotonic()
    fleet_id = f"fleet-{new_run_id()}"
    with owned_dir("fleet") as work:
        names = ansible.list_hosts(inventory.absolute(), work)
        for name in names:  # each labels its host's run and names its fetched document
            problem = id_problem(name)
            if problem is not None:
                raise UsageError(f"{inventory}: host name {name[:60]!r} {problem}: rename it "
                                 "in the inventory (give it ansible_host= for its address)")
        shipped = ship_profiles(selected or [], run_args, work / "profiles.tar.gz")
        progress(f"fleet {fleet_id}: {len(names)} hosts ({', '.join(names)}), "
                 f"{'one at a time' if serial else 'all at once'}; building abibench")
        sdist = build_sdist(work / "sdist")
        fetched = work / "results"
        fetched.mkdir()
        extra = {"abibench_sdist": str(sdist), "abibench_run_args": shipped.run_args,
                 "abibench_results": str(fetched), "abibench_fleet": fleet_id,
                 **_shared_db_vars(db, work)}
        if shipped.archive is not None:
            extra["abibench_profiles"] = str(shipped.archive)

        def on_event(ev: Event) -> None:
            line = _describe(ev)
            if line is not None:
                progress(line)

        outcomes: dict[str, HostOutcome] = {}
        logs: list[Path] = []
        for batch in ([[n] for n in names] if serial else [names]):
            res = ansible.run_playbook(inventory.absolute(), extra, work,
                                       1 if serial else forks or len(names), on_event,
                                       limit=",".join(batch) if serial else None)
            outcomes.update(res.hosts)
            logs.append(res.log)
            if res.exit_code not in (0, 2, 4) and not res.hosts:
                tail = one_line(res.log.read_text(errors="replace")[-600:])
                for n in batch:
                    outcomes[n] = HostOutcome(NOT_RUN, None, f"ansible-playbook exited "
                                              f"{res.exit_code}: {tail}")
        hosts = [HostResult(n, outcomes.get(n, HostOutcome(NOT_RUN)).status,
                            outcomes.get(n, HostOutcome()).task,
                            outcomes.get(n, HostOutcome()).reason) for n in names]
        kept = _keep(fetched, fleet_id)
        result = FleetResult(fleet_id, hosts, kept=kept)
        _store_runs(result, kept, db)
    result.wall_s = time.monotonic() - t0
    return result


def _keep(fetched: Path, fleet_id: str) -> Path | None:
    """The fetched run documents outlive the work directory: they are the hosts' results."""
    files = sorted(fetched.glob("*.json"))
    if not files:
        return None
    kept = data_dir() / "fleets" / file_name("fleet id", fleet_id)
    kept.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy2(f, kept / f.name)
    return kept


def _store_runs(result: FleetResult, kept: Path | None, db: str) -> None:
    """Import what was fetched, then find every host's run by the fleet's id."""
    store = open_store(db)
    try:
        for host in result.hosts:
            doc_file = kept / file_name("host", host.name, ".json") if kept is not None else None
            if doc_file is not None and doc_file.is_file():
                try:
                    import_doc(store, load_file(doc_file), str(doc_file))
                    host.stored = "fetched and imported"
                except AbibenchError as exc:
                    host.status, host.reason = ansible.FAILED, f"its run cannot be imported: {exc}"
        docs = {}
        for run_id in store.runs_with(f'"fleet": "{result.fleet_id}"'):
            doc = store.load_run(run_id)
            label = doc.host.extra.get("label")
            if isinstance(label, str):
                docs[label] = doc
        for host in result.hosts:
            found = docs.get(host.name)
            if found is None:
                if host.status == OK:
                    host.status = ansible.FAILED
                    host.reason = (f"no run of this host in {store.label}: it may wait in the "
                                   "host's own spool (`abibench push` there)")
                continue
            host.run_id = found.id
            host.samples = len(found.samples)
            host.stored = host.stored or "written straight into the shared database"
            result.docs.append(found)
    finally:
        store.close()
