"""One way of stating a speed difference (issue 29): the verdict, the table cell and every format
say the same figure: the winner's advantage relative to the loser, a percentage below 2x and a
multiple from 2x on. Generated over ratios, intervals and both directions."""

from __future__ import annotations

import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench import stats
from abibench.stats import Ratio

WORDS = ("faster", "slower")
# ratio of a to b, and the CI's relative half-width: from a 1% difference to a 50x one
ratios = st.floats(min_value=1 / 50, max_value=50).filter(lambda r: abs(math.log(r)) > 0.01)
widths = st.floats(min_value=0.0, max_value=0.009)
MAGNITUDE = re.compile(r"^(?:(\S+) is )?([0-9.]+)(%|×) (\w+)")


def _said(text: str) -> tuple[str | None, float, str, str]:
    m = MAGNITUDE.match(text)
    assert m, text
    return m.group(1), float(m.group(2)), m.group(3), m.group(4)


@settings(max_examples=300, deadline=None)
@given(ratio=ratios, width=widths, better=st.sampled_from(["higher", "lower"]))
def test_verdict_and_both_sides_state_one_figure(ratio: float, width: float, better: str) -> None:
    r = Ratio(ratio, ratio * (1 - width), ratio * (1 + width), 1e-9, ratio, 10, 10, True, 0.95)
    v = stats.verdict(r, better=better, name_a="a", name_b="b")  # type: ignore[arg-type]
    assert v.significant
    winner, figure, unit, word = _said(v.text)
    # a's side and b's side of the same comparison, as the cells of a table say them
    pct = stats.percent_better(r.ratio, r.ci_low, r.ci_high, better)
    back = stats.percent_better(1 / r.ratio, 1 / r.ci_high, 1 / r.ci_low, better)
    mirror = (-pct[0], -pct[2], -pct[1])  # b's side: the sign flips and the CI's ends swap
    assert all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)
               for x, y in zip(back, mirror, strict=True)), (back, mirror)
    a_side, b_side = stats.difference(*pct, WORDS), stats.difference(*back, WORDS)
    for side, name in ((a_side, "a"), (b_side, "b")):
        _, fig, u, w = _said(side)
        assert (fig, u) == (figure, unit), (v.text, side)  # the same figure, the same unit
        assert w == ("faster" if name == winner else "slower")
    factor = 1 + abs(pct[0]) / 100  # the loser's cost over the winner's
    assert unit == ("×" if factor >= 2 else "%"), v.text
    assert word == "faster" and (unit == "×" or figure < 100)
    assert math.isclose(figure, factor if unit == "×" else (factor - 1) * 100,
                        abs_tol=0.051 if unit == "%" else 0.051 * factor)


@settings(max_examples=100, deadline=None)
@given(low=st.floats(min_value=0.2, max_value=5), span=st.floats(min_value=0, max_value=3),
       better=st.sampled_from(["higher", "lower"]))
def test_the_signed_percent_keeps_the_interval_in_order(low: float, span: float,
                                                        better: str) -> None:
    high = low * (1 + span)
    mid = math.sqrt(low * high)
    p, lo, hi = stats.percent_better(mid, low, high, better)
    assert lo <= p <= hi
    assert (p > 0) == ((mid > 1) == (better == "higher")) or mid == 1


def test_renderers_get_size_and_instruction_ratios_from_the_analysis() -> None:
    """The file size difference beside a target is the sizes table's figure, and the instruction
    ratio is each ABI's count over its family's 64-bit ABI's: computed in analyse/, once."""
    from abibench.analyse.results import TargetRow, family_ratios

    rows = family_ratios([TargetRow("i386", "ok", None, size=16280, instructions=1_200),
                          TargetRow("x86_64", "ok", None, size=17560, instructions=1_000),
                          TargetRow("armhf", "ok", None, size=9000, instructions=900)])
    i386, x86_64, armhf = rows
    assert i386.size_reference == "x86_64" and i386.size_larger_pct == 7.86
    assert i386.insn_reference == "x86_64" and i386.insn_ratio == 1.2
    assert x86_64.size_larger_pct is None and x86_64.insn_ratio is None  # the reference itself
    assert armhf.insn_ratio is None and armhf.size_larger_pct is None  # no aarch64 to compare
