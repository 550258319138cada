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
