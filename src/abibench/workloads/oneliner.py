"""`abibench run --binary i386=./prog32 --binary x86_64=./prog64 -- ARGS`: two programs someone
already built, compared without a profile file.

The command line becomes an ordinary profile (a [binaries] table and a [run] command), written
next to the results so a run of it can be reported, exported and resumed like any other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import UsageError

_METRIC = re.compile(r"^(?P<name>[a-z][a-z0-9_]*)(?::(?P<unit>[^:=]*))?"
                     r"(?::(?P<better>higher|lower))?=(?P<regex>.+)$", re.S)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    unit: str
    better: str
    regex: str


def parse_binary(text: str) -> tuple[str, str]:
    """`ABI=PATH` of --binary."""
    abi, sep, path = text.partition("=")
    if not sep or not abi.strip() or not path.strip():
        raise UsageError(f"--binary {text}: write ABI=PATH, e.g. --binary i386=./prog32")
    return abi.strip(), path.strip()


def parse_metric(text: str) -> MetricSpec:
    """`NAME[:UNIT[:higher|lower]]=REGEX` of --metric; group 1 of REGEX is the value."""
    m = _METRIC.match(text)
    if m is None:
        raise UsageError(f"--metric {text}: write NAME[:UNIT[:higher|lower]]=REGEX, e.g. "
                         "--metric 'rate:ops/s:higher=rate: ([0-9.]+)'")
    try:
        groups = re.compile(m.group("regex")).groups
    except re.error as exc:
        raise UsageError(f"--metric {text}: bad regular expression ({exc})") from None
    if groups < 1:
        raise UsageError(f"--metric {text}: the regular expression needs one capture group "
                         "(...) around the number")
    return MetricSpec(m.group("name"), m.group("unit") or "", m.group("better") or "lower",
                      m.group("regex"))


def parse_check(text: str) -> str:
    """REGEX of --check: its group 1 (a checksum line, say) must be identical on every ABI, as
    `[validate] stdout_match` in a profile; the rest of the output may differ (a rate)."""
    try:
        groups = re.compile(text).groups
    except re.error as exc:
        raise UsageError(f"--check {text}: bad regular expression ({exc})") from None
    if groups < 1:
        raise UsageError(f"--check {text}: the regular expression needs one capture group "
                         "(...) around what must match, e.g. --check 'checksum: (\\S+)'")
    return text


def _s(value: str) -> str:
    # A JSON string is a valid TOML basic string (the same escapes, \\uXXXX included).
    return json.dumps(value, ensure_ascii=False)


def profile_text(name: str, binaries: Sequence[tuple[str, str]], args: Sequence[str],
                 metrics: Sequence[MetricSpec], check_stdout: bool, timeout: str,
                 check: str | None = None) -> str:
    """The profile a --binary command line stands for."""
    if len(binaries) < 2:
        raise UsageError("--binary needs two or more programs to compare, one per ABI: "
                         "--binary i386=./prog32 --binary x86_64=./prog64")
    abis = [a for a, _ in binaries]
    if len(set(abis)) != len(abis):
        raise UsageError(f"--binary names an ABI twice ({', '.join(abis)}): one program per ABI")
    lines = [f"id = {_s(name)}",
             f"title = {_s('prebuilt programs: ' + ', '.join(p for _, p in binaries))}",
             f"primary = {_s(metrics[0].name if metrics else 'wall')}", "",
             "[binaries]", *(f"{_s(abi)} = {_s(path)}" for abi, path in binaries), "",
             "[run]", f"command = [{', '.join(_s(a) for a in ['{program}', *args])}]",
             f"timeout = {_s(timeout)}", ""]
    if check_stdout or check is not None:
        lines += ["[validate]", *(["stdout_digest = true"] if check_stdout else []),
                  *([f"stdout_match = {_s(check)}"] if check is not None else []), ""]
    for m in metrics:
        lines += ["[[metric]]", f"name = {_s(m.name)}", f"unit = {_s(m.unit)}",
                  f"better = {_s(m.better)}", f"parse = {{ regex = {_s(m.regex)} }}", ""]
    return "\n".join(lines)
