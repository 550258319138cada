"""No merge or patch debris in the tree: the family is "a leftover of resolving a conflict or
applying a patch committed as if it were source" (`html.py.orig` and `html.py.rej` sat in
src/abibench/report/ for a session). One predicate says what debris is; the repository is
checked with it, and the predicate itself is tried on generated names and texts so it can fail.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
DEBRIS_SUFFIXES = (".orig", ".rej", ".BACKUP", ".BASE", ".LOCAL", ".REMOTE", ".porig")
# A conflict marker is one of these at the start of a line followed by a space or the line's end.
MARKERS = ("<<<<<<<", ">>>>>>>", "|||||||")


def is_debris_name(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return any(base.endswith(s) for s in DEBRIS_SUFFIXES) or any(
        f"{s}." in base for s in (".BACKUP", ".BASE", ".LOCAL", ".REMOTE"))


def conflict_lines(text: str) -> list[int]:
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        for m in MARKERS:
            if line.startswith(m) and (len(line) == len(m) or line[len(m)] == " "):
                out.append(i)
    return out


def tracked() -> list[str]:
    proc = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False)
    if proc.returncode != 0:  # not a git checkout (an sdist): nothing to check
        return []
    return [p for p in proc.stdout.decode().split("\0") if p]


def test_no_debris_file_is_tracked() -> None:
    assert [p for p in tracked() if is_debris_name(p)] == []


def test_no_conflict_marker_in_tracked_text() -> None:
    found = []
    for p in tracked():
        path = REPO / p
        if path.suffix not in {".py", ".c", ".h", ".md", ".toml", ".sh", ".yml", ".yaml", ".json",
                               ".cfg", ".txt", ".html", ".css"} or not path.is_file():
            continue
        lines = conflict_lines(path.read_text(errors="replace"))
        if lines:
            found.append((p, lines[:3]))
    assert found == []


names = st.text(alphabet="abcdefghij_/.", min_size=1, max_size=20).filter(lambda s: not s.endswith("/"))


@settings(max_examples=60, deadline=None)
@given(names, st.sampled_from(DEBRIS_SUFFIXES))
def test_debris_names_are_recognised(stem: str, suffix: str) -> None:
    assert is_debris_name(stem + suffix)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab =<>|\n", max_size=12), max_size=6),
       st.sampled_from(MARKERS), st.integers(0, 6), st.text(alphabet="abc", max_size=5))
def test_markers_are_found_where_planted(lines: list[str], marker: str, at: int,
                                         tail: str) -> None:
    clean = [ln.replace("\n", "") for ln in lines]
    clean = [ln for ln in clean if not conflict_lines(ln)]
    at = min(at, len(clean))
    planted = [*clean[:at], f"{marker} {tail}".rstrip(), *clean[at:]]
    assert conflict_lines("\n".join(planted)) == [at + 1]
