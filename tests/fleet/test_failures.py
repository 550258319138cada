"""A failed fleet task says why, whatever the host's Python does instead of running Ansible's
module: the fix first (set ansible_python_interpreter), then Ansible's message and the module's
own output, sanitised (src/abibench/fleet/ansible.py, failure_reason).

Once a local host whose python3 was a broken pyenv shim failed with only "Module result
deserialization failed: No start of json char found", the shim's own words hidden. Here the
"host" is this machine over Ansible's local connection, and its Python is generated: an exit
code, what it prints on stdout and stderr (escape sequences, bidi overrides and line breaks
included), and whether Ansible's interpreter discovery finds it or the inventory names it."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from abibench.fleet import ansible
from abibench.text import one_line

# Text a broken interpreter prints: words, and what a terminal would obey. No "{": Ansible
# looks for a JSON object's start in a module's stdout.
SAID = st.text(alphabet=st.sampled_from(list("pyenv: python3 not found \n\t\x1b[2J]0;\x07\u202e"
                                             "\x9b")), max_size=60)
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _broken_python(where: Path, code: int, out: str, err: str) -> Path:
    (where / "out").write_text(out)
    (where / "err").write_text(err)
    shims = where / "shims"
    shims.mkdir()
    exe = shims / "python3.13"
    exe.write_text(f"#!/bin/sh\ncat '{where}/out'\ncat '{where}/err' >&2\nexit {code}\n")
    exe.chmod(0o755)
    return exe


def _shown(text: str) -> str:
    return " ".join(one_line(text).split())


@settings(max_examples=3, deadline=None)
@example(code=127, out="", err="pyenv: python3.13: command not found\n", discovered=True)
@given(code=st.sampled_from([0, 1, 126, 127]), out=SAID, err=SAID, discovered=st.booleans())
def test_a_host_whose_python_does_not_run_the_module_is_named_with_the_fix(
        code: int, out: str, err: str, discovered: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="abibench-test-") as tmp:
        where = Path(tmp)
        exe = _broken_python(where, code, out, err)
        python = (f"ansible_python_interpreter=auto "
                  f"ansible_interpreter_python_fallback='{json.dumps([str(exe)])}'"
                  if discovered else f"ansible_python_interpreter={exe}")
        inventory = where / "inventory.ini"
        inventory.write_text(f"[fleet]\nlocalhost ansible_connection=local {python} "
                             f"abibench_workdir={where}/host\n")
        work = where / "work"
        work.mkdir()
        events: list[ansible.Event] = []
        result = ansible.run_playbook(inventory, {}, work, 1, events.append)
        outcome = result.hosts["localhost"]
        assert outcome.status == ansible.FAILED and outcome.task == "Work directory", outcome
        reason = outcome.reason or ""
        assert "set ansible_python_interpreter in the inventory" in reason, reason
        assert not UNSAFE.search(reason), reason
        if discovered:
            assert f"the host's Python {exe}, which Ansible's interpreter discovery chose " \
                   "(a version manager's shim)" in reason, reason
        said = _shown(err) or _shown(out)  # the module's stderr, else its stdout
        assert said in reason, (said, reason)
        assert not (where / "host").exists()  # the task never ran
