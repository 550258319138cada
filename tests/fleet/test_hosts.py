"""The fleet's test hosts (tests/servers.py) accept the test key from any temporary directory.

sshd's StrictModes refuses a key file on a path that anyone but root can write to, up to /; the
hosts' trees once lived under /tmp (mode 1777), and every login was refused. The directories
generated here are nested, owned by root or by another user, with every mode from private to
world-writable and names that need quoting: the hosts start and accept the key in each, or the
test fails with sshd's own words."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..servers import sshd_hosts

MODES = (0o700, 0o711, 0o755, 0o775, 0o777, 0o1777, 0o2775)
# Characters a directory name may carry that sshd_config or a command line could misread.
NAME = st.text(alphabet="abc-_. %'\"\\$#", min_size=1, max_size=8).filter(
    lambda n: n not in (".", ".."))


def _owners() -> list[int]:
    try:
        return [0, pwd.getpwnam("nobody").pw_uid]
    except KeyError:
        return [0]


LEVEL = st.tuples(NAME, st.sampled_from(MODES), st.sampled_from(_owners()))


@pytest.mark.needs_setup("openssh-server", "openssh-client", root=True)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(levels=st.lists(LEVEL, min_size=1, max_size=3))
def test_the_hosts_accept_the_key_from_any_temporary_directory(
        tmp_path: Path, levels: list[tuple[str, int, int]]) -> None:
    parent = Path(tmp_path)
    os.chmod(parent, 0o777)  # the test's own directory world-writable too, like /tmp
    for name, mode, owner in levels:
        parent = parent / name
        parent.mkdir(exist_ok=True)
        os.chown(parent, owner, owner)
        os.chmod(parent, mode)
    # sshd_hosts logs in with the key before it yields: a refusal raises with sshd's log line.
    with sshd_hosts({"hostA": "127.0.0.2"}, parent=parent) as fleet:
        assert fleet.root.parent == parent
        assert fleet.hosts["hostA"].proc is not None


@pytest.mark.needs_setup("openssh-server", "openssh-client", root=True)
def test_a_host_that_refuses_the_key_fails_with_sshds_own_words(tmp_path: Path) -> None:
    with sshd_hosts({"hostA": "127.0.0.2"}, parent=tmp_path) as fleet:
        host = fleet.hosts["hostA"]
        stranger = tmp_path / "stranger"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)],
                       check=True)
        host.stop()
        host.key = stranger
        with pytest.raises(RuntimeError) as refused:
            host.start()
        said = str(refused.value)
        assert "refused the test key" in said and "Permission denied (publickey)" in said
        assert "sshd said" in said and "Failed publickey for root" in said, said
        host.key = fleet.key  # the hosts are stopped by PID on the way out, as always
