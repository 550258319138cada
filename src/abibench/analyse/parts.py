"""Result sets merged by their names, not by copies: a merged document over its parts.

A comparison (analyse/merge.py) renames every target of every set ("vm k64 i386") and moves
each set's rounds apart (`ROUND_STRIDE`). It made a renamed copy of every sample: 10^6
samples compared with themselves held the run three times (2.8 GB). `MergedDoc` keeps each
set's document as it is and answers the analysis's questions (records.RunDoc's `column`,
`counted_targets`, `others`, `checks`) by asking the set's own document under the target's
stored name, the rounds moved as the copy's were; the few samples that do not count are
renamed as records. Its `samples` are the renamed copies made one at a time when something
walks them (the general path), so any question the columns do not answer is still the
copy's answer. tests/invariants/test_columnar.py holds the two to the same reports on generated
sets.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace
from typing import Any

from ..records import Artifact as ArtifactRecord
from ..records import (
    HostContext,
    Outcome,
    Run,
    RunDoc,
    RunWarning,
    Sample,
    TargetStatus,
)
from ..sysrecords import SystemBoot
from ..walked import Columnar, Walked

# Where a sample's workload, target and round are among its fields (records.Sample's order).
_FIELDS = [f.name for f in fields(Sample)]
_WORKLOAD, _TARGET, _ROUND = (_FIELDS.index(n) for n in ("workload", "target", "round"))


@dataclass(frozen=True)
class Part:
    """One result set in a merge: its document, the workloads it takes part in, each stored
    target's series label, and how far its rounds are moved."""

    doc: RunDoc
    keep: frozenset[str] | None  # None: every workload
    labels: dict[str, str]  # stored target -> series label
    offset: int

    def label(self, target: str) -> str:
        return self.labels.get(target, target)

    def keeps(self, workload: str) -> bool:
        return self.keep is None or workload in self.keep

    def renamed(self, s: Sample) -> Sample:
        """The sample as the merged document holds it (the copy merge made of each)."""
        if self.offset:
            return replace(s, target=self.label(s.target), round=s.round + self.offset)
        return replace(s, target=self.label(s.target))

    def samples(self) -> Iterator[Sample]:
        return map(self.renamed, (s for s in self.doc.samples if self.keeps(s.workload)))

    def renamed_columns(self, cols: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """A batch of the document's samples as field columns, as `samples` gives them: the
        kept workloads' only, each target renamed, each round moved."""
        out = list(cols)
        if self.keep is not None:
            kept = [w in self.keep for w in cols[_WORKLOAD]]
            if not all(kept):
                out = [tuple(itertools.compress(c, kept)) for c in out]
        out[_TARGET] = tuple(map(self.labels.get, out[_TARGET], out[_TARGET]))
        if self.offset:
            out[_ROUND] = tuple(r + self.offset for r in out[_ROUND])
        return out


class _Renamed(Walked[Sample]):
    """The parts' kept samples, renamed, made when they are read."""

    def __init__(self, parts: list[Part]) -> None:
        self._parts = parts

    @functools.cached_property
    def _n(self) -> int:
        return sum(1 for p in self._parts for s in p.doc.samples if p.keeps(s.workload))

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Sample]:
        return itertools.chain.from_iterable(p.samples() for p in self._parts)

    def field_columns(self, size: int) -> Iterator[list[tuple[Any, ...]]] | None:
        """walked.Columnar: each part's columns renamed, when every part's samples have them."""
        inner = [p.doc.samples for p in self._parts]
        got = [s.field_columns(size) if isinstance(s, Columnar) else None for s in inner]
        if any(g is None for g in got):
            return None
        batches = (p.renamed_columns(c) for p, g in zip(self._parts, got, strict=True)
                   if g is not None for c in g)
        return (c for c in batches if c[0])  # a batch with no kept sample is none

    def metric_names(self) -> set[str] | None:
        if any(p.keep is not None for p in self._parts):
            return None  # a part's names of every workload: more than the kept samples hold
        inner = [p.doc.samples.metric_names() if isinstance(p.doc.samples, Columnar) else None
                 for p in self._parts]
        if any(n is None for n in inner):
            return None
        return set().union(*(n for n in inner if n is not None))


class MergedDoc(RunDoc):
    """The merged document of `Part`s (see the module's doc). A copy made by
    `dataclasses.replace` has no parts and is the record-based document of its samples."""

    @staticmethod
    def of(parts: list[Part], run: Run, host: HostContext,
           artifacts: tuple[ArtifactRecord, ...], statuses: tuple[TargetStatus, ...],
           warnings: tuple[RunWarning, ...], outcomes: dict[str, Outcome] | None = None,
           system_boots: tuple[SystemBoot, ...] = ()) -> MergedDoc:
        """Each part's `labels` name every target its samples hold (a target they do not name
        keeps its name and must not be another's label)."""
        doc = MergedDoc(run=run, host=host, samples=_Renamed(parts),  # type: ignore[arg-type]
                        artifacts=artifacts, statuses=statuses, warnings=warnings,
                        outcomes=outcomes or {}, system_boots=system_boots)
        where: dict[str, tuple[Part, str]] = {}
        for p in parts:
            for target, label in p.labels.items():
                where[label] = (p, target)
        doc.__dict__["_merged"] = (parts, where)
        return doc

    def _parts(self) -> tuple[list[Part], dict[str, tuple[Part, str]]] | None:
        got: tuple[list[Part], dict[str, tuple[Part, str]]] | None = self.__dict__.get("_merged")
        return got

    def column(self, workload: str, target: str, name: str) -> tuple[Any, ...]:
        found = self._parts()
        if found is None:
            return super().column(workload, target, name)
        key = ("column", workload, target, name)
        got = self._memo.get(key)
        if got is None:
            part, stored = found[1].get(target, (None, ""))
            got = () if part is None or not part.keeps(workload) else \
                part.doc.column(workload, stored, name)
            if name == "round" and part is not None and part.offset:
                got = tuple(map(part.offset.__add__, got))
            self._memo[key] = got
        out: tuple[Any, ...] = got
        return out

    def counted_targets(self, workload: str) -> list[str]:
        found = self._parts()
        if found is None:
            return super().counted_targets(workload)
        return [p.label(t) for p in found[0] if p.keeps(workload)
                for t in p.doc.counted_targets(workload)]

    def n_counted(self) -> int:
        found = self._parts()
        if found is None:
            return super().n_counted()
        return sum(len(self.column(w, t, "round")) for w in self.workloads
                   for t in self.counted_targets(w))

    def others(self, workload: str) -> list[Sample]:
        found = self._parts()
        if found is None:
            return super().others(workload)
        return [p.renamed(s) for p in found[0] if p.keeps(workload)
                for s in p.doc.others(workload)]

    def checks(self, workload: str) -> tuple[dict[str, set[str]], bool]:
        found = self._parts()
        if found is None:
            return super().checks(workload)
        checks: dict[str, set[str]] = {}
        any_ok = False
        for p in found[0]:
            if p.keeps(workload):
                mine, ok = p.doc.checks(workload)
                checks.update((p.label(t), v) for t, v in mine.items())
                any_ok = any_ok or ok
        return checks, any_ok
