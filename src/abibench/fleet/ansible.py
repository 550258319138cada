"""ansible-playbook run as a subprocess, its outcome per host read as data.

Ansible is configured entirely by an ansible.cfg written into a work directory and named by
ANSIBLE_CONFIG (every other ANSIBLE_* variable is left out), so no ~/.ansible and no stray
ansible.cfg of the current directory takes part. Our callback (callback_plugins/
abibench_events.py) writes one JSON line per task start and result into a pipe that is read
while the playbook runs: that is the live progress, and the per-host outcome. Ansible's own
output goes to a log file in the work directory. The ssh connections Ansible keeps open
(ControlPersist) are told to exit when the playbook ends, whatever way it ends.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import HostError, UsageError
from ..text import one_line

HERE = Path(__file__).resolve().parent
PLAYBOOK = HERE / "playbook.yml"
CALLBACKS = HERE / "callback_plugins"

OK, FAILED, UNREACHABLE, NOT_RUN = "ok", "failed", "unreachable", "not run"
# The Python that runs Ansible's modules on every host, unless the inventory says otherwise
# (ansible_python_interpreter): Debian's own. Ansible's discovery would take the first python3.N
# on the PATH, and a version manager's shim there (pyenv's) may not run at all.
DEFAULT_INTERPRETER = "/usr/bin/python3"
POLL_INTERVAL_S = 0.05


def tool(name: str) -> str:
    """An Ansible program: beside this Python (the venv abibench runs in), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise HostError(f"{name} not found: install ansible-core (pip install ansible-core, or "
                        "bash setup.sh)")
    return found


@dataclass
class HostOutcome:
    status: str = OK  # ok | failed | unreachable | not run
    task: str | None = None  # the task it failed at
    reason: str | None = None
    recap: dict[str, int] = field(default_factory=dict)


@dataclass
class PlaybookResult:
    exit_code: int
    hosts: dict[str, HostOutcome]
    log: Path


def write_config(work: Path, forks: int) -> Path:
    cp = work / "cp"
    cp.mkdir(exist_ok=True, mode=0o700)
    cfg = work / "ansible.cfg"
    cfg.write_text("\n".join([
        "[defaults]",
        f"home = {work / 'ansible-home'}",
        f"local_tmp = {work / 'ansible-local'}",
        f"forks = {forks}",
        "retry_files_enabled = False",
        "nocolor = True",
        f"interpreter_python = {DEFAULT_INTERPRETER}",
        # How often ansible-playbook's main loop looks for a task's result: Ansible's default,
        # every millisecond, costs the controller 0.04 CPU s for every second a task runs
        # (bench/ansible_poll.sh), and a host's measuring run lasts minutes; 50 ms is
        # nothing beside a task's own seconds over ssh.
        f"internal_poll_interval = {POLL_INTERVAL_S}",
        f"callback_plugins = {CALLBACKS}",
        "callbacks_enabled = abibench_events",
        "",
        "[ssh_connection]",
        "pipelining = True",
        "ssh_args = -o ControlMaster=auto -o ControlPersist=30s",
        f"control_path_dir = {cp}",
        "",
    ]))
    return cfg


def _environment(cfg: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(cfg), PYTHONUNBUFFERED="1",
               # ansible-playbook refuses to start in a locale that is not UTF-8
               LC_ALL=env.get("LC_ALL") or "C.UTF-8")
    return env


def list_hosts(inventory: Path, work: Path) -> list[str]:
    """The hosts of an inventory (INI or YAML), in its order, as Ansible itself reads it."""
    if not inventory.is_file():
        raise UsageError(f"inventory {inventory} not found: pass an Ansible inventory file "
                         "(INI or YAML)")
    cfg = write_config(work, 1)
    done = subprocess.run([tool("ansible-inventory"), "-i", str(inventory), "--list"],
                          capture_output=True, text=True, env=_environment(cfg), check=False,
                          timeout=300)
    if done.returncode != 0:
        raise UsageError(f"inventory {inventory}: ansible-inventory failed: "
                         f"{one_line(done.stderr)[-400:]}")
    data = json.loads(done.stdout)
    hosts: list[str] = []

    def walk(group: str) -> None:
        entry = data.get(group) or {}
        hosts.extend(h for h in entry.get("hosts", []) if h not in hosts)
        for child in entry.get("children", []):
            walk(child)

    walk("all")
    if not hosts:
        raise UsageError(f"inventory {inventory} has no hosts")
    return hosts


def _close_control_masters(work: Path) -> None:
    for sock in sorted((work / "cp").glob("*")):
        subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "fleet-host"],
                       capture_output=True, timeout=10, check=False)


Event = dict[str, Any]


def _said(text: object, limit: int) -> str:
    """Untrusted text from a host, sanitised, on one line, its end kept when too long."""
    shown = " ".join(one_line(str(text or "")).split())
    return shown if len(shown) <= limit else "..." + shown[-limit:]


def interpreter_fix(ev: Event) -> str | None:
    """The fix a failed task implies when its module never ran: its output was not Ansible's
    JSON (module_stderr or module_stdout), so the Python meant to run it is broken."""
    if ev.get("module_stderr") is None and ev.get("module_stdout") is None:
        return None
    found = ev.get("interpreter")
    if found:
        what = f"the host's Python {_said(found, 200)}, which Ansible's interpreter discovery chose"
        if "/shims/" in str(found):
            what += " (a version manager's shim)"
    else:
        what = ("the host's Python for Ansible's modules (ansible_python_interpreter, else "
                f"abibench's {DEFAULT_INTERPRETER})")
    return (f"{what}, does not run Ansible's modules: set ansible_python_interpreter in the "
            f"inventory to a working Python 3 on that host (Debian's: {DEFAULT_INTERPRETER})")


def failure_reason(ev: Event) -> str:
    """Why a task failed or a host was unreachable, one sanitised line: the fix it implies
    first (when there is one), then Ansible's message, then what the module or command said
    on stderr (or stdout, when that is all a module printed), each shortened."""
    parts = [interpreter_fix(ev) or "", _said(ev.get("msg"), 300)]
    if ev.get("event") != UNREACHABLE:  # an unreachable host's message is ssh's stderr already
        for key, label in (("module_stderr", "its stderr"), ("stderr_tail", "stderr"),
                           ("module_stdout", "its stdout")):
            if ev.get(key):
                parts.append(f"{label}: {_said(ev.get(key), 300)}")
                break
    return "; ".join(p for p in parts if p)


def run_playbook(inventory: Path, extra_vars: Mapping[str, Any], work: Path, forks: int,
                 on_event: Callable[[Event], None], limit: str | None = None,
                 playbook: Path = PLAYBOOK) -> PlaybookResult:
    """ansible-playbook on the inventory; every event of our callback goes to on_event as it
    happens; returns the outcome of every host that took part."""
    cfg = write_config(work, forks)
    log = work / "ansible.log"
    vars_file = work / "vars.json"
    vars_file.write_text(json.dumps(dict(extra_vars)))
    argv = [tool("ansible-playbook"), "-i", str(inventory), str(playbook), "-e",
            f"@{vars_file}", "-f", str(forks)]
    if limit is not None:
        argv += ["--limit", limit]
    read_end, write_end = os.pipe()
    env = _environment(cfg)
    env["ABIBENCH_FLEET_EVENTS_FD"] = str(write_end)
    hosts: dict[str, HostOutcome] = {}

    def record(ev: Event) -> None:
        host = hosts.setdefault(str(ev.get("host")), HostOutcome())
        kind = ev.get("event")
        if kind == "recap":
            host.recap = {k: v for k, v in ev.items() if isinstance(v, int)}
        elif kind in (FAILED, UNREACHABLE) and host.status == OK:
            host.status = str(kind)
            host.task = ev.get("task")
            host.reason = failure_reason(ev) or None
        on_event(ev)

    def read() -> None:
        with os.fdopen(read_end, "r", errors="replace") as events:
            for line in events:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if isinstance(ev, dict):
                    record(ev)

    reader = threading.Thread(target=read, name="ansible-events", daemon=True)
    reader.start()
    try:
        with log.open("ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=env, cwd=work,
                                    pass_fds=(write_end,))
            os.close(write_end)
            write_end = -1
            try:
                code = proc.wait()
            except BaseException:
                # Ctrl-C reached ansible-playbook too (same process group); let it stop its
                # workers, then make sure it is gone.
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                raise
    finally:
        if write_end >= 0:
            os.close(write_end)
        # The ssh masters first: one that kept the pipe open would hold the reader's end-of-file.
        _close_control_masters(work)
        reader.join(timeout=30)
    return PlaybookResult(code, hosts, log)
