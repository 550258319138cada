"""Words whose shown number contradicts the claim (brief G, item 4): a significant ratio that
rounds to 1.000 was said "x86_64 is 0.0% smaller". `stats.claimed` is the one place a claim's
number is made; generated over significant ratios within 0.1% of 1, both directions, both
phrasings (a gain, a reduction) and the signed `difference`."""

from __future__ import annotations

import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench import stats
from abibench.stats import Ratio

CLAIM = re.compile(r"^\S+ is (< )?([0-9.e+-]+)% (faster|slower|smaller|larger)")
near_one = st.floats(min_value=1e-7, max_value=1e-3)


def _number(text: str) -> float:
    m = CLAIM.match(text)
    assert m, text
    return float(m.group(2))


def _ratio(r: float) -> Ratio:
    lo, hi = (r * (1 - 1e-9), r * (1 + 1e-9))
    return Ratio(r, lo, hi, 1e-6, r, 10, 10, True, 0.95)


@settings(max_examples=200, deadline=None)
@given(eps=near_one, up=st.booleans(), better=st.sampled_from(["higher", "lower"]),
       reduction=st.booleans())
def test_a_significant_difference_is_never_shown_as_zero(eps: float, up: bool, better: str,
                                                          reduction: bool) -> None:
    ratio = 1 + eps if up else 1 / (1 + eps)
    words = ("smaller", "larger") if reduction else ("faster", "slower")
    v = stats.verdict(_ratio(ratio), better=better, name_a="x86_64", name_b="i386",  # type: ignore[arg-type]
                      words=words, as_reduction=reduction)
    assert v.significant
    assert _number(v.text) > 0, v.text
    # and the digits shown are the claim's: within a rounding of the true percentage
    m = CLAIM.match(v.text)
    assert m is not None
    if m.group(1) is None:
        # one decimal (an error up to 0.05) or two significant digits (up to 5%)
        err = abs(_number(v.text) - v.percent)
        assert err <= max(0.0501, 0.051 * v.percent), (v.text, v.percent)
    else:
        assert v.percent < 1e-3


@settings(max_examples=100, deadline=None)
@given(percent=st.floats(min_value=1e-6, max_value=0.05), sign=st.sampled_from([-1, 1]),
       reduction=st.booleans())
def test_a_signed_difference_keeps_its_digits(percent: float, sign: int, reduction: bool) -> None:
    said = stats.difference(sign * percent, sign * percent * 0.5, sign * percent * 1.5,
                            ("faster", "slower"), reduction)
    number = said.split("%")[0].lstrip("< ")
    assert float(number) > 0, said


def test_ordinary_numbers_keep_their_format() -> None:
    assert stats.claimed(12.345) == "12.3"
    assert stats.claimed(0.04) == "0.04"
    assert stats.claimed(0.0004) == "< 0.001"
    assert stats.claimed(0.0) == "0.0"
    assert stats.claimed(math.nan) == "-"
