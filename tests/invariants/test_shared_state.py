"""Tests that share state: every test's files, ports and caches are its own or locked.

The test suite runs in parallel (pytest-xdist, scripts/test.sh). What two workers can touch at
once is either theirs alone (tmp_path, a server's free port and temp dir) or a cache entry made
under its lock (abibench/locks.py: builds, Debian sources and sysroots, tools). These tests
generate contenders for entries and show that each entry is made by exactly one of them while
the others wait, that makers of different entries do not wait for each other, and that two
copies of each server fixture started at once share nothing.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.locks import lock_path, made_once

from ..processes import lock_waiters, must_happen
from ..servers import PgCluster, pg_cluster, sshd_hosts

# A contender: another process that wants the entry. It prints "found" when the entry was made
# by someone else while it waited, "made" when it made it itself.
CONTENDER = """
import sys
from pathlib import Path
from abibench.locks import made_once
entry = Path(sys.argv[1])
def make():
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text("made by a contender")
    return "made"
print(made_once(entry, lambda: "found" if entry.exists() else None, make))
"""


def _contender(entry: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CONTENDER, str(entry)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(waiting=st.integers(1, 3), others=st.integers(0, 2))
def test_each_entry_is_made_once_and_other_entries_do_not_wait(waiting: int, others: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        entry = Path(tmp) / "builds" / "w" / "i386-key"
        procs: list[subprocess.Popen[str]] = []

        def make() -> str:
            # While this maker holds the entry's lock: `waiting` contenders for the same entry
            # block on it, and contenders for `others` other entries make theirs meanwhile.
            procs.extend(_contender(entry) for _ in range(waiting))
            must_happen(lambda: lock_waiters(lock_path(entry)) == waiting,
                   f"{waiting} contenders blocked on {lock_path(entry).name}")
            for i in range(others):
                other = entry.with_name(f"x86_64-key{i}")
                done = subprocess.run([sys.executable, "-c", CONTENDER, str(other)],
                                      capture_output=True, text=True, timeout=120, check=False)
                assert done.stdout.split() == ["made"], done.stderr
            entry.parent.mkdir(parents=True, exist_ok=True)
            entry.write_text("made by the first")
            return "made"

        try:
            assert made_once(entry, lambda: "found" if entry.exists() else None, make) == "made"
            answers = [p.communicate(timeout=120) for p in procs]
        finally:
            for p in procs:
                p.kill()
                p.wait()
        assert [out.split() for out, _ in answers] == [["found"]] * waiting, answers
        assert entry.read_text() == "made by the first"


def test_a_failed_maker_leaves_the_entry_to_the_next_one() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        entry = Path(tmp) / "e"

        def fail() -> str:
            raise RuntimeError("the build failed")

        with pytest.raises(RuntimeError):
            made_once(entry, lambda: None, fail)
        done = subprocess.run([sys.executable, "-c", CONTENDER, str(entry)], capture_output=True,
                              text=True, timeout=120, check=False)
        assert done.stdout.split() == ["made"], done.stderr  # the lock was released


@pytest.mark.needs_setup("postgresql")
def test_two_postgresql_clusters_at_once_share_no_port_and_no_directory(
        pg_server: PgCluster) -> None:
    # Two workers' session fixtures, both running: each its own port, socket and databases.
    a = pg_server
    with pg_cluster() as b:
        assert (a.host, a.port) != (b.host, b.port)
        assert a.socket_dir != b.socket_dir and a.log.parent != b.log.parent
        mine, theirs = a.new_database(), b.new_database()
        for c, here, elsewhere in ((a, mine, theirs), (b, theirs, mine)):
            with c.admin() as con:
                found = {r[0] for r in con.execute("select datname from pg_database")}
            assert here in found and elsewhere not in found, (here, elsewhere, found)


@pytest.mark.needs_setup("openssh-server", "openssh-client", root=True)
def test_two_sshd_fleets_at_once_share_no_port_and_no_directory() -> None:
    # Both log in with their own key (sshd_hosts does, before it yields) while both run.
    with sshd_hosts({"h": "127.0.0.2"}) as one, sshd_hosts({"h": "127.0.0.2"}) as two:
        assert one.hosts["h"].port != two.hosts["h"].port
        assert one.key.parent != two.key.parent
        assert one.key.read_bytes() != two.key.read_bytes()


def test_tests_of_a_one_worker_fixture_are_grouped_onto_one_worker(
        request: pytest.FixtureRequest,
        one_worker: tuple[dict[str, str], Callable[[str], str | None]]) -> None:
    # Every collected test that uses such a fixture is in the fixture's group: a new test that
    # uses the fleet elsewhere fails here until its module joins the group.
    fixtures, group_of = one_worker
    users = 0
    for item in request.session.items:
        for fixture, group in fixtures.items():
            if fixture in getattr(item, "fixturenames", ()):
                users += 1
                assert group_of(item.nodeid) == group, (item.nodeid, fixture, group)
    assert users or len(request.session.items) < 100  # the whole suite has such tests
