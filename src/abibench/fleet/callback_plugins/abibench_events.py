"""Ansible callback of abibench fleet: one JSON line per task start and result, a recap per host.

Ansible loads it from this directory (`callback_plugins`, `callbacks_enabled = abibench_events`
in the ansible.cfg abibench fleet writes). It writes to the file descriptor named by
ABIBENCH_FLEET_EVENTS_FD (a pipe the controller reads live) or to the file named by
ABIBENCH_FLEET_EVENTS; with neither it does nothing, so the playbook also runs on its own.
Ansible's own output (the `default` stdout callback) is untouched. Lines::

    {"event": "start", "host", "task"}
    {"event": "ok"|"changed"|"failed"|"ignored"|"unreachable"|"skipped", "host", "task",
     "rc", "msg", "stderr_tail", "module_stderr", "module_stdout", "interpreter"}

module_stderr and module_stdout are what a module printed when its result was not Ansible's
JSON (it did not run: a broken Python, say), interpreter the Python that Ansible's interpreter
discovery chose on the host (only when it did). Texts are tails, raw: abibench sanitises them.
    {"event": "recap", "host", "ok", "changed", "failures", "unreachable", "skipped", ...}

ansible-core 2.19 names a result's parts result.host/task/result; older cores only have
result._host/_task/_result: both are read.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ansible.plugins.callback import CallbackBase


def _part(result: Any, name: str) -> Any:
    return getattr(result, name, None) or getattr(result, f"_{name}")


def _tail(text: Any) -> str | None:
    """The end of a text the result holds; "" when it holds an empty one (a module that
    printed nothing still says its output was not Ansible's), None when it holds none."""
    return text[-2000:] if isinstance(text, str) else None


class CallbackModule(CallbackBase):  # type: ignore[misc]
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "abibench_events"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        fd = os.environ.get("ABIBENCH_FLEET_EVENTS_FD")
        path = os.environ.get("ABIBENCH_FLEET_EVENTS")
        if fd:
            self._out: Any = os.fdopen(int(fd), "w", buffering=1)
        elif path:
            self._out = open(path, "a", buffering=1)  # noqa: SIM115
        else:
            self._out = None

    def _emit(self, record: dict[str, Any]) -> None:
        if self._out is not None:
            self._out.write(json.dumps(record, default=str) + "\n")

    def _result(self, event: str, result: Any) -> None:
        data = _part(result, "result")
        if event == "ok" and data.get("changed"):
            event = "changed"
        facts = data.get("ansible_facts")
        self._emit({"event": event, "host": _part(result, "host").get_name(),
                    "task": _part(result, "task").get_name(), "rc": data.get("rc"),
                    "msg": data.get("msg"), "stderr_tail": _tail(data.get("stderr")),
                    "module_stderr": _tail(data.get("module_stderr")),
                    "module_stdout": _tail(data.get("module_stdout")),
                    "interpreter": facts.get("discovered_interpreter_python")
                    if isinstance(facts, dict) else None})

    def v2_runner_on_start(self, host: Any, task: Any) -> None:
        self._emit({"event": "start", "host": host.get_name(), "task": task.get_name()})

    def v2_runner_on_ok(self, result: Any) -> None:
        self._result("ok", result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._result("ignored" if ignore_errors else "failed", result)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._result("unreachable", result)

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._result("skipped", result)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        for host in sorted(stats.processed):
            self._emit({"event": "recap", "host": host, **stats.summarize(host)})
        if self._out is not None:
            self._out.close()
            self._out = None
