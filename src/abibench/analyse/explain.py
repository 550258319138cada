"""Why one ABI wins: every comparison's time ratio decomposed, with the evidence and the words.

    time ratio = instruction-count ratio x time-per-instruction ratio

The time ratio and its 95% CI come from the timed samples (the primary comparison of
:mod:`.results`, expressed as a cost: a rate is inverted). Instruction counts come from the
counted runs under valgrind; they are exact when two runs of a target agreed, else their range
over the attempts is carried through as the instruction part's interval ("not exact"). The
time-per-instruction ratio is the time ratio divided by the instruction ratio, its CI the time
CI divided by the same (the instruction ratio adds no sampling error when exact).

Beside the decomposition stand the memory-side facts: simulated cache misses (D1, last level)
and branch mispredicts from ``--counters=cache`` (a fixed cache model, not the hardware), minor
and major page faults and peak RSS from the timed samples, and a function-level diff of the
instructions (functions matched by name, the top ones by their share of the difference).

The words are chosen by the rules of docs/explain.md, implemented in :func:`choose_words`: a
pure function of the numbers, tested on captured callgrind outputs. When no rule fits, the text
says "unexplained" and gives the numbers; nothing is guessed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .. import stats
from ..abi import ABIS
from ..records import (
    BRANCHES,
    D1_MISSES,
    INSTRUCTIONS,
    LL_MISSES,
    MISPREDICTS,
    PROGRAM_OBJECT,
    UNKNOWN_FUNCTION,
    CounterProfile,
    RunDoc,
    abi_of,
)
from .results import PairVerdict, WorkloadResult

# Instruction counts within 1% are the same work (a different libc startup, an alignment).
SAME_WORK = 0.01
# An exact count (simulated misses, mispredicts) at least 10% lower is a material difference.
MATERIAL = 0.10
# The instruction part explains a win "mainly" when it is at least half of the gap, in logs.
MAINLY = 0.5
# ... and it matters only when the events saved are not a negligible share of the work: at least
# this many per 1,000 instructions of the loser, about 5% of a cycle per instruction at typical
# latencies (100 cycles a last-level miss, 10 a D1 miss, 20 a mispredict). A few thousand
# compulsory misses in a compute loop explain nothing.
PER_KILO_INSTRUCTION = {"LL misses": 0.5, "D1 misses": 5.0, "branch mispredicts": 2.5,
                        "branches": 50.0}
TOP_CONTRIBUTORS = 5


@dataclass(frozen=True)
class Interval:
    """A ratio a/b and its interval (equal bounds for an exact one; nan bounds: no interval)."""

    value: float
    low: float
    high: float

    @property
    def exact(self) -> bool:
        return self.low == self.value == self.high

    def inverted(self) -> Interval:
        return Interval(1 / self.value, 1 / self.high, 1 / self.low)


@dataclass(frozen=True)
class FunctionDiff:
    """One function's instructions on both targets and its share of the total difference; or,
    ``whole``, one object's (a library, ld.so, the program) when some target has code without
    symbols in it: then both sides are the whole object, never a named function against
    unnamed code."""

    name: str
    a: int | None  # None: not among a's stored top functions (a whole object: not loaded)
    b: int | None
    diff: int  # a - b (a missing side counted as 0)
    share: float  # diff / (total a - total b): > 0 adds to the difference, < 0 works against it
    object: str = ""  # the object its code is in ("" when the counter did not record it)
    whole: bool = False  # the row is the whole object
    unnamed: tuple[str, ...] = ()  # whole: the targets with code without symbols in it

    @property
    def ratio(self) -> float | None:
        return self.a / self.b if self.a and self.b else None

    @property
    def symbolless(self) -> bool:
        return self.name == UNKNOWN_FUNCTION and not self.whole

    @property
    def label(self) -> str:
        """How a report's table names the row."""
        if not self.whole:
            return f"{self.name} (code without symbols)" if self.symbolless else self.name
        who = " and ".join(f"{t}'s" for t in self.unnamed)
        return f"{self._what} (whole object: code without symbols in {who})"

    @property
    def short(self) -> str:
        """How the words name it."""
        if not self.whole:
            return self.name
        return f"{self._what} as a whole" if self.object else self._what

    @property
    def _what(self) -> str:
        return {"": "all code (objects not recorded)", PROGRAM_OBJECT: "the program",
                UNKNOWN_FUNCTION: "code outside any file"}.get(self.object, self.object)


@dataclass(frozen=True)
class Evidence:
    """One memory-side or control-flow quantity of a and b, and their ratio a/b.

    ``simulated``: from valgrind's cache model, exact for the counted run; otherwise measured in the
    timed samples, with the CI of the ratio. ``favours`` names the target with materially less
    of it (exact: at least MATERIAL lower; measured: CI of the ratio excluding 1), or None.
    """

    name: str
    a: float
    b: float
    ratio: Interval
    simulated: bool
    favours: str | None
    phrase: str  # how the words name it: "LL misses", "peak memory"

    def percent_less(self, who: str, other: str) -> float:
        """How much less of it `who` has than `other`, in % (positive: less)."""
        r = self.ratio.value if who == self.first else 1 / self.ratio.value
        return (1 - r) * 100

    first: str = ""  # the label of a (set by the builder)


@dataclass(frozen=True)
class Explanation:
    workload: str
    a: str
    b: str
    rule: str  # invalid | no-counts | noise | instructions | memory | unexplained
    text: str
    winner: str | None
    cost: Interval  # time ratio a/b (a cost: a rate's ratio inverted)
    significant: bool
    instructions: Interval | None  # a/b; bounds = the range over the attempts when not exact
    instructions_exact: bool
    per_instruction: Interval | None  # time per instruction a/b
    instructions_a: int | None = None
    instructions_b: int | None = None
    evidence: tuple[Evidence, ...] = ()
    functions: tuple[FunctionDiff, ...] = ()
    simulation: str | None = None  # insn | cache: what the counted runs simulated
    cache_model: tuple[str, ...] = ()
    p_adjusted: float = math.nan  # the verdict's Holm-corrected p-value of the time ratio

    @property
    def short(self) -> str:
        """The rule in a few words, for a table column."""
        return {"invalid": "outputs differ", "no-counts": "no counts (--counters)",
                "noise": "within noise", "instructions": "fewer instructions",
                "memory": "memory side", "unexplained": "unexplained"}.get(self.rule, self.rule)


# --------------------------------------------------------------------------- numbers


def _exact(v: float) -> Interval:
    return Interval(v, v, v)


def instruction_ratio(pa: CounterProfile, pb: CounterProfile) -> tuple[Interval, bool] | None:
    """Instructions of a over b, and whether that is exact (both targets' counts agreed between
    runs). The interval is the range the attempts' ratios span (a few hundred instructions of a
    program formatting its own timings; the whole spread when they never agreed). None without
    counts."""
    ia, ib = pa.total(INSTRUCTIONS), pb.total(INSTRUCTIONS)
    if not ia or not ib:
        return None
    att_a = [x for x in pa.attempts if x > 0] or [ia]
    att_b = [x for x in pb.attempts if x > 0] or [ib]
    return (Interval(ia / ib, min(ia / max(att_b), min(att_a) / max(att_b)),
                     max(ia / min(att_b), max(att_a) / min(att_b))), pa.agreed and pb.agreed)


def _unnamed_objects(p: CounterProfile) -> set[str]:
    """The objects in which p has code without symbols (every one is stored, whatever its
    rank: run/counters.profile_of)."""
    return {f.object for f in p.functions if f.name == UNKNOWN_FUNCTION}


def _object_totals(p: CounterProfile) -> dict[str, int]:
    """Instructions per object; a profile that recorded no objects is one object, ""."""
    if not p.objects:
        return {"": p.total(INSTRUCTIONS) or 0}
    return {o.name: p.function_total(o, INSTRUCTIONS) or 0 for o in p.objects}


def function_diff(pa: CounterProfile, pb: CounterProfile, top: int = TOP_CONTRIBUTORS,
                  a: str = "a", b: str = "b") -> tuple[FunctionDiff, ...]:
    """The functions whose instruction counts differ most between a and b, like with like.

    An object (shared library, ld.so, the program; matched by name across ABIs) in which either
    target has code without symbols is one row on both sides, its whole instructions: one
    ABI's C library without symbols is never set against the other's named malloc. Functions
    are compared only in objects named on every side, matched by object and name. Sorted by
    the size of their difference, ``top`` of them, each with its signed share of the total
    difference (> 0: in the direction of the total).
    """
    ia, ib = pa.total(INSTRUCTIONS), pb.total(INSTRUCTIONS)
    if ia is None or ib is None or ia == ib:
        return ()
    total = ia - ib
    ua, ub = _unnamed_objects(pa), _unnamed_objects(pb)
    whole = ua | ub
    oa, ob = _object_totals(pa), _object_totals(pb)
    rows = []
    for obj in whole:
        ca, cb = oa.get(obj), ob.get(obj)
        diff = (ca or 0) - (cb or 0)
        unnamed = tuple(t for t, u in ((a, ua), (b, ub)) if obj in u)
        rows.append(FunctionDiff(obj, ca, cb, diff, diff / total, obj, True, unnamed))
    fa = {(f.object, f.name): pa.function_total(f, INSTRUCTIONS) or 0
          for f in pa.functions if f.object not in whole}
    fb = {(f.object, f.name): pb.function_total(f, INSTRUCTIONS) or 0
          for f in pb.functions if f.object not in whole}
    for obj, name in set(fa) | set(fb):
        ca, cb = fa.get((obj, name)), fb.get((obj, name))
        diff = (ca or 0) - (cb or 0)
        rows.append(FunctionDiff(name, ca, cb, diff, diff / total, obj))
    rows.sort(key=lambda r: (-abs(r.diff), r.whole, r.object, r.name))
    return tuple(rows[:top])


def _counted_evidence(name: str, phrase: str, events: Sequence[str], pa: CounterProfile,
                      pb: CounterProfile, a: str, b: str) -> Evidence | None:
    va, vb = pa.total(*events), pb.total(*events)
    ia, ib = pa.total(INSTRUCTIONS), pb.total(INSTRUCTIONS)
    if va is None or vb is None or va <= 0 or vb <= 0 or not ia or not ib:
        return None
    r = va / vb
    floor = PER_KILO_INSTRUCTION.get(name, 1.0)
    favours = None
    if r <= 1 - MATERIAL and (vb - va) / (ib / 1000) >= floor:
        favours = a
    elif 1 / r <= 1 - MATERIAL and (va - vb) / (ia / 1000) >= floor:
        favours = b
    return Evidence(name, va, vb, _exact(r), True, favours, phrase, first=a)


def _measured_evidence(doc: RunDoc, workload: str, metric: str, name: str, phrase: str,
                       a: str, b: str) -> Evidence | None:
    pair = doc.paired(workload, metric, a, b)
    if len(pair.a) < 2 or len(pair.b) < 2:
        return None
    try:
        r = stats.ratio_of(pair.a, pair.b, paired=pair.paired, name_a=a, name_b=b)
    except ValueError:
        return None  # e.g. no major faults at all: nothing to compare
    below = r.ci_high < 1 and r.ratio < 1
    above = r.ci_low > 1 and r.ratio > 1
    favours = a if below else (b if above else None)
    return Evidence(name, stats.median(pair.a), stats.median(pair.b),
                    Interval(r.ratio, r.ci_low, r.ci_high), False, favours, phrase, first=a)


def evidence_of(doc: RunDoc, workload: str, a: str, b: str, pa: CounterProfile | None,
                pb: CounterProfile | None, memory: PairVerdict | None) -> tuple[Evidence, ...]:
    out: list[Evidence | None] = []
    if pa is not None and pb is not None:
        out += [_counted_evidence("LL misses", "LL misses", LL_MISSES, pa, pb, a, b),
                _counted_evidence("D1 misses", "D1 misses", D1_MISSES, pa, pb, a, b),
                _counted_evidence("branch mispredicts", "branch mispredicts", MISPREDICTS,
                                  pa, pb, a, b),
                _counted_evidence("branches", "branches", BRANCHES, pa, pb, a, b)]
    if memory is not None:
        # As every measured quantity: the CI of the ratio excluding 1 (not the Holm verdict,
        # which needs a p-value three rounds cannot give)
        r = memory.ratio
        favours = a if r.ci_high < 1 and r.ratio < 1 else (
            b if r.ci_low > 1 and r.ratio > 1 else None)
        out.append(Evidence("peak RSS", stats.median(memory.values_a),
                            stats.median(memory.values_b), Interval(r.ratio, r.ci_low, r.ci_high),
                            False, favours, "peak memory", first=a))
    out += [_measured_evidence(doc, workload, "minflt", "minor page faults",
                               "minor page faults", a, b),
            _measured_evidence(doc, workload, "majflt", "major page faults",
                               "major page faults", a, b)]
    return tuple(e for e in out if e is not None)


def cost_interval(c: PairVerdict, better: str) -> Interval:
    """The primary comparison as a time ratio a/b: a rate (higher is better) inverted."""
    r = Interval(c.ratio.ratio, c.ratio.ci_low, c.ratio.ci_high)
    return r.inverted() if better == "higher" else r


# --------------------------------------------------------------------------- the words


def _pct(x: float) -> str:
    return stats.short(x, ".0f")


def _narrow(a: str, b: str) -> bool:
    """Whether a has 32-bit pointers and b 64-bit ones (an ILP32 ABI against LP64)."""
    abi_a, abi_b = ABIS.get(abi_of(a)), ABIS.get(abi_of(b))
    return bool(abi_a and abi_b and abi_a.pointer_bits == 32 and abi_b.pointer_bits == 64)


def _top_contributor(functions: Sequence[FunctionDiff], a: str, winner: str, loser: str) -> str:
    named = [f for f in functions if not f.symbolless and f.share > 0]
    if not named:
        return ""
    f = max(named, key=lambda g: g.share)
    if f.ratio:
        ratio = f"{loser}/{winner} {stats.short(f.ratio if loser == a else 1 / f.ratio, '.2f')}x"
    else:
        ratio = f"only among {loser if (f.a is None) == (loser != a) else winner}'s top functions"
    return (f"; the top contributor is {f.short} ({_pct(f.share * 100)}% of the difference"
            + (f", {ratio}" if ratio else "") + ")")


def choose_words(x: Explanation) -> tuple[str, str, str | None]:
    """(rule, text, winner) for an explanation's numbers: the rules of docs/explain.md, in order.

    1. invalid and no-counts are decided by the caller.
    2. noise: the time difference is not significant (Holm-corrected, as the verdict).
    3. instructions: the winner executes fewer instructions, and that part is at least MAINLY of
       the gap in logs (ln I / ln T >= 0.5, both as the loser's over the winner's).
    4. memory: otherwise, when the winner's time per instruction is lower (its CI excludes 1)
       and at least one memory-side quantity favours it materially (simulated LL or D1 misses,
       branch mispredicts at least 10% fewer; peak RSS, minor or major page faults lower with a
       CI excluding 1).
    5. unexplained: anything else; the text gives the numbers.
    """
    assert x.instructions is not None and x.per_instruction is not None
    ins, tpi, cost = x.instructions, x.per_instruction, x.cost
    diff_pct = abs(ins.value - 1) * 100
    if not x.significant:
        # The p-value goes with the interval: over several workloads, one that excludes 1 can
        # still be noise once corrected for the number of comparisons (Holm).
        p = f", p={stats.short(x.p_adjusted, '.2g')} Holm" if math.isfinite(x.p_adjusted) else ""
        return ("noise", f"the difference is within noise (time ratio "
                f"{stats.short(cost.value, '.3f')} [{stats.short(cost.low, '.3f')}, "
                f"{stats.short(cost.high, '.3f')}]{p}); instruction counts differ by "
                f"{stats.short(diff_pct, '.1f')}%" + _inexact(x), None)
    winner, loser = (x.a, x.b) if cost.value < 1 else (x.b, x.a)
    # Everything as the loser's over the winner's (>= 1 means the winner has less).
    lc = cost.value if winner == x.b else 1 / cost.value
    li = ins if winner == x.b else ins.inverted()
    lt = tpi if winner == x.b else tpi.inverted()
    fewer_insn = li.low > 1 + SAME_WORK  # every ratio the attempts allow: fewer by > 1%
    share = math.log(li.low) / math.log(lc) if fewer_insn else 0.0
    head = f"{winner} is {stats.advantage(lc, math.nan, math.nan, 'faster', '.0f')}"
    if fewer_insn and share >= MAINLY:
        text = (f"{head} mainly because it executes {_pct((1 - 1 / li.value) * 100)}% fewer "
                f"instructions" + _top_contributor(x.functions, x.a, winner, loser))
        if lt.high < 1:
            text += f"; each of its instructions takes {_pct((1 / lt.value - 1) * 100)}% longer"
        return "instructions", text + _inexact(x), winner
    if li.value < 1 - SAME_WORK:
        count = f"although it executes {_pct((1 / li.value - 1) * 100)}% more instructions"
    elif li.value > 1 + SAME_WORK:
        count = f"executing only {_pct((1 - 1 / li.value) * 100)}% fewer instructions"
    else:
        count = (f"with the same instruction count (within {_pct(SAME_WORK * 100)}%: "
                 f"{stats.short(diff_pct, '.1f')}%)")
    favour = [e for e in x.evidence if e.favours == winner and e.name != "branches"]
    if lt.low > 1 and favour:
        parts = []
        for e in favour:
            less = e.percent_less(winner, loser)
            word = "smaller" if e.name == "peak RSS" else "fewer"
            # The ABI table's fact goes with the memory it is about, not after other evidence.
            note = (" (simulated)" if e.simulated else
                    " (32-bit pointers)" if e.name == "peak RSS" and _narrow(winner, loser)
                    else "")
            parts.append(f"its {e.phrase} {'are' if e.phrase.endswith('s') else 'is'} "
                         f"{_pct(less)}% {word}{note}")
        why = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        return "memory", f"{head} {count}: {why}" + _inexact(x), winner
    return ("unexplained", f"unexplained: {head} {count}; its time per instruction is "
            f"{stats.short(1 / lt.value, '.3f')}x the other's "
            f"[{stats.short(1 / lt.high, '.3f')}, {stats.short(1 / lt.low, '.3f')}] and no "
            "simulated cache, branch, page-fault or memory difference favours it"
            + _inexact(x), winner)


def _inexact(x: Explanation) -> str:
    """The words' warning that the counts did not repeat, when their range is material: wider
    than SAME_WORK, the smallest difference of instructions the rules speak of. A narrower range
    (RSA blinding's random numbers: a tenth of a percent) changes no rule and no percentage the
    words print by more than one, and is shown with the numbers only ("not exact, runs span"),
    so that two runs of one program get the same words whether or not their attempts agreed."""
    if x.instructions_exact or x.instructions is None:
        return ""
    spread = (x.instructions.high / x.instructions.low - 1) * 100
    if spread <= SAME_WORK * 100:
        return ""
    return (" (instruction counts not exact: repeated runs differed, ratio range "
            f"±{stats.short(spread / 2, '.2g')}%)")


# --------------------------------------------------------------------------- building


def explain_pair(doc: RunDoc, res: WorkloadResult, comparison: PairVerdict,
                 memory: PairVerdict | None) -> Explanation:
    a, b = comparison.a, comparison.b
    profiles = doc.counter_profiles(res.id)
    pa, pb = profiles.get(a), profiles.get(b)
    cost = cost_interval(comparison, res.better)
    significant = comparison.verdict.significant
    base = Explanation(res.id, a, b, "", "", None, cost, significant, None, False, None,
                       simulation=pa.simulation if pa else None,
                       cache_model=pa.cache if pa else (), p_adjusted=comparison.p_adjusted)
    if res.validation == "miscompare":
        return _with(base, "invalid", "no explanation: the outputs differ between ABIs, so "
                     "the programs did different work")
    evidence = evidence_of(doc, res.id, a, b, pa, pb, memory)
    found = instruction_ratio(pa, pb) if pa and pb else None
    if pa is None or pb is None or found is None:
        missing = ", ".join(t for t, p in ((a, pa), (b, pb)) if p is None) or "both"
        return _with(base, "no-counts", f"unexplained: no instruction counts of {missing} "
                     "(run with --counters, or --counters=cache for cache and branch evidence)",
                     evidence=evidence)
    ins, exact = found
    tpi = Interval(cost.value / ins.value, cost.low / ins.high, cost.high / ins.low)
    x = Explanation(res.id, a, b, "", "", None, cost, significant, ins, exact, tpi,
                    pa.total(INSTRUCTIONS), pb.total(INSTRUCTIONS), evidence,
                    function_diff(pa, pb, a=a, b=b), pa.simulation if pa.simulation == pb.simulation
                    else "insn", pa.cache, comparison.p_adjusted)
    rule, text, winner = choose_words(x)
    return _with(x, rule, text, winner)


def _with(x: Explanation, rule: str, text: str, winner: str | None = None,
          evidence: tuple[Evidence, ...] | None = None) -> Explanation:
    return replace(x, rule=rule, text=text, winner=winner,
                   evidence=x.evidence if evidence is None else evidence)


def explain(doc: RunDoc, results: Sequence[WorkloadResult]) -> list[Explanation]:
    """One explanation per workload and compared pair (every target against the reference)."""
    out = []
    for res in results:
        memory = {m.a: m for m in res.memory}
        for c in res.comparisons:
            out.append(explain_pair(doc, res, c, memory.get(c.a)))
    return out
