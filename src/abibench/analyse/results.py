"""From a run's stored samples to per-workload results: summaries, ratios, verdicts, validation.

Works on the versioned run document (store.load_run or an imported JSON file), so every report is
computed from what was stored, never from state that only lived in the measuring process.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from .. import stats
from ..abi import REFERENCE_ABIS
from ..probe.memory import DESCRIPTIONS as TREE_MEMORY
from ..records import (
    MEMORY_METRICS,
    Better,
    RunDoc,
    Sample,
    WorkloadMeta,
    abi_of,
    always_measured,
    better_of,
    emulated_words,
    family_of,
    pick_reference,
)
from ..run.stopping import short_of_precision
from ..text import one_line
from .conditions import (
    board_conditions,
    board_conditions_of,
    debian_versions,
    gathered,
    sampling_conditions,
    sampling_conditions_of,
)
from .foreign import comparable, no_verdict, withheld
from .noisesource import describe_sources_of
from .shape import Shape, shapes_of
from .sizes import larger_pct
from .sweepids import once_per_sweep

__all__ = ["board_conditions", "debian_versions", "sampling_conditions"]  # also read from here

# How a primary metric's verdict names the winner's advantage and the loser's.
PRIMARY_WORDS = ("faster", "slower")


@dataclass(frozen=True)
class TargetRow:
    label: str
    state: str  # ok | failed | timeout | not built | not run
    reason: str | None
    n: int = 0
    summary: stats.Summary | None = None  # of the primary metric, counted samples only
    rss_kb: float | None = None  # median peak RSS
    tree_kb: float | None = None  # median peak of the whole process tree ([run] memory = "tree")
    # every memory metric of the registry this target has (results.memory_medians): what
    # every format's memory table shows
    memory: dict[str, float | None] = field(default_factory=dict)
    size: int | None = None  # bytes of the main artifact
    text: int | None = None
    data: int | None = None
    bss: int | None = None
    stripped: int | None = None
    outliers: int = 0
    instructions: int | None = None  # from runs under a counter, when --counters asked
    # False when the counted runs never agreed (a program that reads the clock or seeds a hash
    # from it): the count is then the last run's, not an exact figure
    instructions_exact: bool = True
    emulated: bool = False  # its samples ran under an emulator: times measure the emulator
    # Under an emulator: the median peak memory of the ABI's empty program there (the
    # emulator's own), and rss_kb minus it, the estimate of the program's own peak.
    baseline_rss_kb: float | None = None
    net_rss_kb: float | None = None
    # Against the 64-bit ABI of its own family (armhf against aarch64), computed here so that
    # every format shows the same figure: its instructions over the reference's, and how much
    # larger the reference's file is than its own, in % (as the sizes table says it).
    insn_reference: str | None = None
    insn_ratio: float | None = None
    size_reference: str | None = None
    size_larger_pct: float | None = None

    @property
    def counter(self) -> str:
        """What counted its instructions."""
        return "QEMU plugin" if self.emulated else "valgrind"

    @property
    def shown_state(self) -> str:
        """The state in words; "ok" without a single counted sample says so."""
        if self.state == "ok" and self.n == 0:
            return "no samples"
        return self.state


@dataclass(frozen=True)
class PairVerdict:
    """One target against the reference on one metric: the ratio, its verdict and p-value."""

    metric: str
    a: str
    b: str
    ratio: stats.Ratio
    verdict: stats.Verdict
    p_adjusted: float
    values_a: tuple[float, ...] = ()
    values_b: tuple[float, ...] = ()

    @property
    def change_percent(self) -> float:
        """a's value against b's, in % (a memory change: -25 is a quarter less)."""
        return (self.ratio.ratio - 1) * 100


@dataclass(frozen=True)
class CountVerdict:
    """Executed instructions of one target against the 64-bit ABI of its family: exact counts,
    no interval. ``ratio`` is a's count over b's."""

    a: str
    b: str
    count_a: int
    count_b: int
    ratio: float
    text: str  # "aarch64 executes 6.8% fewer instructions than armhf [exact]"


def count_verdict(a: str, b: str, count_a: int, count_b: int,
                  exact: bool = True) -> CountVerdict:
    """The words for two counts; "[exact]" only when each target's counted runs agreed."""
    ratio = count_a / count_b
    tag = "[exact]" if exact else "[not exact: repeated counts differed]"
    if count_a == count_b:
        text = f"{a} and {b} execute the same number of instructions {tag}"
    elif count_b < count_a:
        text = (f"{b} executes {stats.short((1 - count_b / count_a) * 100)}% fewer "
                f"instructions than {a} {tag}")
    else:
        text = (f"{b} executes {stats.short((count_b / count_a - 1) * 100)}% more "
                f"instructions than {a} {tag}")
    return CountVerdict(a, b, count_a, count_b, ratio, text)


def family_reference(label: str, labels: Sequence[str]) -> str | None:
    """The 64-bit ABI of `label`'s family among `labels` (same provenance suffix), if any."""
    suffix = label[len(abi_of(label)):]
    for ref in REFERENCE_ABIS:
        cand = ref + suffix
        if cand in labels and family_of(cand) == family_of(label):
            return cand
    return None


@dataclass(frozen=True)
class SuiteSummary:
    """Geometric mean over workloads of a's cost relative to b (> 1: b is better overall)."""

    a: str
    b: str
    geomean: stats.GeoMean
    workloads: tuple[str, ...]
    excluded: tuple[str, ...]  # miscompared workloads: never averaged in
    text: str

    @property
    def significant(self) -> bool:
        return suite_significant(self.geomean)


@dataclass
class WorkloadResult:
    id: str
    title: str
    primary: str
    unit: str
    better: Better
    rows: list[TargetRow]
    comparisons: list[PairVerdict] = field(default_factory=list)
    memory: list[PairVerdict] = field(default_factory=list)
    # Instruction counts within each family (armhf against aarch64, i386 against x86_64).
    counts: list[CountVerdict] = field(default_factory=list)
    # Emulated targets: what their figures are ("emulated: measures QEMU, ..."), and their
    # peak memory net of the emulator's own, compared within the family.
    emulation: list[str] = field(default_factory=list)
    emulated_memory: list[PairVerdict] = field(default_factory=list)
    validation: str = "unchecked"  # ok | miscompare | unchecked
    validation_detail: str = ""
    stop_reason: str = ""
    warnings: list[str] = field(default_factory=list)
    provenance: list[str] = field(default_factory=list)  # e.g. the Debian versions compared
    # targets without a verdict because they load the host's libraries: one line each
    withheld: list[str] = field(default_factory=list)
    shapes: list[Shape] = field(default_factory=list)  # targets whose samples have a tail or two modes


def where_they_differ(values: Sequence[str], width: int = 24) -> list[str]:
    """Each check value shown from a little before the first character where they differ: a
    value that starts alike on every ABI (a counter's label, a known answer's text) shows its
    difference rather than its label."""
    common = next((i for i, chars in enumerate(zip(*values, strict=False))
                   if len(set(chars)) > 1), min(map(len, values), default=0))
    start = max(0, common - 8) if common > width - 8 else 0
    return [("…" if start else "") + one_line(v[start:start + width]) for v in values]


# One ABI's outputs differ from round to round: what is compared holds something that varies (a
# time or a rate in the whole stdout, --check-stdout's digest), not only what the program computed.
UNSTABLE_OUTPUT_HINT = ("what is compared varies from run to run (a time or a rate in it?): "
                        "compare only what the program computed, with --check REGEX on the "
                        "command line (e.g. --check '(?m)^checksum: (\\S+)$') or [validate] "
                        "stdout_match in a profile")


def validate_outputs(samples: Sequence[Sample], labels: Sequence[str],
                     validates: bool | None = None,
                     no_validation: str | None = None) -> tuple[str, str]:
    """ok, miscompare or unchecked, and the detail: every ok sample's check value compared.

    `validates` says whether the profile asks for a comparison at all (None: not recorded,
    as in runs of older versions), so "unchecked" names the true reason; `no_validation` is
    the profile's own reason (validate = "none: REASON"), which then is the detail.
    """
    if no_validation is not None:
        return "unchecked", f"not validated: {one_line(no_validation)}"
    checks: dict[str, set[str]] = {}
    for s in samples:
        if s.status == "ok" and s.check is not None and s.discarded is None:
            checks.setdefault(s.target, set()).add(s.check)
    return validate_checks(checks, any(s.status == "ok" for s in samples), labels, validates)


def validate_checks(checks: dict[str, set[str]], any_ok: bool, labels: Sequence[str],
                    validates: bool | None = None,
                    no_validation: str | None = None) -> tuple[str, str]:
    """`validate_outputs` from what it reads of the samples (`RunDoc.checks`): each target's
    check values, targets in the order first seen, and whether any sample ended ok."""
    if no_validation is not None:
        return "unchecked", f"not validated: {one_line(no_validation)}"
    if not checks:
        if validates is False or (validates is None and any_ok):
            return "unchecked", "no validation value (the profile has no [validate])"
        return "unchecked", "not checked: no sample succeeded"
    for t, values in checks.items():
        if len(values) > 1:
            return "miscompare", (f"{t} gave {len(values)} different outputs across its own "
                                  f"runs: {UNSTABLE_OUTPUT_HINT}")
    distinct = {t: next(iter(v)) for t, v in checks.items()}
    if len(set(distinct.values())) > 1:
        shown = ", ".join(f"{t}={v}" for t, v in zip(distinct, where_they_differ(
            list(distinct.values())), strict=True))
        return "miscompare", f"outputs differ between ABIs: {shown}"
    missing = [t for t in labels if t not in checks]
    # "name~digest": a [validate] close file within its tolerance of the run's first output
    # (run/samples.py), equal but not byte for byte
    close = re.search(r"\S~[0-9a-f]{16}(\s|$)", next(iter(distinct.values())))
    same = "equal within the profile's [validate] close tolerance" if close else "identical"
    detail = f"{same} on {', '.join(sorted(checks))}"
    return "ok", detail + (f" (not checked: {', '.join(missing)})" if missing else "")


def analyse(doc: RunDoc, references: Mapping[str, str] | None = None) -> list[WorkloadResult]:
    """Every workload's results; `references` names the reference target per workload (a
    merged comparison decides it), else it is the 64-bit ABI."""
    results: list[WorkloadResult] = []
    for wid, meta in doc.workloads.items():
        primary = meta.primary_metric
        rows = family_ratios(_target_rows(doc, wid, meta), (references or {}).get(wid))
        # A target that loads the host's libraries measures them, not the program: no verdict
        # for it or against it, in time or in size (analyse/foreign.py decides which).
        foreign = withheld(doc, wid)
        rows = [r if comparable(r.label, r.size_reference, foreign)
                else replace(r, size_larger_pct=None) for r in rows]
        res = WorkloadResult(id=wid, title=meta.title or wid, primary=meta.primary,
                             unit=primary.unit, better=primary.better, rows=rows,
                             stop_reason=doc.outcomes[wid].text() if wid in doc.outcomes else "")
        res.withheld.extend(no_verdict(doc, wid))
        res.warnings.extend(res.withheld)
        _conditions(res, doc, wid, meta)
        _emulated_memory(res, doc, wid, rows)
        res.counts.extend(_count_verdicts(rows))
        _compare(res, doc, meta, (references or {}).get(wid))
        results.append(res)
    _apply_holm(results)
    return results


def _target_rows(doc: RunDoc, wid: str, meta: WorkloadMeta) -> list[TargetRow]:
    """One row per target: its primary metric's summary, memory, sizes and counts."""
    counts = doc.instructions(wid)
    profiles = doc.counter_profiles(wid)
    emulated = doc.emulated_targets(wid)
    baselines = doc.baseline_rss(wid)
    rows: list[TargetRow] = []
    for label in meta.targets:
        st = doc.status_of(wid, label)
        state, reason = (st.state, st.reason) if st else ("ok", None)
        art = doc.artifact_of(wid, label)
        sizes = art.main_sizes() if art else {}
        values = doc.values(wid, label, meta.primary)
        rss = doc.values(wid, label, "max_rss")  # the Sample's max_rss_kb, as floats
        tree = doc.values(wid, label, "tree_peak_rss")
        summary = stats.summarize(values) if values else None
        rss_median = stats.summarize(rss).median if rss else None
        base = baselines.get(label)
        base_median = stats.summarize(base).median if base else None
        rows.append(TargetRow(
            label=label, state=state, reason=reason, n=len(values), summary=summary,
            rss_kb=rss_median,
            tree_kb=stats.summarize(tree).median if tree else None,
            memory=memory_medians_of(doc, wid, label),
            size=sizes.get("file"), text=sizes.get("text"), data=sizes.get("data"),
            bss=sizes.get("bss"), stripped=sizes.get("stripped"),
            outliers=sum(stats.outliers(values)) if len(values) >= 5 else 0,
            instructions=counts.get(label),
            instructions_exact=profiles[label].agreed if label in profiles else True,
            emulated=label in emulated, baseline_rss_kb=base_median,
            net_rss_kb=rss_median - base_median if rss_median is not None
            and base_median is not None else None))
    return rows


def memory_medians(samples: list[Sample]) -> dict[str, float | None]:
    """The median of every memory metric of the registry in a target's counted samples: one
    every sample holds always has an entry (None without samples), one only some workloads
    measure has one when a sample did. Every format's memory table reads this, nothing else."""
    out: dict[str, float | None] = {}
    for metric in MEMORY_METRICS:
        values = [v for s in samples if (v := s.value(metric)) is not None]
        if values or always_measured(metric):
            out[metric] = stats.summarize(values).median if values else None
    return out


def memory_medians_of(doc: RunDoc, wid: str, target: str) -> dict[str, float | None]:
    """`memory_medians(doc.counted(wid, target))`, from the document's per-target values."""
    out: dict[str, float | None] = {}
    for metric in MEMORY_METRICS:
        values = doc.values(wid, target, metric)
        if values or always_measured(metric):
            out[metric] = stats.summarize(values).median if values else None
    return out


def _conditions(res: WorkloadResult, doc: RunDoc, wid: str, meta: WorkloadMeta) -> None:
    """What weakens or qualifies a workload's figures: warnings, provenance, the output check,
    and the targets whose times measure an emulator."""
    labels = list(meta.targets)
    res.warnings.extend(_sample_warnings(res.rows, doc, wid, res.stop_reason))
    higher = meta.primary_metric.better == "higher"
    res.shapes = shapes_of({label: doc.values(wid, label, meta.primary) for label in labels},
                           higher)
    res.warnings.extend(shape.words() for shape in res.shapes)
    if short_of_precision(res.stop_reason):
        res.warnings.append(describe_sources_of(doc, wid, labels, meta.primary, higher,
                                                res.shapes))
    top = doc.host.get("cpu_max_mhz")
    warnings, board_line = board_conditions_of(
        doc, wid, float(top) if isinstance(top, int | float) else None)
    res.warnings.extend(warnings)
    if board_line:
        res.provenance.append(board_line)
    notes, skew = debian_versions([a for a in doc.artifacts if a.workload == wid])
    res.provenance.extend(notes)
    conditions = sampling_conditions_of(doc, wid)
    if conditions:
        res.provenance.append(conditions)
    trees = sorted({t for t in gathered(doc, wid, "tree_memory") if t})
    for kind in trees:
        res.provenance.append(f"tree peak RSS: {TREE_MEMORY.get(kind, kind)}")
    res.warnings.extend(skew)
    # A counting run that failed leaves its target without a count: say why, rather than
    # leave a gap in the instructions column.
    counts = doc.instructions(wid)
    uncounted = {s.target: one_line(s.error or s.status)[:300] for s in doc.others(wid)
                 if s.kind == "counters" and s.status != "ok" and s.target not in counts}
    res.warnings.extend(f"{t}: no instruction count: the counting run failed ({why})"
                        for t, why in uncounted.items())
    res.validation, res.validation_detail = validate_checks(*doc.checks(wid), labels,
                                                            meta.validates, meta.no_validation)
    # One line per machine: each names the CPU its times are not measurements of.
    by_cpu: dict[str, list[str]] = {}
    for name in sorted(doc.emulated_targets(wid), key=labels.index):
        by_cpu.setdefault(emulated_words(name), []).append(name)
    for said, names in by_cpu.items():
        res.emulation.append(
            f"{', '.join(names)}: {said}; times are shown, never a "
            "speed verdict; peak memory includes the emulator's own (net estimate below)")


def _compare(res: WorkloadResult, doc: RunDoc, meta: WorkloadMeta,
             wanted: str | None) -> None:
    """Each measured target against the reference: the primary metric and every memory one."""
    primary = meta.primary_metric
    # An emulator's speed says nothing about an ABI on its own hardware: only targets the
    # host ran itself are compared in time (and in peak memory, which under an emulator
    # includes the emulator's: compared net of it within the family, above).
    memory = [(m, better_of("lower"), ("smaller", "larger"), True, res.memory)
              for m in doc.measured_memory(res.id)]
    foreign = withheld(doc, res.id)
    measured = [r.label for r in res.rows if r.n >= 2 and not r.emulated
                and r.label not in foreign]
    if len(measured) < 2:
        return
    ref = wanted if wanted in measured else pick_reference(measured)
    for other in measured:
        if other == ref:
            continue
        # Memory is a reduction ("30% smaller" = 0.70x), time a speed-up.
        for metric, better, words, reduction, bucket in (
                (meta.primary, primary.better, PRIMARY_WORDS, False,
                 res.comparisons), *memory):
            pair = doc.paired(res.id, metric, other, ref)
            try:
                ratio = stats.ratio_of(pair.a, pair.b, paired=pair.paired,
                                       name_a=other, name_b=ref,
                                       covariate=pair.covariate)
            except ValueError as exc:
                # e.g. "rate: i386 has values <= 0: ...": no ratio, so no verdict
                res.warnings.append(f"{metric}: {exc}")
                continue
            bucket.append(PairVerdict(metric, other, ref, ratio,
                                      stats.verdict(ratio, better=better, name_a=other,
                                                    name_b=ref, words=words,
                                                    as_reduction=reduction),
                                      ratio.p_value, pair.a, pair.b))


def family_ratios(rows: list[TargetRow], reference: str | None = None) -> list[TargetRow]:
    """Each row with its instruction ratio and file size difference to the 64-bit ABI of
    its family (or, for a series with no family among the rows, ``reference``)."""
    insns = {r.label: r.instructions for r in rows if r.instructions}
    sizes = {r.label: r.size for r in rows if r.size}
    out = []
    for row in rows:
        iref = family_reference(row.label, list(insns))
        sref = family_reference(row.label, list(sizes)) or (reference if reference in sizes
                                                            else None)
        n, ref_n = row.instructions, insns.get(iref or "")
        size, ref_size = row.size, sizes.get(sref or "")
        out.append(replace(
            row, insn_reference=iref,
            insn_ratio=n / ref_n if n and ref_n and iref != row.label else None,
            size_reference=sref,
            size_larger_pct=larger_pct(ref_size, size) if sref != row.label else None))
    return out


def _count_verdicts(rows: list[TargetRow]) -> list[CountVerdict]:
    counted = {r.label: r for r in rows if r.instructions}
    out = []
    for label, row in counted.items():
        ref = family_reference(label, list(counted))
        if ref is None or ref == label or row.instructions is None:
            continue
        other = counted[ref]
        out.append(count_verdict(label, ref, row.instructions, other.instructions or 0,
                                 row.instructions_exact and other.instructions_exact))
    return out


def _emulated_memory(res: WorkloadResult, doc: RunDoc, wid: str, rows: list[TargetRow]) -> None:
    """Peak memory of emulated targets net of their emulator's own (the empty program's peak),
    each against the 64-bit ABI of its family: an estimate, and labelled so."""
    emu = {r.label: r for r in rows if r.emulated and r.n >= 2 and r.baseline_rss_kb is not None}
    for label, row in emu.items():
        ref = family_reference(label, list(emu))
        if ref is None or ref == label:
            continue
        pair = doc.paired(wid, "max_rss", label, ref)
        base_a, base_b = row.baseline_rss_kb or 0.0, emu[ref].baseline_rss_kb or 0.0
        a = tuple(v - base_a for v in pair.a)
        b = tuple(v - base_b for v in pair.b)
        try:
            ratio = stats.ratio_of(a, b, paired=pair.paired, name_a=label, name_b=ref)
        except ValueError as exc:
            res.warnings.append(f"peak memory net of the emulator: {exc}")
            continue
        v = stats.verdict(ratio, better="lower", name_a=label, name_b=ref,
                          words=("smaller", "larger"), as_reduction=True)
        note = (f"{v.text} (peak RSS net of the emulator's own {base_a / 1024:.1f} / "
                f"{base_b / 1024:.1f} MiB) [emulated estimate]")
        res.emulated_memory.append(PairVerdict("max_rss", label, ref, ratio,
                                               replace(v, text=note), ratio.p_value, a, b))


SHORT_SAMPLE_S = 0.005  # below this, timer resolution and spawn cost are a visible share
HIGH_CV = 0.10


def _sample_warnings(rows: list[TargetRow], doc: RunDoc, wid: str,
                     stop_reason: str) -> list[str]:
    out = []
    for row in rows:
        walls = doc.column(wid, row.label, "wall_s")
        if walls and stats.summarize(walls).median < SHORT_SAMPLE_S:
            out.append(f"{row.label}: samples take under 5 ms: spawn cost and timer resolution "
                       "are part of what is measured; give the workload more work")
        if row.summary and row.summary.n >= 3 and row.summary.cv == row.summary.cv \
                and abs(row.summary.cv) > HIGH_CV:
            out.append(f"{row.label}: coefficient of variation "
                       f"{stats.short(abs(row.summary.cv) * 100, '.0f')}% "
                       "> 10%: a noisy machine or workload; more rounds narrow the CI")
    if short_of_precision(stop_reason):
        out.append(f"stopped by budget before reaching the asked precision ({stop_reason})")
    return out


def _apply_holm(results: list[WorkloadResult]) -> None:
    """Adjust p-values across all primary comparisons of the run and redo their verdicts."""
    comps = [(r, i) for r in results for i in range(len(r.comparisons))]
    if not comps:
        return
    adjusted = stats.holm([r.comparisons[i].ratio.p_value for r, i in comps])
    for (r, i), p in zip(comps, adjusted, strict=True):
        c = r.comparisons[i]
        v = stats.verdict(c.ratio, better=better_of(r.better), name_a=c.a, name_b=c.b,
                          p_adjusted=p)
        r.comparisons[i] = PairVerdict(c.metric, c.a, c.b, c.ratio, v, p, c.values_a, c.values_b)


def suite_summary(results: list[WorkloadResult]) -> list[SuiteSummary]:
    """One geometric mean per ABI pair over the primary metrics of every valid workload; a
    sweep counts once, by its largest value (analyse/sweepids.py)."""
    pairs: dict[tuple[str, str], list[tuple[WorkloadResult, PairVerdict]]] = {}
    for r in once_per_sweep(results, lambda r: r.id):
        for c in r.comparisons:
            pairs.setdefault((c.a, c.b), []).append((r, c))
    out = []
    for (a, b), items in pairs.items():
        valid = [(r, c) for r, c in items if r.validation != "miscompare"]
        excluded = tuple(r.id for r, _ in items if r.validation == "miscompare")
        if not valid:
            continue
        try:
            gm = stats.geomean_ratio(
                [(c.values_a, c.values_b, c.ratio.paired) for _, c in valid],
                better=[better_of(r.better) for r, _ in valid])
        except ValueError:
            # Every comparison here has a ratio already (ratio_of refused the others, with a
            # warning on their workload), so this is a guard, not a path: no mean, no verdict.
            continue
        out.append(SuiteSummary(a, b, gm, tuple(r.id for r, _ in valid), excluded,
                                _suite_text(a, b, gm)))
    return out


def _suite_text(a: str, b: str, gm: stats.GeoMean) -> str:
    # gm is a's cost relative to b: > 1 means b is better.
    if not suite_significant(gm):
        return "no significant difference overall"
    if gm.value > 1:
        return f"{b} is {stats.advantage(gm.value, gm.ci_low, gm.ci_high, 'faster')} overall"
    return (f"{a} is {stats.advantage(1 / gm.value, 1 / gm.ci_high, 1 / gm.ci_low, 'faster')} "
            "overall")


def suite_significant(gm: stats.GeoMean) -> bool:
    """Whether the suite's geometric mean differs from 1: its CI excludes 1."""
    return not (math.isnan(gm.ci_low) or gm.ci_low <= 1.0 <= gm.ci_high)
