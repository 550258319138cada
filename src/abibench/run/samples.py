"""From what one execution printed to one Sample: metrics parsed, outputs checked.

A sample is `ok` only when the program exited 0, every metric the profile declares was found
as a finite number, and everything the profile asks to be identical across ABIs could be read.
A program that prints "nan", "inf" or "1e999" has failed that sample: such a value would make
every statistic of the run meaningless and its export unreadable (JSON has no NaN).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

from ..files import TooLarge, read_regular
from ..hashing import sha256_regular
from ..records import Sample
from ..text import one_line
from ..workloads.parsers import BUILTIN_PARSERS, close_enough
from ..workloads.profile import MetricRule, Workload
from .launcher import RawResult

# A [validate] file is hashed after every sample: never more than this (a 20 GB sparse file
# is refused by its size, not read). A close file is read whole, with the run's first one
# kept in memory to compare against: less.
VALIDATE_LIMIT = 1 << 30
CLOSE_LIMIT = 256 << 20
T = TypeVar("T")


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
        found = m.regex.find(stdout)  # RE2: linear in the output, whatever the pattern
        if found is None and m.optional:
            continue
        if found is None:
            raise ParseError(f"metric '{m.name}' not found in the output (pattern "
                             f"{m.regex.pattern!r})")
        try:
            number = float(found)
        except ValueError:
            raise ParseError(f"metric '{m.name}': {found!r:.40} is not a number") from None
        values[m.name] = _finite(m.name, found, number, m.scale)
    return values


def validation_value(wl: Workload, stdout: str) -> str | None:
    """What must be equal across ABIs; None when the profile asks for no validation."""
    if wl.stdout_match is None:
        return None
    found = wl.stdout_match.find(stdout)
    if found is None:
        raise ParseError(f"validation pattern {wl.stdout_match.pattern!r} not found in the output")
    return found


def _bounded(path: Path, limit: int, read: Callable[[Path, int], T]) -> T:
    """An output file a program wrote, read or hashed only when it is a regular file of at most
    `limit` bytes (files.open_regular); anything else fails the sample with one line."""
    try:
        return read(path, limit)
    except FileNotFoundError:
        raise ParseError(f"output file {path} to validate was not written") from None
    except TooLarge as exc:
        raise ParseError(f"output file {path} to validate holds {exc.size} bytes or more, over "
                         f"the {limit >> 20} MiB abibench compares: validate a smaller output")\
            from None
    except OSError as exc:
        raise ParseError(f"output file {path} to validate cannot be read: "
                         f"{exc.strerror or exc}; a [validate] file must be a regular file the "
                         "program writes") from None


def after_value(wl: Workload, after_out: str | None) -> str | None:
    """[validate] after_match's group 1 in what the [run] after step printed; None when the
    profile has no after_match. Not found: the sample fails (a known answer that is not)."""
    if wl.after_match is None:
        return None
    found = wl.after_match.find(after_out or "")
    if found is None:
        last = one_line((after_out or "").strip().splitlines()[-1] if (after_out or "").strip()
                        else "nothing")
        shown = last if len(last) <= 120 else "…" + last[-119:]  # an answer ends its line
        raise ParseError(f"validation pattern {wl.after_match.pattern!r:.200} not found in what "
                         f"the [run] after step printed (last line: {shown!r})")
    return found


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
        digest = _bounded(f, VALIDATE_LIMIT, partial(sha256_regular, follow=False))
        parts.append(f"{f.name}:{digest[:16]}")
    for template, f in close:
        if wl.close is None or refs is None:
            break
        data = _bounded(f, CLOSE_LIMIT, partial(read_regular, follow=False))
        ref = refs.setdefault(template, data)
        ok, largest, frac = close_enough(ref, data, wl.close.max_diff, wl.close.max_fraction,
                                         wl.close.format)
        unit = "samples" if wl.close.format == "s16le" else "bytes"
        parts.append(f"{f.name}~{hashlib.sha256(ref).hexdigest()[:16]}" if ok else
                     f"{f.name}:{hashlib.sha256(data).hexdigest()[:16]} (differs from the run's "
                     f"first output by up to {largest} in {frac:.2%} of {unit})")
    return " ".join(parts) if parts else None


def stopped_reason(stops: int) -> str | None:
    """Why a sample whose program was stopped while it ran does not count; None when it was
    not. It is stored as it was measured (the stop is a fact of the run), marked discarded."""
    if stops <= 0:
        return None
    times = "once" if stops == 1 else f"{stops} times"
    return (f"the program was stopped {times} while it ran (SIGSTOP or SIGTSTP): its wall time "
            "holds the time it stood still, so it is no measurement")


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
                  discarded=stopped_reason(raw.stops),
                  warmup=warmup, status=status, exit_code=raw.exit_code, wall_s=times["wall"],
                  user_s=times["user"], sys_s=times["sys"], max_rss_kb=raw.max_rss_kb,
                  stdout_digest=raw.stdout_digest, check=check, metrics=metrics, error=error,
                  started_at=started, env_pad=pad, minflt=raw.minflt, majflt=raw.majflt,
                  design=design, cpu=cpu, repeat=raw.repeat,
                  foreign_cpu_s=raw.foreign_cpu_s(ours_s), steal_s=raw.steal_s,
                  covariate=raw.covariate, tree_peak_rss_kb=raw.tree_peak_kb,
                  tree_memory=raw.tree_memory, emulated=emulated)
