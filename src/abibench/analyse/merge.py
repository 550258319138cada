"""Merging result sets from different machines, kernels or days into one N-way document.

Every result set is one run document (from the database or an imported file). A set is tagged
by its host and kernel bitness ("vm k64"); each of its targets becomes a *series* named
"TAG TARGET" ("vm k64 i386": a 64-bit kernel running i386 userspace, seed 003's matrix).

The merged document has the same shape as a single run, so :func:`abibench.analyse.results.analyse`
computes it with exactly the statistics of a single run. Two rules keep that honest:

* Rounds of different sets are moved apart (``ROUND_STRIDE``), so samples of two sets are never
  paired by round: only samples of the same run share a machine's drift.
* The reference series of every workload is chosen here and handed to the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import UsageError
from ..records import (
    ResultSet,
    Run,
    RunConfig,
    RunDoc,
    RunWarning,
    WorkloadMeta,
    abi_of,
    pick_reference,
    short_labels,
)
from ..run.stopping import short_of_precision
from .foreign import ALLOW_OPTION, allowed
from .parts import MergedDoc, Part

__all__ = ["ResultSet"]  # it lives in records (the store makes them); merging is here

ROUND_STRIDE = 1_000_000


@dataclass(frozen=True)
class Series:
    label: str
    set_index: int
    tag: str
    target: str
    abi: str
    host: str
    kernel_bits: int | None


@dataclass
class Merged:
    doc: RunDoc
    series: list[Series]
    references: dict[str, str]  # workload -> reference series label
    tags: list[str]
    warnings: list[str] = field(default_factory=list)


def default_tags(sets: list[ResultSet]) -> list[str]:
    """host + kernel bitness; sets that would share a tag get their date, then their run id.

    The host is the name a run was given (`run --label`, a fleet's inventory name), else its
    hostname: hosts of a fleet may well share a hostname."""
    tags = []
    for rs in sets:
        bits = rs.doc.host.kernel_bits
        label = rs.doc.host.extra.get("label")
        name = label if isinstance(label, str) and label else str(rs.doc.host.hostname or "host")
        tags.append(f"{name} k{bits}" if bits else name)
    for extra in ("date", "id"):
        seen: dict[str, int] = {}
        for t in tags:
            seen[t] = seen.get(t, 0) + 1
        if all(n == 1 for n in seen.values()):
            break
        for i, rs in enumerate(sets):
            if seen[tags[i]] > 1:
                run = rs.doc.run
                tags[i] += f" {run.started[:10]}" if extra == "date" else f" {run.id}"
    if len(set(tags)) != len(tags):  # the same run twice
        tags = [f"{t} #{i + 1}" for i, t in enumerate(tags)]
    return tags


def single_series(doc: RunDoc) -> list[Series]:
    """The series of one run: its targets, untagged."""
    labels: list[str] = []
    for meta in doc.workloads.values():
        labels += [t for t in meta.targets if t not in labels]
    return [Series(t, 0, "", t, abi_of(t), str(doc.host.hostname or "?"), doc.host.kernel_bits)
            for t in labels]


def _choose_reference(wid: str, candidates: list[Series], measured: set[str],
                      baseline: str | None, warnings: list[str]) -> str | None:
    """The series every other is compared with, for one workload."""
    usable = [s for s in candidates if s.label in measured]
    if not usable:
        return None
    if baseline:
        exact = [s for s in usable if s.label == baseline]
        by_target = [s for s in usable if s.target == baseline or s.abi == baseline]
        by_tag = [s for s in usable if s.tag == baseline]
        if exact:
            return exact[0].label
        if by_target:
            return by_target[0].label
        if by_tag:
            ref_t = pick_reference([s.target for s in by_tag])
            return next(s.label for s in by_tag if s.target == ref_t)
        warnings.append(f"{wid}: baseline '{baseline}' has no measured samples for this "
                        "workload; compared with the default reference instead")
    first = [s for s in usable if s.set_index == usable[0].set_index]
    ref_t = pick_reference([s.target for s in first])
    return next(s.label for s in first if s.target == ref_t)


def _check_tags(sets: list[ResultSet], tags: list[str] | None) -> list[str]:
    if len(sets) < 2:
        raise UsageError("a comparison needs at least two result sets: pass two or more run ids "
                         "or exported .json files")
    if tags is not None and len(tags) != len(sets):
        raise UsageError(f"{len(tags)} --tag values for {len(sets)} result sets: give one per "
                         "set, in order")
    tags = tags or default_tags(sets)
    if len(set(tags)) != len(tags):
        raise UsageError(f"tags must differ between result sets, got {', '.join(tags)}")
    return tags


def _members(sets: list[ResultSet], tags: list[str], warnings: list[str]) -> tuple[
        dict[str, WorkloadMeta], dict[str, list[int]]]:
    """Each workload's metadata (from its first set) and the sets that measured it alike."""
    workloads: dict[str, WorkloadMeta] = {}
    members: dict[str, list[int]] = {}
    for i, rs in enumerate(sets):
        for wid, meta in rs.doc.workloads.items():
            first = workloads.get(wid)
            if first is None:
                workloads[wid] = meta
                members[wid] = [i]
                continue
            if meta.primary != first.primary or \
                    meta.primary_metric.better != first.primary_metric.better:
                warnings.append(f"{wid}: {tags[i]} measures '{meta.primary}' where "
                                f"{tags[members[wid][0]]} measures '{first.primary}'; "
                                f"{tags[i]} is left out of this workload")
                continue
            if meta.params != first.params:
                shown = "; ".join(
                    f"{tags[j]}: " + ", ".join(f"{k}={v}" for k, v in
                                               sorted(sets[j].doc.workloads[wid].params.items()))
                    for j in [*members[wid], i])
                warnings.append(f"{wid}: parameters differ between sets ({shown}): the "
                                "programs did different work")
            members[wid].append(i)
    return workloads, members


def merge(sets: list[ResultSet], baseline: str | None = None,
          tags: list[str] | None = None) -> Merged:
    tags = _check_tags(sets, tags)
    warnings: list[str] = []
    series: list[Series] = []
    for i, rs in enumerate(sets):
        targets: list[str] = []
        for meta in rs.doc.workloads.values():
            targets += [t for t in meta.targets if t not in targets]
        short = short_labels(targets)  # the provenance is in the report's legend
        for t in targets:
            series.append(Series(f"{tags[i]} {short[t]}", i, tags[i], t, abi_of(t),
                                 str(rs.doc.host.hostname or "?"), rs.doc.host.kernel_bits))
    by_key = {(s.set_index, s.target): s for s in series}
    workloads, members = _members(sets, tags, warnings)

    parts: list[Part] = []
    artifacts, statuses, doc_warnings = [], [], []
    for i, rs in enumerate(sets):
        doc = rs.doc
        keep = frozenset(wid for wid, m in members.items() if i in m)
        parts.append(Part(doc, keep, {t: s.label for (j, t), s in by_key.items() if j == i},
                          i * ROUND_STRIDE))
        for a in doc.artifacts:
            if a.workload in keep and (i, a.target) in by_key:
                artifacts.append(replace(a, target=by_key[(i, a.target)].label))
        for st in doc.statuses:
            if st.workload in keep and (i, st.target) in by_key:
                statuses.append(replace(st, target=by_key[(i, st.target)].label))
        for w in doc.warnings:
            target = by_key.get((i, w.target or ""))
            doc_warnings.append(RunWarning(f"{tags[i]}: {w.message}", w.workload,
                                           target.label if target else w.target))
        for wid, o in doc.outcomes.items():
            if wid in keep and short_of_precision(o.stop_reason):
                warnings.append(f"{wid}: {tags[i]} stopped by budget before reaching the asked "
                                f"precision ({o.stop_reason})")

    measured: dict[str, set[str]] = {}
    for part in parts:
        for wid in part.keep or ():
            for t in part.doc.counted_targets(wid):
                if len(part.doc.column(wid, t, "round")) >= 2:
                    measured.setdefault(wid, set()).add(part.label(t))

    references: dict[str, str] = {}
    metas: dict[str, WorkloadMeta] = {}
    for wid, meta in workloads.items():
        cands = [by_key[(i, t)] for i in members[wid] for t in sets[i].doc.workloads[wid].targets]
        ref = _choose_reference(wid, cands, measured.get(wid, set()), baseline, warnings)
        labels = [c.label for c in cands]
        if ref is not None:
            references[wid] = ref
            labels = [lbl for lbl in labels if lbl != ref] + [ref]
        metas[wid] = meta.with_targets(labels)

    first_run = sets[0].doc.run
    run = Run(id=" + ".join(rs.doc.run.id for rs in sets),
              started=min(rs.doc.run.started for rs in sets), finished=None, status="merged",
              tool_version=first_run.tool_version,
              config=RunConfig(workloads=metas, cflags=first_run.config.cflags,
                               present=("cflags",),
                               # host libraries intended only where every run said so
                               extra={ALLOW_OPTION: True} if all(
                                   allowed(rs.doc) for rs in sets) else {}))
    merged = MergedDoc.of(parts, run=run, host=sets[0].doc.host, artifacts=tuple(artifacts),
                          statuses=tuple(statuses), warnings=tuple(doc_warnings))
    return Merged(merged, series, references, tags, warnings)
