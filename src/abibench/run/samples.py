"""From what one execution printed to one Sample: metrics parsed, outputs checked.

A sample is `ok` only when the program exited 0, every metric the profile declares was found
as a finite number, and everything the profile asks to be identical across ABIs could be read.
A program that prints "nan", "inf" or "1e999" has failed that sample: such a value would make
every statistic of the run meaningless and its export unreadable (JSON has no NaN).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path

from ..hashing import sha256_file
from ..records import Sample
from ..text import one_line
from ..workloads.parsers import BUILTIN_PARSERS, close_enough
from ..workloads.profile import MetricRule, Workload
from .launcher import RawResult


class ParseError(ValueError):
    """The program's output lacks something the profile asks for."""


def _finite(name: str, printed: str, number: float, scale: float) -> float:
    """number * scale when it is finite; else a one-line ParseError naming the metric and what
    the program printed ("nan", "inf", "1e999", or a value the scale pushes past 1.8e308)."""
    value = number * scale
    if math.isfinite(value):
        return value
    shown = repr(one_line(printed)[:40])
    if math.isfinite(number):
        raise ParseError(f"metric '{name}': {shown} times its scale {scale:g} is not a finite "
                         "number")
    raise ParseError(f"metric '{name}': {shown} is not a finite number")


def parse_metrics(rules: Sequence[MetricRule], stdout: str) -> dict[str, float]:
    """Every declared metric's value in a program's output."""
    values: dict[str, float] = {}
    parsed: dict[str, dict[str, float]] = {}
    for m in rules:
        if m.builtin is not None:
            if m.builtin not in parsed:
                try:
                    parsed[m.builtin] = BUILTIN_PARSERS[m.builtin](stdout)
                except ValueError as exc:
                    raise ParseError(f"parser '{m.builtin}': {exc}") from None
            found_value = parsed[m.builtin].get(m.key or m.name)
            if found_value is None and m.optional:
                continue
            if found_value is None:
                raise ParseError(f"metric '{m.name}': parser '{m.builtin}' found no '{m.key}' in "
                                 "the output")
            values[m.name] = _finite(m.name, repr(found_value), found_value, m.scale)
            continue
        if m.regex is None:
            continue
        found = m.regex.search(stdout)
        if not found and m.optional:
            continue
        if not found:
            raise ParseError(f"metric '{m.name}' not found in the output (pattern "
                             f"{m.regex.pattern!r})")
        try:
            number = float(found.group(1))
        except ValueError:
            raise ParseError(f"metric '{m.name}': {found.group(1)!r:.40} is not a number") from None
        values[m.name] = _finite(m.name, found.group(1), number, m.scale)
    return values


def validation_value(wl: Workload, stdout: str) -> str | None:
    """What must be equal across ABIs; None when the profile asks for no validation."""
    if wl.stdout_match is None:
        return None
    found = wl.stdout_match.search(stdout)
    if not found:
        raise ParseError(f"validation pattern {wl.stdout_match.pattern!r} not found in the output")
    return found.group(1)


def after_value(wl: Workload, after_out: str | None) -> str | None:
    """[validate] after_match's group 1 in what the [run] after step printed; None when the
    profile has no after_match. Not found: the sample fails (a known answer that is not)."""
    if wl.after_match is None:
        return None
    found = wl.after_match.search(after_out or "")
    if not found:
        last = one_line((after_out or "").strip().splitlines()[-1] if (after_out or "").strip()
                        else "nothing")
        shown = last if len(last) <= 120 else "…" + last[-119:]  # an answer ends its line
        raise ParseError(f"validation pattern {wl.after_match.pattern!r:.200} not found in what "
                         f"the [run] after step printed (last line: {shown!r})")
    return found.group(1)


def check_value(wl: Workload, raw: RawResult, files: list[Path],
                close: Sequence[tuple[str, Path]] = (), refs: dict[str, bytes] | None = None,
                after_out: str | None = None) -> str | None:
    """Everything the profile asks to be identical across ABIs, as one comparable string.

    `close` are the [validate] close files of this sample as (template, path); `refs` holds the
    run's first output of each template (filled here on first use). An output within the
    tolerance of that first one gets the same string; one outside it a different string.
    `after_out` is what the [run] after step printed.
    """
    parts = []
    for value in (validation_value(wl, raw.stdout), after_value(wl, after_out)):
        if value is not None:
            parts.append(value)
    if wl.stdout_digest:
        parts.append(f"stdout:{raw.stdout_digest[:16]}")
    for f in files:
        if not f.is_file():
            raise ParseError(f"output file {f} to validate was not written")
        parts.append(f"{f.name}:{sha256_file(f)[:16]}")
    for template, f in close:
        if wl.close is None or refs is None:
            break
        if not f.is_file():
            raise ParseError(f"output file {f} to validate was not written")
        data = f.read_bytes()
        ref = refs.setdefault(template, data)
        ok, largest, frac = close_enough(ref, data, wl.close.max_diff, wl.close.max_fraction,
                                         wl.close.format)
        unit = "samples" if wl.close.format == "s16le" else "bytes"
        parts.append(f"{f.name}~{hashlib.sha256(ref).hexdigest()[:16]}" if ok else
                     f"{f.name}:{hashlib.sha256(data).hexdigest()[:16]} (differs from the run's "
                     f"first output by up to {largest} in {frac:.2%} of {unit})")
    return " ".join(parts) if parts else None


def sample_from(raw: RawResult, wl: Workload, run_id: str, target: str, rnd: int, pos: int,
                warmup: bool, started: str, pad: int, files: list[Path],
                close: Sequence[tuple[str, Path]] = (),
                refs: dict[str, bytes] | None = None, design: str = "sequential",
                cpu: int | None = None, ours_s: float = 0.0, emulated: bool = False,
                after_out: str | None = None) -> Sample:
    """`ours_s`: CPU time of abibench's own beside this sample (the other program of a
    simultaneous pair), which is not foreign to it; `after_out`: what the [run] after step
    printed."""
    status, error, metrics, check = "ok", None, {}, None
    if raw.status == "timeout":
        status, error = "timeout", f"timed out after {wl.timeout:g}s"
    elif raw.status == "interrupted":
        status, error = "interrupted", "interrupted"
    elif not raw.ok:
        # The reason ends in the program's last line of stderr: stored as one line of text,
        # without the escape sequences a program may print (text.one_line).
        status, error = "failed", one_line(raw.describe_failure())
    else:
        try:
            metrics = parse_metrics(wl.metrics, raw.stdout)
            check = check_value(wl, raw, files, close, refs, after_out)
        except ParseError as exc:
            status, error = "failed", str(exc)
    times = {"wall": raw.wall_s, "user": raw.user_s, "sys": raw.sys_s}
    bad = [f"{k} time {v!r}" for k, v in times.items() if not math.isfinite(v)]
    if bad:
        # Never stored as a number: NaN is no JSON, and an export must import again.
        status, error, metrics = "failed", f"{', '.join(bad)} is not a finite number", {}
        times = {k: v if math.isfinite(v) else 0.0 for k, v in times.items()}
    return Sample(run_id=run_id, workload=wl.id, target=target, round=rnd, position=pos,
                  warmup=warmup, status=status, exit_code=raw.exit_code, wall_s=times["wall"],
                  user_s=times["user"], sys_s=times["sys"], max_rss_kb=raw.max_rss_kb,
                  stdout_digest=raw.stdout_digest, check=check, metrics=metrics, error=error,
                  started_at=started, env_pad=pad, minflt=raw.minflt, majflt=raw.majflt,
                  design=design, cpu=cpu, repeat=raw.repeat,
                  foreign_cpu_s=raw.foreign_cpu_s(ours_s), steal_s=raw.steal_s,
                  covariate=raw.covariate, tree_peak_rss_kb=raw.tree_peak_kb,
                  tree_memory=raw.tree_memory, emulated=emulated)
