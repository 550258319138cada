"""The gate's own meter (tests/cputime.py): each test's CPU seconds, its fixtures' and its
reaped children's included, with and without pytest-xdist's workers; and the longest-first order
the scheduler takes from the committed record."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ..cputime import ORDER_ENV, ORDER_FILE, longest_first, recorded_order

REPO = Path(__file__).resolve().parents[2]

# Each busy loop runs until ITS OWN process has used the CPU seconds asked for, so what the
# meter must find does not depend on how loaded the machine is.
BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"
BWRAP = shutil.which("bwrap") or "bwrap"
TESTS = f'''
import subprocess, sys, time
import pytest

def burn_in_child(s):
    subprocess.run([sys.executable, "-c", {BURN!r}.format(s=s)], check=True)

@pytest.fixture
def dear_fixture():
    burn_in_child(0.2)
    yield
    burn_in_child(0.1)

def test_fixture_burns(dear_fixture):
    pass

def test_child_burns():
    burn_in_child(0.25)

def test_self_burns():
    exec({BURN!r}.format(s=0.15))

def test_sleeps():
    time.sleep(0.3)

def test_sandboxed_child_burns():
    # bwrap reaps its command in a PID namespace: getrusage never sees it, the cgroup does
    subprocess.run([{BWRAP!r}, "--unshare-all", "--die-with-parent", "--dev-bind", "/", "/",
                    sys.executable, "-c", {BURN!r}.format(s=0.25)], check=True)
'''


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "1"]], ids=["inline", "xdist"])
def test_each_test_is_charged_its_own_its_fixtures_and_its_childrens_cpu(
        tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "test_burn.py").write_text(TESTS)
    out = tmp_path / "cpu.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.cputime", "-p", "no:cacheprovider",
         *workers, "--rootdir", str(tmp_path), "-c", "/dev/null", "--cpu-durations=0",
         "--cpu-json", str(out), str(tmp_path / "test_burn.py")],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "CPU seconds per test (5 tests" in done.stdout, done.stdout[-2000:]
    rows = {k.rsplit("::", 1)[1]: v for k, v in json.loads(out.read_text()).items()}
    cpu = {name: row[0] for name, row in rows.items()}
    # at least what was burnt; at most that plus a second of the harness's own work
    burns = [("test_fixture_burns", 0.3), ("test_child_burns", 0.25), ("test_self_burns", 0.15)]
    if shutil.which("bwrap") and os.geteuid() == 0 and "cgroup2" in Path(
            "/proc/self/mounts").read_text():  # where the meter has a cgroup of its own
        burns.append(("test_sandboxed_child_burns", 0.25))
    for name, burnt in burns:
        assert burnt <= cpu[name] < burnt + 1.0, (name, rows)
    assert cpu["test_sleeps"] < 0.2 and rows["test_sleeps"][1] >= 0.3, rows


units = st.lists(st.tuples(st.integers(0, 30), st.integers(1, 3)), max_size=12,
                 unique_by=lambda u: u[0])
costs = st.dictionaries(st.integers(0, 90).map(lambda i: f"t{i}"),
                        st.floats(0.01, 1000, allow_nan=False), max_size=40)


@settings(max_examples=60, deadline=None)
@given(units, costs)
def test_longest_first_is_a_permutation_dearest_first_unrecorded_last_in_order(
        spec: list[tuple[int, int]], cost: dict[str, float]) -> None:
    queue = [(f"u{u}", [f"t{3 * u + i}" for i in range(n)]) for u, n in spec]
    ordered = longest_first(queue, cost)
    assert sorted(ordered) == sorted(queue)
    sums = [sum(cost.get(t, 0.0) for t in tests) for _, tests in ordered]
    assert sums == sorted(sums, reverse=True)
    unrecorded = [u for u in queue if not any(t in cost for t in u[1])]
    assert [u for u in ordered if u in unrecorded] == unrecorded
    assert ordered[len(ordered) - len(unrecorded):] == unrecorded


def test_the_committed_record_is_read_and_a_bad_one_orders_nothing(tmp_path: Path) -> None:
    committed = json.loads(ORDER_FILE.read_text())
    assert committed and recorded_order(ORDER_FILE) == committed
    assert all(isinstance(v, float) and v > 0 for v in committed.values())
    for text in ("not json", "[1, 2]", '{"a": "b"}', '{"a": [1, 2]}', '{"a": NaN}',
                 '{"a": true}', '{"a": Infinity}'):
        (tmp_path / "o.json").write_text(text)
        assert recorded_order(tmp_path / "o.json") == {}, text
    (tmp_path / "o.json").write_text('{"a": 2, "b": "x", "c": 1.5}')
    assert recorded_order(tmp_path / "o.json") == {"a": 2.0, "c": 1.5}
    assert recorded_order(tmp_path / "missing.json") == {}


def test_the_gate_runs_the_recorded_longest_tests_first_and_the_rest_in_collection_order(
        tmp_path: Path) -> None:
    """The scheduler itself (tests/conftest.py): one worker runs the units in queue order."""
    target = "tests/test_text.py"
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         target], cwd=REPO, capture_output=True, text=True, timeout=300, check=False).stdout
    ids = [ln for ln in listed.splitlines() if ln.startswith(target + "::")]
    assert len(ids) >= 4, listed
    first, second = ids[-1], ids[len(ids) // 2]
    order = tmp_path / "order.json"
    order.write_text(json.dumps({first: 30.0, second: 7.5, "tests/gone.py::test_x": 99.0}))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-n", "1", "--dist", "load", "-p",
         "no:cacheprovider", target], cwd=REPO, capture_output=True, text=True, timeout=600,
        check=False, env={**os.environ, ORDER_ENV: str(order)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ran = [ln.split(" PASSED ", 1)[1].strip() for ln in done.stdout.splitlines()
           if " PASSED " in ln and ln.startswith("[gw0]")]
    assert ran == [first, second, *(i for i in ids if i not in (first, second))], ran
