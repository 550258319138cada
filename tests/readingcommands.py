"""The commands that read a stored run, as measured for how they scale (issue 30): one list,
read by tests/invariants/test_linear_work.py (work counted at small sizes) and by
bench/scale.py (time and memory up to 10^6 samples). `{run}` is the run's id, `{out}` a
directory for written files, `{file}` the run's exported document."""

from __future__ import annotations

READING_COMMANDS: dict[str, list[str]] = {
    "report": ["report", "{run}"],
    "report --html": ["report", "{run}", "--html", "{out}/r.html"],
    "report --csv": ["report", "{run}", "--csv", "{out}/r.csv"],
    "report --markdown": ["report", "{run}", "--markdown", "{out}/r.md"],
    "report --samples-csv": ["report", "{run}", "--samples-csv", "{out}/s.csv"],
    "report --json": ["report", "{run}", "--json"],
    "explain": ["explain", "{run}"],
    "advise": ["advise", "{run}", "--memory", "4GiB"],
    "compare": ["compare", "{run}", "{file}"],
    "compare runs": ["compare", "{run}", "{run}"],
    "export": ["export", "{run}", "-o", "{out}/e.json"],
}
