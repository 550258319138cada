"""Every stop reason the budget writes is read back as what it is.

Family: "a stop reason classified by a prefix list kept somewhere else" (the merge and the
analysis each kept ("time budget", "max ") and missed "run budget" and "--max-time", so a
workload the budget cut short got no warning). One predicate, run/stopping.short_of_precision;
the members are generated from the source itself: every reason run/budget.py can write.
"""

from __future__ import annotations

import ast
from pathlib import Path

import abibench.run.budget as budget
from abibench.run.stopping import short_of_precision


def _stop_reason_prefixes() -> list[str]:
    tree = ast.parse(Path(budget.__file__).read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "stop" and node.args:
            arg = node.args[0]
            first = arg.values[0] if isinstance(arg, ast.JoinedStr) else arg
            assert isinstance(first, ast.Constant) and isinstance(first.value, str), \
                ast.unparse(arg)
            out.append(first.value)
    return out


def test_every_budget_stop_is_either_reached_or_short_of_precision() -> None:
    prefixes = _stop_reason_prefixes()
    assert len(prefixes) >= 4
    for prefix in prefixes:
        reached = prefix.startswith("precision reached")
        assert reached != short_of_precision(prefix), prefix
