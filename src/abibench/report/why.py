"""The explanation and advice as plain text cells, shared by the terminal, Markdown and HTML
renderers so that every format shows the same figures in the same words. Formatting only: every
number comes from analyse/explain.py and analyse/advise.py."""

from __future__ import annotations

from ..analyse.advise import Advice
from ..analyse.explain import Explanation, Interval
from . import formatting as fmt

SIMULATED = ("cache and branch figures are valgrind's simulation of one fixed cache model "
             "(32 KiB 8-way L1s, 8 MiB 16-way LL, 64-byte lines), not hardware counters")


def interval(r: Interval | None) -> str:
    if r is None:
        return "-"
    if r.exact:
        return fmt.number(r.value, ".3f")
    return fmt.ratio(r.value, r.low, r.high)


def decomposition(x: Explanation) -> str:
    """time a/b = instructions a/b x time per instruction a/b, each with its interval."""
    head = f"time {x.a}/{x.b} {interval(x.cost)}"
    if x.instructions is None:
        return head
    exact = "exact" if x.instructions_exact else "not exact"
    return (f"{head} = instructions {fmt.number(x.instructions.value, '.3f')} ({exact}"
            + ("" if x.instructions.low == x.instructions.high else
               f", runs span {fmt.number(x.instructions.low, '.4f')}–"
               f"{fmt.number(x.instructions.high, '.4f')}")
            + f") × time per instruction {interval(x.per_instruction)}")


def _count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def function_head(x: Explanation) -> list[str]:
    return ["function", f"{x.a} instructions", f"{x.b} instructions", "difference",
            "share of difference", f"ratio {x.a}/{x.b}"]


def function_rows(x: Explanation) -> list[list[str]]:
    rows = []
    for f in x.functions:
        name = f.label
        ratio = fmt.number(f.ratio, ".2f") if f.ratio else (
            f"only in {x.a}'s top" if f.b is None else f"only in {x.b}'s top")
        rows.append([name, _count(f.a), _count(f.b), f"{f.diff:+,}",
                     f"{fmt.number(f.share * 100, '+.0f')}%", ratio])
    return rows


def evidence_head(x: Explanation) -> list[str]:
    return ["quantity", x.a, x.b, f"ratio {x.a}/{x.b}", "source", "favours"]


def evidence_rows(x: Explanation) -> list[list[str]]:
    rows = []
    for e in x.evidence:
        value = fmt.kib if e.name == "peak RSS" else (lambda v: f"{v:,.0f}")
        rows.append([e.name, value(e.a), value(e.b), interval(e.ratio),
                     "simulated (valgrind)" if e.simulated else "measured (timed samples)",
                     e.favours or "-"])
    return rows


def advice_head() -> list[str]:
    return ["workload", "ABI", "peak RSS", "instances", "running", "speed per instance",
            "total throughput", "per GiB", "per core"]


def advice_rows(advice: Advice) -> list[list[str]]:
    rows = []
    for r in advice.rows:
        unit = r.unit
        label = r.target + (" (estimate, not measured)" if r.estimate else "")
        fits = "" if r.fits else " (do not fit)"
        rows.append([r.workload, label, fmt.kib(r.rss_kb), f"{r.instances:,}{fits}",
                     f"{r.running:,} ({r.binding})", fmt.si(r.speed, unit),
                     fmt.si(r.total, unit), fmt.si(r.per_gib, unit), fmt.si(r.per_core, unit)])
    return rows


def advice_note(advice: Advice) -> str:
    dep = advice.deployment
    cores = ("each running instance keeps one core busy" if dep.cores is None else
             f"at most {dep.cores} instances run at once, one per core")
    return (f"Deployment: {dep.describe()}. Instances from the median peak RSS of one instance; "
            f"{cores}; throughput = running instances × median speed per instance. Ratios of "
            "totals carry the 95% CI of the speed ratio.")
