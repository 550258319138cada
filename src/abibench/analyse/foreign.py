"""Targets that measure the host's libraries, not the program compared: no verdict.

A target whose program loads a shared library from outside its build or sysroot (the x86_64
side of a comparison with /usr/bin/jq loads the system's libjq.so.1 and libonig.so.5) would
compare the host's build of those libraries with the other side's: its time and its size
differences say nothing about the program asked about. This module is the one place that
decides it: such a target, and every comparison it is a side of, gets no verdict, in time or
in size, unless the run was told it is intended (`run --allow-host-libs`, stored with the run
so that every later report agrees).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..obtain.hostlibs import advice, library_names
from ..records import RunDoc

ALLOW_OPTION = "allow_host_libs"  # the run's config.extra key `run --allow-host-libs` sets


def allowed(doc: RunDoc) -> bool:
    return bool(doc.run.config.extra.get(ALLOW_OPTION))


def host_loaders(doc: RunDoc, workload: str) -> dict[str, tuple[str, ...]]:
    """{target: the host libraries it loads} for one workload, whether allowed or not."""
    out = {}
    for art in doc.artifacts:
        if art.workload == workload and (names := library_names(art)):
            out[art.target] = names
    return out


def withheld(doc: RunDoc, workload: str) -> dict[str, tuple[str, ...]]:
    """{target: libraries} of the targets that get no verdict: none when the run allowed it."""
    return {} if allowed(doc) else host_loaders(doc, workload)


def no_verdict(doc: RunDoc, workload: str) -> list[str]:
    """One line per target without a verdict: what it measures, and what to do."""
    out = []
    for target, names in withheld(doc, workload).items():
        art = doc.artifact_of(workload, target)
        libs = ", ".join(names)
        fix = advice(art) if art is not None else "build the libraries with the program"
        out.append(f"{target}: no verdict (time or size): it loads the host's {libs}, so it "
                   f"measures the host's {names[0]}, not yours; {fix}, or run with "
                   "--allow-host-libs if that is what you mean to compare")
    return out


def comparable(target: str, reference: str | None, foreign: Mapping[str, object]) -> bool:
    """Whether a target may be compared with its reference: neither loads host libraries."""
    return target not in foreign and (reference is None or reference not in foreign)
