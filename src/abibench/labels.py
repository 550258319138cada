"""Target labels ('x86_64/debian'): their ABI, host family, and the reference of a comparison.

:mod:`abibench.records` re-exports every name.
"""

from __future__ import annotations

from collections.abc import Sequence

from .abi import ABIS, FAMILY_CPU, REFERENCE_ABIS

# The reference ("b" of every ratio) is the 64-bit ABI of each host family: REFERENCE_ABIS,
# from the ABI table.


def abi_of(label: str) -> str:
    """The ABI part of a target label: 'x86_64/debian' -> 'x86_64'."""
    return label.split("/", 1)[0]


def family_of(label: str) -> str | None:
    """The host family of a target label's ABI (x86, arm, ...), None for an ABI this version
    lacks."""
    abi = ABIS.get(abi_of(label))
    return abi.family if abi else None


def emulated_words(label: str) -> str:
    """What the times of an emulated target are, in the words every report uses."""
    cpu = FAMILY_CPU.get(family_of(label) or "", "a real")
    return f"emulated: measures QEMU, not {cpu} CPU"


def is_reference(label: str) -> bool:
    return abi_of(label) in REFERENCE_ABIS


def pick_reference(labels: Sequence[str]) -> str:
    """The target every other is compared with: the 64-bit ABI, else the last one."""
    for ref in REFERENCE_ABIS:
        if ref in labels:
            return ref
    for ref in REFERENCE_ABIS:
        for label in labels:
            if abi_of(label) == ref:
                return label
    return labels[-1]


def provenance_of(label: str) -> str:
    """The provenance part of a target label: 'i386/prebuilt' -> 'prebuilt', 'i386' -> 'source'."""
    return label.split("/", 1)[1] if "/" in label else "source"


def short_labels(targets: Sequence[str]) -> dict[str, str]:
    """{stored target label: the label a report shows}, for the targets of one run.

    The one rule for a label that carries provenance ('i386/prebuilt'): a report shows the ABI
    alone when no other target of the run has that ABI, and the stored label ('i386/debian'
    beside a built 'i386') only where the ABI alone would be ambiguous; the provenance itself is
    said once, in the legend (analyse/legend.py). The labels stay unique, and each keeps its
    target's ABI (abi_of), which the analysis reads from it."""
    abis = [abi_of(t) for t in targets]
    return {t: abi_of(t) if abis.count(abi_of(t)) == 1 else t for t in targets}
