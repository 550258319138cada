"""`abibench run --resume RUN`: an interrupted or abandoned run, continued with its own plan.

The request is rebuilt from what the run stored (ABIs, flags, compiler, plan, each workload's
profile and parameters), and refused when a profile changed since: a resumed run measures
exactly the workloads it started with. Each workload continues where its stored samples end
(run/continuation.py); a round that was cut short is measured again and its lone samples are kept
but discarded, so every target ends with the same counted rounds as an uninterrupted run.
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

from ..abi import get_abi
from ..errors import UsageError
from ..hashing import sha256_regular
from ..records import RunDoc
from ..workloads.profile import MAX_PROFILE_BYTES, Workload, load_profile
from .schedule import Plan
from .suite import Request

RESUMABLE = ("interrupted", "abandoned", "failed")


def request_of(doc: RunDoc) -> Request:
    """The request the run was started with, from what it stored."""
    if doc.run.status not in RESUMABLE:
        why = ("it is complete" if doc.run.status == "complete" else
               "another abibench is still running it" if doc.run.status == "running" else
               f"its status is {doc.run.status}")
        raise UsageError(f"run {doc.run.id} cannot be resumed: {why} (resumable: "
                         f"{', '.join(RESUMABLE)}); start a new run instead")
    cfg = doc.run.config
    known = {f.name for f in fields(Plan)}
    plan = Plan(**{k: v for k, v in (cfg.plan or {}).items() if k in known})  # type: ignore[arg-type]
    return Request(workloads=[_workload(doc, wid) for wid in doc.workloads],
                   abis=[get_abi(a) for a in cfg.abis], plan=plan, cflags=cfg.cflags,
                   cc=cfg.cc, provenance=cfg.provenance or "source",
                   allow_version_skew=bool(cfg.extra.get("allow_version_skew")),
                   allow_host_libs=bool(cfg.extra.get("allow_host_libs")),
                   keep_going=bool(cfg.extra.get("keep_going")),
                   label=_text(doc.host.extra.get("label")), fleet=_text(cfg.extra.get("fleet")))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _workload(doc: RunDoc, wid: str) -> Workload:
    meta = doc.workloads[wid]
    if not meta.path:
        raise UsageError(f"run {doc.run.id} did not record where workload {wid}'s profile is "
                         "(an imported or old run): start a new run")
    path = Path(meta.path)
    if not path.is_file():
        raise UsageError(f"workload {wid}'s profile {path} is gone: restore it, or start a new "
                         "run")
    want = meta.extra.get("profile_sha256")
    if want is not None and sha256_regular(path, MAX_PROFILE_BYTES) != want:
        raise UsageError(f"workload {wid}'s profile {path} changed since run {doc.run.id} "
                         "started: a resumed run measures the same workloads; start a new run")
    wl = load_profile(path)
    params = {k: str(v) for k, v in meta.params.items()}
    return replace(wl, id=wid, params={**wl.params, **params}, sweep={}).with_validation()
