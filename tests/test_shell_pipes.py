"""Under `set -o pipefail` no pipeline feeds a reader that stops before the end of its input.

`dpkg --print-foreign-architectures | grep -qx i386` failed 34 times in 200 in setup.sh: grep
stops at its first match, dpkg writes its next line into a closed pipe and dies of SIGPIPE, and
pipefail makes the pipeline fail with the answer found, so set-up added i386 again and ran
apt-get update. A command's answer is read whole first (`x=$(cmd)`, then `<<< "$x"`), or the
reader reads to the end (`sed -n 1p` rather than `head -1`). Invariant in docs/reliability.md.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]

# Readers that may stop before their input ends: grep told to stop at a match (-q, -m, and
# their long names), head, and a sed script with a q/Q command.
_GREP_EARLY = re.compile(r"^(?:-[A-Za-z]*[qm]|--quiet|--silent|--max-count)")
_SED_QUIT = re.compile(r"(?:^|[;{}/\d$])\s*[qQ]\s*\d*\s*(?:$|[;}])")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_STAGE_END = re.compile(r"\|\||&&|[;&()`]|\$\(")


def _logical_lines(text: str) -> list[tuple[int, str, list[str]]]:
    """(first line number, line, its quoted texts) with backslash continuations and lines that
    go on after a pipe or start with one joined, comments left out, and each quoted text
    replaced by its index between two \\x01 (a quoted `|` is not a pipe; sed's quoted script
    is read from the list)."""
    out: list[tuple[int, str, list[str]]] = []
    quoted: list[str] = []

    def hide(m: re.Match[str]) -> str:
        quoted.append(m.group(0)[1:-1])
        return f"\x01{len(quoted) - 1}\x01"

    buf, first = "", 0
    for no, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", _QUOTED.sub(hide, raw)).rstrip()
        if buf and not line.lstrip().startswith("|") and not buf.endswith(("\\", "|")):
            out.append((first, buf, quoted))
            buf = ""
        if not buf:
            first = no
        buf = (buf.removesuffix("\\") + " " + line.strip()) if buf else line
    if buf:
        out.append((first, buf, quoted))
    return out


def _unhide(text: str, quoted: list[str], show: Callable[[str], str]) -> str:
    return re.sub("\x01(\\d+)\x01", lambda m: show(quoted[int(m.group(1))]), text)


def _early_reader(stage: str, quoted: list[str]) -> bool:
    words = [_unhide(w, quoted, str) for w in stage.split()
             if not re.match(r"^[A-Za-z_]\w*=", w) and w != "!"]
    if not words:
        return False
    cmd = words[0].rsplit("/", 1)[-1]
    if cmd == "head":
        return True
    if cmd in ("grep", "egrep", "fgrep"):
        return any(_GREP_EARLY.match(w) for w in words[1:])
    if cmd == "sed":
        return any(_SED_QUIT.search(w) for w in words[1:] if not w.startswith("-"))
    return False


def early_stops(text: str) -> list[str]:
    """`LINE: stage` for every pipe into a reader that may stop before its input ends."""
    found = []
    for no, line, quoted in _logical_lines(text):
        for segment in _STAGE_END.split(line):
            for stage in re.split(r"(?<!\|)\|(?!\|)", segment)[1:]:
                if _early_reader(stage, quoted):
                    found.append(f"{no}: {_unhide(stage, quoted, repr).strip()}")
    return found


def _pipefail_scripts() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.sh"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.split()
    return [REPO / p for p in listed if "pipefail" in (REPO / p).read_text()]


def test_no_script_with_pipefail_pipes_into_a_reader_that_stops_early() -> None:
    scripts = _pipefail_scripts()
    assert REPO / "setup.sh" in scripts and REPO / "scripts" / "test.sh" in scripts
    bad = {str(p.relative_to(REPO)): early_stops(p.read_text()) for p in scripts}
    assert {k: v for k, v in bad.items() if v} == {}


EARLY = ("head", "head -1", "head -n 2", "grep -q x", "grep -qx -- \"$a\"", "grep -m1 y",
         "grep --quiet z", "grep -Eq 'a|b'", "sed q", "sed -n '1{p;q}'", "/usr/bin/head -c 4")
SAFE = ("grep x", "grep -x -- \"$a\"", "grep -c 'q|m'", "sed -n 1p", "sed 's/q/r/'", "tr a b",
        "sort -u", "awk '{print $1}'", "cat", "wc -l", "cut -d' ' -f1", "sed -n 's/a/b/p'")
PRODUCERS = ("dpkg --print-foreign-architectures", "printf 'a|b\\n'", "echo \"x | head\"",
             "apt-cache depends gcc 2>/dev/null", "find . -type f")
JOINS = (" | ", "|", " |\\\n    ", "\n  | ")


@settings(max_examples=60, deadline=None)
@given(producer=st.sampled_from(PRODUCERS),
       readers=st.lists(st.tuples(st.sampled_from(JOINS), st.sampled_from(EARLY + SAFE)),
                        max_size=3),
       wrap=st.sampled_from(("{}", "x=$({})", "if ! {}; then :; fi", "{} || true",
                             "{} && echo ok # | head")))
def test_a_pipe_into_an_early_reader_is_found_wherever_it_is(
        producer: str, readers: list[tuple[str, str]], wrap: str) -> None:
    pipeline = producer + "".join(join + reader for join, reader in readers)
    text = "set -euo pipefail\n" + wrap.format(pipeline) + "\necho done | tr a b\n"
    expected = any(reader in EARLY for _, reader in readers)
    assert bool(early_stops(text)) == expected, (text, early_stops(text))
