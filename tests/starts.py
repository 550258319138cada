"""Fresh starts of the command line's parser, many for the cost of one interpreter.

One subprocess imports `abibench.cli` (what every start imports) and nothing else, then forks a
child per group of command lines: the child parses them with a parser built as a start builds
it (abibench.cli.commands.lazy_parser) and reports what each parse answered (the namespace or
the exit code, and what it printed) and every module it had imported by the end. A child starts
from what a real start has, so what one command's part imports or changes is seen by nobody
else's (in the test process every module has long been imported).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

_CHILD = r'''
import contextlib, io, json, os, sys
from abibench.cli import _join_negative_values
from abibench.cli.commands import handler_of, lazy_parser

def answer(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ns = lazy_parser().parse_args(_join_negative_values(argv))
            result = ["parsed", sorted((k, repr(v)) for k, v in vars(ns).items())]
            handler_of(ns.command)  # what the dispatch imports before it calls the command
        except SystemExit as exc:
            result = ["exit", exc.code]
    return [result, out.getvalue(), err.getvalue()]

results = []
for group in json.load(sys.stdin):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        data = json.dumps({"answers": [answer(a) for a in group], "modules": sorted(sys.modules)})
        with os.fdopen(write, "w") as f:
            f.write(data)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        results.append(json.loads(f.read()))
    os.waitpid(pid, 0)
json.dump(results, sys.stdout)
'''


def fresh_answers(groups: list[list[list[str]]]) -> list[dict[str, Any]]:
    """Per group of command lines: {"answers": [...], "modules": [...]} of one fresh start."""
    # Help is wrapped at the test process's width, not at the pipe's default.
    env = {**os.environ, "COLUMNS": str(shutil.get_terminal_size().columns)}
    done = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(groups), env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out: list[dict[str, Any]] = json.loads(done.stdout)
    return out


def as_fresh(answer: tuple[Any, str, str]) -> list[Any]:
    """An answer given in this process, in the form fresh_answers reports it."""
    result, out, err = answer
    if result[0] == "parsed":
        result = ["parsed", sorted([k, repr(v)] for k, v in result[1].items())]
    else:
        result = list(result)
    return [result, out, err]
