"""A label that carries provenance, shown short: the targets of a report and their legend.

A stored target label says where its program came from ('i386/prebuilt', 'x86_64/debian'), and
repeated in every ratio that made "i386/prebuilt/x86_64/prebuilt rate". A report shows the
short label `labels.short_labels` gives (the ABI, unless two targets of the run share it), and
says each target's provenance once, in the legend made here: every renderer (terminal, Markdown,
HTML) prints these entries and makes no label of its own. The stored run keeps its labels; only
the document the analysis reads is relabelled (`relabeled`), as a comparison's is (merge.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..records import Artifact, RunDoc, provenance_of
from .parts import MergedDoc, Part

# What each provenance is, in the words of a legend; the details follow from the artifact.
KIND_WORDS = {"source": "built from source", "prebuilt": "a prebuilt program",
              "debian": "Debian's own binary"}
MAX_DETAILS = 3  # distinct builds named per target (a suite's workloads share their compiler)


@dataclass(frozen=True)
class LegendEntry:
    label: str  # as every report shows it
    target: str  # as the run stored it
    provenance: str  # where its programs came from, in words

    @property
    def text(self) -> str:
        return f"{self.label} = {self.provenance}"


def targets_of(doc: RunDoc) -> list[str]:
    """Every target of a run, in the order of its workloads."""
    out: list[str] = []
    for meta in doc.workloads.values():
        out += [t for t in meta.targets if t not in out]
    for a in doc.artifacts:  # a target whose workload lists it no longer (an old run)
        if a.target and a.target not in out:
            out.append(a.target)
    return out


def detail(a: Artifact) -> str:
    """What one artifact is, beyond its kind: the compiler, the file, the Debian packages."""
    if a.provenance == "prebuilt":
        return str(Path(a.bin_dir) / a.files[0]) if a.files else a.bin_dir
    if a.provenance == "debian":
        pkgs = ", ".join(f"{k} {v}" for k, v in sorted((a.debian_packages or {}).items()))
        return f"{pkgs} ({a.compiler_version})" if pkgs else a.compiler_version or ""
    source = f"{a.source_package} {a.source_version or ''}".strip() if a.source_package else ""
    by = "; ".join(_named(tool, line) for tool, line in a.toolchain.items()) if a.toolchain \
        else a.compiler_version or a.compiler
    return ", ".join(x for x in (source, f"by {by}" if by else "") if x)


def _named(tool: str, line: str) -> str:
    """A toolchain's version line, with its name where the line lacks it (meson prints "1.0.1")."""
    name = Path(tool).name
    return line if line.lower().startswith(name.lower()) else f"{name} {line}"


def provenance_words(target: str, artifacts: Sequence[Artifact]) -> str:
    """A target's provenance in words, from its artifacts (its stored label when it has none)."""
    kinds = list(dict.fromkeys(a.provenance for a in artifacts)) or [provenance_of(target)]
    kind = " and ".join(KIND_WORDS.get(k, f"provenance '{k}'") for k in kinds)
    details = list(dict.fromkeys(d for d in map(detail, artifacts) if d))
    if not details:
        return kind if artifacts else f"{kind} (nothing was obtained)"
    more = len(details) - MAX_DETAILS
    shown = "; ".join(details[:MAX_DETAILS]) + (f"; and {more} more" if more > 0 else "")
    return f"{kind}: {shown}"


def legend(doc: RunDoc, names: Mapping[str, str]) -> list[LegendEntry]:
    """One entry per target of the run: its shown label, its stored label, its provenance."""
    return [LegendEntry(names.get(t, t), t,
                        provenance_words(t, [a for a in doc.artifacts if a.target == t]))
            for t in targets_of(doc)]


def relabeled(doc: RunDoc, names: Mapping[str, str]) -> RunDoc:
    """The run with each target named as `names` says: what the analysis of a report reads.
    Its samples are renamed by name, not copied (analyse/parts.py): a copy of each is made
    only if something walks them."""
    if all(names.get(t, t) == t for t in targets_of(doc)):
        return doc  # nothing to rename: a run built from source (the common case), no copy

    def n(target: str) -> str:
        return names.get(target, target)

    metas = {wid: m.with_targets([n(t) for t in m.targets]) for wid, m in doc.workloads.items()}
    run = replace(doc.run, config=replace(doc.run.config, workloads=metas))
    seen = set(targets_of(doc))
    for w in {*doc.workloads, *(s.workload for s in doc.warnings if s.workload)}:
        seen.update(doc.counted_targets(w))
        seen.update(s.target for s in doc.others(w))
    return MergedDoc.of(
        [Part(doc, None, {t: n(t) for t in seen}, 0)], run, doc.host,
        artifacts=tuple(replace(a, target=n(a.target)) for a in doc.artifacts),
        statuses=tuple(replace(s, target=n(s.target)) for s in doc.statuses),
        warnings=tuple(replace(w, target=n(w.target)) if w.target else w
                       for w in doc.warnings), outcomes=doc.outcomes,
        system_boots=doc.system_boots)
