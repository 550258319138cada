"""What a run can produce, beyond each field's type and rule (which the codec checks): the
checks an imported or streamed document must pass (store/exchange.py), one sample at a time or
a whole document, raising `codec.Invalid` at the `$.path` of the first field that breaks them.
Apart from records.py, which defines the records, so that each stays a room of its own."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, repeat
from typing import Any

from .codec import Invalid, parse_time
from .metrics import _BUILTIN_FIELDS, BUILTIN_METRICS, Metric
from .records import RunDoc, Sample
from .sysrecords import check_system


def check_document(doc: RunDoc) -> None:
    """What a run guarantees beyond each field's type and rule (which the codec checks):
    raises `codec.Invalid` at the `$.path` of the first field that breaks it.

    Samples belong to declared workloads and targets; no two timed samples that count take
    the same place in a round; a metric named like a built-in one means exactly it; the
    primary metric is in every counted sample; a run ends after it starts.
    """
    run = doc.run
    if run.finished is not None and parse_time(run.finished) < parse_time(run.started):
        raise Invalid(f"finished {run.finished!r:.40} is before started {run.started!r:.40}"
                      ).at(".finished").at(".run")
    for wid, meta in doc.workloads.items():
        at = f".run.config.workloads.{wid}"
        for name, m in meta.metrics.items():
            _check_not_shadowing(name, m, f"{at}.metrics.{name}")
        if meta.primary not in meta.metrics and meta.primary not in BUILTIN_METRICS:
            raise Invalid(f"metric {meta.primary!r:.40} is not declared in its metrics"
                          ).at(f"{at}.primary")
    check = sample_checker(doc)
    for i, s in enumerate(doc.samples):
        check(i, s)
    for i, a in enumerate(doc.artifacts):
        if a.sizes and not a.files:
            raise Invalid("is missing or empty although sizes are given"
                          ).at(f".artifacts[{i}].files")
    check_system(doc.run.config.system, doc.system_boots)


class SampleChecker:
    """What check_document checks of each sample, one at a time (the i-th of the document):
    how an import that streams its samples checks them exactly as a whole document's.

    `quick` is the same rules on a sample's fields (in the record's order, as
    store/shapes.py's plans give them without making the record), for the samples they
    plainly pass: True when the sample passes (its place is then taken), False when the
    record must be made and checked by `__call__`, which refuses it with its `$.path` or
    passes it. tests/store/test_import_rows.py holds the two paths' rows equal."""

    def __init__(self, doc: RunDoc) -> None:
        self._doc = doc
        self._places: set[tuple[str, str, int, int]] = set()

    def __call__(self, i: int, s: Sample) -> None:
        _check_sample(self._doc, s, f".samples[{i}]")
        if s.kind == "timed" and s.discarded is None:
            if s.key in self._places:
                raise Invalid(f"a second timed sample of {s.target!r:.40} in round {s.round} at "
                              f"position {s.position} of workload {s.workload!r:.40}",
                              "export the run again; an edited file must keep one sample per "
                              "target, round and position").at(f".samples[{i}].position")
            self._places.add(s.key)

    def quick(self, values: tuple[Any, ...]) -> bool:
        w, t, rnd, pos, status, warmup, kind, discarded, metrics, counters = _QUICK(values)
        meta = self._doc.workloads.get(w)
        if meta is None or t not in meta.targets or counters is not None \
                or not BUILTIN_METRICS.keys().isdisjoint(metrics):
            return False
        if status == "ok" and not warmup and kind == "timed" and discarded is None:  # counted
            name = _BUILTIN_FIELDS.get(meta.primary)  # as Sample.value reads it
            if (metrics.get(meta.primary) if name is None else values[_INDEX[name]]) is None:
                return False
        if kind == "timed" and discarded is None:
            key = (w, t, rnd, pos)
            if key in self._places:
                return False
            self._places.add(key)
        return True


    def quick_columns(self, c: Mapping[str, Sequence[Any]], n: int) -> bool:
        """`quick` of n samples at once, given as one column per field (store/batch.py):
        True when every one passes (their places are then taken), False when none is taken
        and each must go through `quick` or the record, one by one, in order."""
        workloads = self._doc.workloads
        ws, kinds, discarded = c["workload"], c["kind"], c["discarded"]
        for w, t in set(zip(ws, c["target"], strict=True)):
            meta = workloads.get(w)
            if meta is None or t not in meta.targets:
                return False
        if list(c["counters"]).count(None) != n or not BUILTIN_METRICS.keys().isdisjoint(
                chain.from_iterable(c["metrics"])):
            return False
        found: dict[str, Sequence[Any]] = {}  # each primary's values, once for its workloads
        for w in set(ws):
            if not self._primaries(c, w, found):
                return False
        keys: Iterable[tuple[Any, ...]] = zip(ws, c["target"], c["round"], c["position"],
                                              strict=True)
        if list(kinds).count("timed") != n or list(discarded).count(None) != n:
            keys = (k for k, kind, d in zip(keys, kinds, discarded, strict=True)
                    if kind == "timed" and d is None)
        places = list(keys)
        if len(set(places)) != len(places) or not self._places.isdisjoint(places):
            return False
        self._places.update(places)
        return True

    def _primaries(self, c: Mapping[str, Sequence[Any]], w: str,
                   found: dict[str, Sequence[Any]]) -> bool:
        """Whether every counted sample of workload `w` among the columns' has its primary
        metric (as Sample.value reads it); `found`: the primaries' values already read."""
        primary = self._doc.workloads[w].primary
        values = found.get(primary)
        if values is None:
            name = _BUILTIN_FIELDS.get(primary)
            values = found[primary] = c[name] if name is not None else \
                list(map(dict.get, c["metrics"], repeat(primary)))
        if None not in values:
            return True
        for wi, value, status, warmup, kind, d in zip(
                c["workload"], values, c["status"], c["warmup"], c["kind"], c["discarded"],
                strict=True):
            if wi == w and value is None and status == "ok" and not warmup and \
                    kind == "timed" and d is None:
                return False
        return True


def sample_checker(doc: RunDoc) -> SampleChecker:
    """What check_document checks of each sample, one at a time: `SampleChecker`."""
    return SampleChecker(doc)


_INDEX = {f.name: i for i, f in enumerate(dataclasses.fields(Sample))}
_QUICK = operator.itemgetter(*(_INDEX[n] for n in (
    "workload", "target", "round", "position", "status", "warmup", "kind", "discarded",
    "metrics", "counters")))


def _check_not_shadowing(name: str, m: Metric, at: str) -> None:
    """A workload's metric named like a built-in one is that one: never another unit or
    direction (a `wall` where higher is better would invert every verdict)."""
    own = BUILTIN_METRICS.get(name)
    if own is not None and (m.unit, m.better) != (own.unit, own.better):
        raise Invalid(f"metric {name!r} is measured by abibench itself ({own.unit}, "
                      f"{own.better} is better) and cannot be redefined",
                      "rename the workload's metric").at(at)


def _check_sample(doc: RunDoc, s: Sample, at: str) -> None:
    meta = doc.workloads.get(s.workload)
    if meta is None:
        raise Invalid(f"workload {s.workload!r:.40} is not in run.config.workloads"
                      ).at(f"{at}.workload")
    if s.target not in meta.targets:
        raise Invalid(f"target {s.target!r:.40} is not one of the workload's targets"
                      ).at(f"{at}.target")
    for name in s.metrics:
        if name in BUILTIN_METRICS:
            raise Invalid(f"metric {name!r} is measured by abibench itself: a program's "
                          "metrics cannot hold it", "rename the metric").at(f"{at}.metrics.{name}")
    if s.counters is not None:
        n = len(s.counters.events)
        if len(s.counters.totals) != n:
            raise Invalid(f"expected one total per event ({n}), found "
                          f"{len(s.counters.totals)}").at(f"{at}.counters.totals")
        for part in ("functions", "objects"):
            for j, fn in enumerate(getattr(s.counters, part)):
                if len(fn.counts) > n:
                    raise Invalid(f"expected at most one count per event ({n})"
                                  ).at(f"{at}.counters.{part}[{j}]")
    if s.counted and s.value(meta.primary) is None:
        raise Invalid(f"the primary metric {meta.primary!r:.40} is missing from a counted "
                      "sample").at(f"{at}.metrics")
