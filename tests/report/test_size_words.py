"""A signed difference is said by its word, never by a sign in front of the word: the family of
"x86_64 -16.0% larger than i386" (issue 27's jq example), one function for every size sentence
(report/formatting.py `size_change`)."""

from __future__ import annotations

import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.report.formatting import size_change


@settings(max_examples=300, deadline=None)
# A file's size change is at least -100% and, for programs, far below a million percent.
@given(st.one_of(st.floats(min_value=-100, max_value=1e6),
                 st.sampled_from([math.nan, math.inf, -math.inf])),
       st.sampled_from(["i386", "x86_64", "x32"]))
def test_a_size_change_says_its_sign_in_words(percent: float, other: str) -> None:
    text = size_change("x86_64", percent, other)
    assert text.startswith("x86_64 ") and other in text
    assert "-" not in text.replace("x86_64", "").replace(other, "").replace("no comparable", "")
    m = re.fullmatch(rf"x86_64 ([0-9.e+]+)% (larger|smaller) than {other}", text)
    if not math.isfinite(percent):
        assert "no comparable size" in text
    elif m is None:
        assert text == f"x86_64 the same size as {other}" and abs(percent) < 0.05
    else:
        assert (m[2] == "larger") == (percent > 0)
        assert math.isclose(float(m[1]), abs(percent), rel_tol=0.01, abs_tol=0.05)
