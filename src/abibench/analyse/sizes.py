"""The size factor (seed 000): every artifact's file, text, data, bss and stripped size per ABI,
and how much larger the 64-bit build is. Pure functions of a run document."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass

from ..abi import ABIS, REFERENCE_ABIS
from ..obtain.hostlibs import library_names
from ..records import Artifact, JSONDict, TargetStatus, abi_of, family_of


@dataclass(frozen=True)
class SizeRow:
    workloads: tuple[str, ...]  # every workload of the run that used this very build
    artifact: str
    target: str
    state: str  # ok | not run | failed ... (x32 is built and sized but not run here)
    file: int | None
    text: int | None
    data: int | None
    bss: int | None
    stripped: int | None
    reference: str | None  # the 64-bit target of its family it is compared with
    # how much larger the 64-bit build is than this one, in percent (seed 000's "% larger");
    # None, too, when either side loads the host's libraries (analyse/foreign.py)
    file_larger_pct: float | None
    stripped_larger_pct: float | None
    # the shared libraries its sizes count besides the file itself (Artifact.libraries), and
    # whether they are the host's (loaded from outside its build) or its own package's
    libraries: tuple[str, ...] = ()
    host_libraries: bool = False
    no_verdict: bool = False  # it or its reference loads the host's libraries
    # host libraries it loads whose sizes were not recorded (unreadable, or an older run)
    uncounted: tuple[str, ...] = ()

    def to_dict(self) -> JSONDict:
        out: JSONDict = asdict(self)
        out["workloads"] = list(self.workloads)
        out["libraries"] = list(self.libraries)
        out["uncounted"] = list(self.uncounted)
        return out


SIZE_KEYS = ("file", "text", "data", "bss", "stripped")


def larger_pct(ref: int | None, this: int | None) -> float | None:
    """How much larger the reference (64-bit) build is than this one, in %: one way of stating
    a size difference, in the sizes table and beside each target alike."""
    if not ref or not this:
        return None
    return round(100.0 * (ref / this - 1.0), 2)


def with_libraries(art: Artifact, name: str, sz: dict[str, int | None]) -> dict[str, int | None]:
    """A file's sizes, and for the program (its first file) those of the libraries it counts
    (Artifact.libraries) added: a figure unknown for any of them is unknown."""
    if not art.libraries or not art.files or name != art.files[0]:
        return sz
    parts = [sz, *art.libraries.values()]
    return {k: (None if any(p.get(k) is None for p in parts)
                else sum(int(p[k] or 0) for p in parts)) for k in SIZE_KEYS}


def _by_file(arts: Sequence[Artifact]) -> list[tuple[str, dict[str, dict[str, int | None]]]]:
    """(file name, {target: sizes}) per file of a build. Files are matched by name; programs
    named per ABI (prebuilt prog32 and prog64) are matched by their place instead."""
    lists = [[n for n in (a.files or tuple(a.sizes)) if n in a.sizes] for a in arts]
    if len({tuple(x) for x in lists}) > 1 and len({len(x) for x in lists}) == 1:
        return [(lists[0][k], {a.target: with_libraries(a, x[k], a.sizes[x[k]])
                               for a, x in zip(arts, lists, strict=True)})
                for k in range(len(lists[0]))]
    names = list(dict.fromkeys(n for a in arts for n in a.sizes))
    return [(n, {a.target: with_libraries(a, n, a.sizes.get(n) or {}) for a in arts})
            for n in names]


def size_rows(artifacts: Sequence[Artifact], statuses: Sequence[TargetStatus] = (),
              foreign: Collection[tuple[str, str]] = ()) -> list[SizeRow]:
    """One row per (build, artifact file, target), builds shared by workloads listed once.
    ``foreign``: the (workload, target) pairs that load the host's libraries and get no
    verdict (analyse/foreign.py): no size difference is stated for them or against them."""
    states = {(s.workload, s.target): s.state for s in statuses}
    by_workload: dict[str, list[Artifact]] = {}
    for a in artifacts:
        if a.sizes:
            by_workload.setdefault(a.workload, []).append(a)
    groups: dict[tuple[str, ...], list[str]] = {}
    arts_of: dict[tuple[str, ...], list[Artifact]] = {}
    for wid, arts in by_workload.items():
        # Debian's programs all live in /usr/bin: a build is its sysroot's directory there.
        key = tuple(sorted(f"{a.target}:{a.sysroot or ''}:{a.bin_dir}" for a in arts))
        groups.setdefault(key, []).append(wid)
        arts_of.setdefault(key, arts)
    rows: list[SizeRow] = []
    for key, wids in groups.items():
        arts = arts_of[key]
        for name, per_target in _by_file(arts):
            # the program's row (its first file; matched by place when named per ABI)
            main = {a.target: bool(a.files) and name in (a.files[0], arts[0].files[0])
                    for a in arts}
            for a in arts:
                label = a.target
                sz = per_target[label]
                suffix = label[len(abi_of(label)):]
                # The 64-bit ABI of the same family: armhf is compared with aarch64, i386
                # and x32 with x86_64, whatever else the run built.
                ref = next((r + suffix for r in REFERENCE_ABIS if r + suffix in per_target
                            and family_of(r) in (family_of(label), None)), None)
                barred = any((w, t) in foreign for w in wids for t in (label, ref))
                ref_sz = per_target.get(ref, {}) if ref and ref != label and not barred else {}
                libs = tuple(a.libraries) if main[label] else ()
                missed = tuple(n for n in library_names(a) if n not in a.libraries) \
                    if main[label] else ()
                rows.append(SizeRow(
                    workloads=tuple(wids), artifact=name, target=label,
                    state=states.get((wids[0], label), "ok"),
                    file=sz.get("file"), text=sz.get("text"), data=sz.get("data"),
                    bss=sz.get("bss"), stripped=sz.get("stripped"),
                    reference=ref if ref != label else None,
                    file_larger_pct=larger_pct(ref_sz.get("file"), sz.get("file")),
                    stripped_larger_pct=larger_pct(ref_sz.get("stripped"), sz.get("stripped")),
                    libraries=libs, host_libraries=bool(libs) and a.sysroot is None,
                    no_verdict=barred, uncounted=missed))
    return rows


def library_notes(rows: Sequence[SizeRow]) -> list[str]:
    """Which libraries each program's sizes count, named: a reader must know that node's
    figure is node and libnode, or that a program's is the host's libraries too."""
    out = []
    for r in rows:
        if not r.libraries:
            continue
        whose = ("the host's libraries it loads" if r.host_libraries
                 else "the shared libraries of its own source package")
        out.append(f"{r.target}: its program's sizes count {whose}: "
                   f"{', '.join(r.libraries)}")
    for r in rows:
        if r.uncounted:
            out.append(f"{r.target}: its sizes do not count {', '.join(r.uncounted)}, which it "
                       "loads from the host (not sized when it was measured)")
    for r in rows:
        if r.no_verdict and r.reference:
            out.append(f"{r.target}: no size difference stated: it or {r.reference} loads "
                       "the host's libraries (no verdict)")
    return out


PADDING_BYTES = 32 * 1024  # file bytes beyond its segments that only alignment explains


def size_notes(rows: Sequence[SizeRow]) -> list[str]:
    """What a reader of the size table must know to read it right."""
    padded = sorted({r.target for r in rows
                     if r.file is not None and r.stripped is not None and r.text is not None
                     and r.data is not None and r.stripped - r.text - r.data >= PADDING_BYTES})
    if not padded:
        return library_notes(rows)
    aligned = []
    for t in padded:
        abi = ABIS.get(abi_of(t))
        page = abi.max_page_size if abi else 0
        aligned.append(f"{t} ({page // 1024} KiB)" if page >= 1024 else t)
    return [f"{', '.join(aligned)}: even stripped, the file holds {PADDING_BYTES // 1024} KiB or "
            "more beyond its segments: Debian's linker for it aligns segments to that "
            "max-page-size, so a small program's file is mostly padding; compare text",
            *library_notes(rows)]
