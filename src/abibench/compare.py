"""Merging result sets from different machines, kernels or days into one N-way comparison.

Every result set is one run document (from the database or an imported file). A set is tagged
by its host and kernel bitness ("vm k64"); each of its targets becomes a *series* named
"TAG TARGET" ("vm k64 i386": a 64-bit kernel running i386 userspace, seed 003's matrix).

The merged document has the same shape as a single run, so :func:`abibench.analyse.analyse`
computes it with exactly the statistics of a single run. Two rules keep that honest:

* Rounds of different sets are moved apart (``ROUND_STRIDE``), so samples of two sets are never
  paired by round: only samples of the same run share a machine's drift.
* analyse takes the 64-bit ABI as the reference when a label is exactly ``x86_64``/``aarch64``
  and otherwise the last measured target. Series labels always carry a tag, so the reference
  series is put last in each workload's target list; :func:`merge` returns the wanted
  reference per workload and the caller checks analyse agreed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .analyse import pick_reference
from .errors import UsageError
from .importer import load_file
from .store import Store

ROUND_STRIDE = 1_000_000


@dataclass(frozen=True)
class ResultSet:
    doc: dict[str, Any]
    source: str  # "run ID" (database) or a file path
    tag: str = ""


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
    doc: dict[str, Any]
    series: list[Series]
    references: dict[str, str]  # workload -> reference series label
    tags: list[str]
    warnings: list[str] = field(default_factory=list)


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


def _abi_of(target: str) -> str:
    return target.split("/", 1)[0]


def default_tags(sets: list[ResultSet]) -> list[str]:
    """host + kernel bitness; sets that would share a tag get their date, then their run id."""
    tags = []
    for rs in sets:
        host = rs.doc.get("host", {})
        bits = host.get("kernel_bits")
        name = str(host.get("hostname") or "host")
        tags.append(f"{name} k{bits}" if bits else name)
    for extra in ("date", "id"):
        seen: dict[str, int] = {}
        for t in tags:
            seen[t] = seen.get(t, 0) + 1
        if all(n == 1 for n in seen.values()):
            break
        for i, rs in enumerate(sets):
            if seen[tags[i]] > 1:
                run = rs.doc["run"]
                tags[i] += f" {run['started'][:10]}" if extra == "date" else f" {run['id']}"
    if len(set(tags)) != len(tags):  # the same run twice
        tags = [f"{t} #{i + 1}" for i, t in enumerate(tags)]
    return tags


def _counted(s: dict[str, Any]) -> bool:
    return s["status"] == "ok" and not s["warmup"] and s.get("kind", "timed") == "timed"


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


def merge(sets: list[ResultSet], baseline: str | None = None,
          tags: list[str] | None = None) -> Merged:
    if len(sets) < 2:
        raise UsageError("a comparison needs at least two result sets: pass two or more run ids "
                         "or exported .json files")
    if tags is not None and len(tags) != len(sets):
        raise UsageError(f"{len(tags)} --tag values for {len(sets)} result sets: give one per "
                         "set, in order")
    tags = tags or default_tags(sets)
    if len(set(tags)) != len(tags):
        raise UsageError(f"tags must differ between result sets, got {', '.join(tags)}")
    warnings: list[str] = []
    series: list[Series] = []
    for i, rs in enumerate(sets):
        host = rs.doc.get("host", {})
        targets: list[str] = []
        for meta in rs.doc["run"]["config"]["workloads"].values():
            targets += [t for t in meta["targets"] if t not in targets]
        for t in targets:
            series.append(Series(f"{tags[i]} {t}", i, tags[i], t, _abi_of(t),
                                 str(host.get("hostname") or "?"), host.get("kernel_bits")))
    by_key = {(s.set_index, s.target): s for s in series}

    workloads: dict[str, dict[str, Any]] = {}
    members: dict[str, list[int]] = {}  # workload -> set indexes contributing to it
    for i, rs in enumerate(sets):
        for wid, meta in rs.doc["run"]["config"]["workloads"].items():
            first = workloads.get(wid)
            if first is None:
                workloads[wid] = {**meta, "targets": []}
                members[wid] = [i]
                continue
            base_primary = first["primary"]
            better = first["metrics"].get(base_primary, {}).get("better")
            if meta["primary"] != base_primary or \
                    meta["metrics"].get(base_primary, {}).get("better") != better:
                warnings.append(f"{wid}: {tags[i]} measures '{meta['primary']}' where "
                                f"{tags[members[wid][0]]} measures '{base_primary}'; "
                                f"{tags[i]} is left out of this workload")
                continue
            if meta.get("params", {}) != first.get("params", {}):
                shown = "; ".join(
                    f"{tags[j]}: " + ", ".join(f"{k}={v}" for k, v in
                                               sorted(sets[j].doc["run"]["config"]["workloads"]
                                                      [wid].get("params", {}).items()))
                    for j in [*members[wid], i])
                warnings.append(f"{wid}: parameters differ between sets ({shown}): the "
                                "programs did different work")
            members[wid].append(i)

    samples: list[dict[str, Any]] = []
    artifacts: list[dict[str, Any]] = []
    statuses: list[dict[str, Any]] = []
    doc_warnings: list[dict[str, Any]] = []
    for i, rs in enumerate(sets):
        doc = rs.doc
        keep = {wid for wid, m in members.items() if i in m}
        for s in doc["samples"]:
            if s["workload"] in keep:
                samples.append({**s, "target": by_key[(i, s["target"])].label,
                                "round": s["round"] + i * ROUND_STRIDE})
        for a in doc.get("artifacts", []):
            if a["workload"] in keep and (i, a["target"]) in by_key:
                artifacts.append({**a, "target": by_key[(i, a["target"])].label})
        for st in doc.get("target_status", []):
            if st["workload"] in keep and (i, st["target"]) in by_key:
                statuses.append({**st, "target": by_key[(i, st["target"])].label})
        for w in doc.get("warnings", []):
            target = by_key.get((i, w.get("target") or ""))
            doc_warnings.append({**w, "message": f"{tags[i]}: {w['message']}",
                                 "target": target.label if target else w.get("target")})
        for wid, o in doc.get("outcomes", {}).items():
            if wid in keep and o["stop_reason"].startswith(("time budget", "max ")):
                warnings.append(f"{wid}: {tags[i]} stopped by budget before reaching the asked "
                                f"precision ({o['stop_reason']})")

    measured: dict[str, set[str]] = {}
    counts: dict[tuple[str, str], int] = {}
    for s in samples:
        if _counted(s):
            key = (s["workload"], s["target"])
            counts[key] = counts.get(key, 0) + 1
    for (wid, label), n in counts.items():
        if n >= 2:
            measured.setdefault(wid, set()).add(label)

    references: dict[str, str] = {}
    for wid, meta in workloads.items():
        cands = [by_key[(i, t)] for i in members[wid]
                 for t in sets[i].doc["run"]["config"]["workloads"][wid]["targets"]]
        ref = _choose_reference(wid, cands, measured.get(wid, set()), baseline, warnings)
        labels = [c.label for c in cands]
        if ref is not None:
            references[wid] = ref
            labels = [lbl for lbl in labels if lbl != ref] + [ref]
        meta["targets"] = labels

    first_run = sets[0].doc["run"]
    merged_doc = {
        "format": sets[0].doc["format"], "version": sets[0].doc["version"],
        "run": {"id": " + ".join(rs.doc["run"]["id"] for rs in sets),
                "started": min(rs.doc["run"]["started"] for rs in sets),
                "finished": None, "status": "merged",
                "tool_version": first_run["tool_version"],
                "config": {"workloads": workloads, "cflags": first_run["config"].get("cflags", [])}},
        "host": sets[0].doc.get("host", {}),
        "artifacts": artifacts, "target_status": statuses, "warnings": doc_warnings,
        "outcomes": {}, "samples": samples,
    }
    return Merged(merged_doc, series, references, tags, warnings)
