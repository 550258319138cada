"""abibench fleet for real: two sshd "hosts" on 127.0.0.2 and 127.0.0.3, Ansible, a throw-away
PostgreSQL cluster (tests/servers.py, fixtures in tests/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import psycopg
import pytest

from ..servers import PgCluster, SshFleet

REPO = Path(__file__).resolve().parents[2]
INVENTORY = REPO / "tests" / "fleet" / "inventory.ini"
# Small enough for a test, both workloads measured for real on both ABIs.
# The hosts are this machine and run setup.sh: every package of it, and root (tests/conftest.py).
NEEDS_FLEET = pytest.mark.needs_setup(root=True)
SMALL = ["--workload", "ptrtree", "--workload", "nbody", "--abi", "i386,x86_64", "--rounds", "3",
         "--set", "nodes=20000", "--set", "steps=100000"]


def _abibench(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abibench", *args], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=1200, check=False)


def _table(stdout: str) -> dict[str, list[str]]:
    """The per-host summary rows: host -> its columns."""
    rows = {}
    for line in stdout.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[0] in ("hostA", "hostB") and \
                cols[1] in ("ok", "failed", "unreachable", "not"):
            rows[cols[0]] = cols
    return rows


def _hosts_run_this_code(workdir: Path) -> None:
    """The hosts' environments are kept between test runs and checkouts (tests/owned.py), so a
    kept one must run the sources this run pushed: its install is editable, pointing into the
    host's src/, and that holds this checkout's package, file for file."""
    ours = {p.relative_to(REPO / "src"): p.read_bytes()
            for p in (REPO / "src" / "abibench").rglob("*.py")}
    for host in ("hostA", "hostB"):
        src = workdir / host / "src" / "src"
        found = subprocess.run([str(workdir / host / "venv" / "bin" / "python"), "-c",
                                "import abibench; print(abibench.__file__)"],
                               capture_output=True, text=True, check=True, timeout=60)
        assert Path(found.stdout.strip()).is_relative_to(src), found.stdout
        theirs = {p.relative_to(src): p.read_bytes() for p in (src / "abibench").rglob("*.py")}
        assert theirs == ours, host


@NEEDS_FLEET
def test_fleet_run_into_postgresql(fleet_env: dict[str, str], pg_server: PgCluster,
                                   tmp_path: Path) -> None:
    url = pg_server.url(pg_server.new_database("fleet"))
    html = tmp_path / "fleet.html"
    t0 = time.monotonic()
    r = _abibench(fleet_env, "--db", url, "fleet", "run", str(INVENTORY), *SMALL,
                  "--html", str(html))
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = _table(r.stdout)
    assert rows["hostA"][1] == rows["hostB"][1] == "ok", r.stdout
    assert "written straight into the shared database" in r.stdout
    # Live progress per host, on stderr as it happens.
    for host in ("hostA", "hostB"):
        assert f"[{host}] Measure (abibench run) ..." in r.stderr
    assert pg_server.password not in r.stdout + r.stderr
    # Both runs are in PostgreSQL, every sample of them (2 workloads x 2 ABIs x (3 + 1 warm-up)).
    with psycopg.connect(url) as db:
        stored = db.execute("SELECT r.host_json, COUNT(s.id) FROM runs r JOIN samples s ON "
                            "s.run_id = r.id GROUP BY r.id, r.host_json").fetchall()
    assert sorted((json.loads(h)["label"], n) for h, n in stored) == [("hostA", 16), ("hostB", 16)]
    assert html.is_file() and "hostA k" in html.read_text() and "hostB k" in html.read_text()
    # `compare` alone: every host of the last fleet, side by side.
    c = _abibench(fleet_env, "--db", url, "compare")
    assert c.returncode == 0, c.stderr
    # One table row names every host's every target (the legend above it names each once).
    labels = ("hostA k64 i386", "hostA k64 x86_64", "hostB k64 i386", "hostB k64 x86_64")
    assert any(all(x in line for x in labels) for line in c.stdout.splitlines()), c.stdout
    assert all(f"  {x} = " in c.stdout for x in labels), c.stdout
    _hosts_run_this_code(Path(fleet_env["ABIBENCH_TEST_WORKDIR"]))
    print(f"fleet wall time (2 hosts, parallel): {wall:.1f}s")


@NEEDS_FLEET
def test_unreachable_host_is_reported_and_the_other_completes(
        fleet_env: dict[str, str], ssh_fleet: SshFleet, tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    # The first host of the inventory is down, and hosts go one at a time: the second still runs.
    ssh_fleet.hosts["hostA"].stop()
    r = _abibench(fleet_env, "--db", str(db), "fleet", "run", str(INVENTORY), *SMALL, "--serial")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    rows = _table(r.stdout)
    assert rows["hostA"][1] == "unreachable" and rows["hostB"][1] == "ok", r.stdout
    line = next(x for x in r.stdout.splitlines() if x.split()[:2] == ["hostA", "unreachable"])
    assert "127.0.0.2" in line and "Work directory" in line  # the reason, and where
    assert "fetched and imported" in r.stdout
    assert "abibench: error: fleet" in r.stderr and "hostA unreachable" in r.stderr
    listed = _abibench(fleet_env, "--db", str(db), "runs", "--json")
    runs = json.loads(listed.stdout)
    assert [(x["status"], x["samples"]) for x in runs] == [("complete", 16)]


def test_the_fleets_own_options_stay_here() -> None:
    """What each host's `abibench run` gets: the run options as typed, without the inventory,
    the fleet's own options and --db (each host is given its own)."""
    from abibench.cli import fleet_run_args

    assert fleet_run_args(["inv.yml", "--workload", "ptrtree", "--db", "postgresql://u@h/d",
                           "--rounds", "3", "--serial", "--forks=2", "--html", "f.html",
                           "--db=x.sqlite", "--set", "nodes=1", "nbody"]) == \
        ["--workload", "ptrtree", "--rounds", "3", "--set", "nodes=1", "nbody"]


def test_inventories_in_ansibles_own_formats(tmp_path: Path) -> None:
    """INI and YAML, groups and children, read by ansible-inventory itself: every host once,
    in the inventory's order."""
    from abibench.errors import UsageError
    from abibench.fleet.ansible import list_hosts

    yaml = tmp_path / "hosts.yml"
    yaml.write_text("all:\n  children:\n    x86:\n      hosts:\n        amd64-box:\n"
                    "          ansible_host: 127.0.0.2\n        i386-box:\n    boards:\n"
                    "      hosts:\n        pi4:\n          ansible_user: pi\n        amd64-box:\n")
    ini = tmp_path / "hosts.ini"
    ini.write_text("[boards]\npi3 ansible_host=10.0.0.3\npi4\n\n[x86]\nbox\n")
    for inventory, hosts in ((yaml, ["amd64-box", "i386-box", "pi4"]),
                             (ini, ["pi3", "pi4", "box"])):
        work = tmp_path / inventory.suffix.lstrip(".")
        work.mkdir()
        assert list_hosts(inventory, work) == hosts
    empty = tmp_path / "empty.ini"
    empty.write_text("[nobody]\n")
    with pytest.raises(UsageError, match="has no hosts"):
        list_hosts(empty, tmp_path)


@NEEDS_FLEET
def test_a_host_whose_workload_fails_is_reported_and_the_other_completes(
        fleet_env: dict[str, str], tmp_path: Path) -> None:
    """hostB is given a parameter its workload refuses (a per-host option of the inventory);
    both hosts run at once, hostA finishes, hostB's failure is reported with abibench's own
    message, and what hostB stored is fetched all the same. The other workload is a profile
    of this checkout, given by a relative path: it travels to the hosts with its sources."""
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(INVENTORY.read_text().replace(
        "hostB ansible_host=127.0.0.3", 'hostB abibench_host_run_args=["--set","steps=-1"] '
        "ansible_host=127.0.0.3"))
    db = tmp_path / "results.sqlite"
    r = _abibench(fleet_env, "--db", str(db), "fleet", "run", str(inventory),
                  "tests/fixtures/spin.toml", "--workload", "nbody", "--abi", "x86_64",
                  "--rounds", "1", "--set", "steps=100000", "--set", "millions=1")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    rows = _table(r.stdout)
    assert rows["hostA"][1] == "ok" and rows["hostB"][1] == "failed", r.stdout
    line = next(x for x in r.stdout.splitlines() if x.split()[:2] == ["hostB", "failed"])
    assert "at 'Workloads'" in line and "--steps needs an integer" in line, line
    assert "hostB failed" in r.stderr
    listed = json.loads(_abibench(fleet_env, "--db", str(db), "runs", "--json").stdout)
    statuses = {}
    for run in listed:
        doc = json.loads(_abibench(fleet_env, "--db", str(db), "export", run["id"]).stdout)
        statuses[doc["host"]["label"]] = {(s["workload"], s["status"]) for s in doc["samples"]}
    assert statuses == {"hostA": {("nbody", "ok"), ("spin", "ok")},
                        "hostB": {("nbody", "failed"), ("spin", "ok")}}


def test_profiles_given_as_paths_travel_with_their_directories(tmp_path: Path) -> None:
    from abibench.errors import UsageError
    from abibench.fleet.profiles import MAX_FILES, PLACEHOLDER, ship_profiles

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "a.toml").write_text("id = 'a'\n")
    (mine / "b.toml").write_text("id = 'b'\n")
    (mine / "a.c").write_text("int main(void) { return 0; }\n")
    shipped = ship_profiles(
        ["ptrtree", str(mine / "a.toml"), "tests/fixtures/spin.toml", str(mine / "b.toml")],
        ["--workload", str(mine / "a.toml"), "tests/fixtures/spin.toml",
         f"--workload={mine / 'b.toml'}", "--rounds", "3", "--workload", "ptrtree"],
        tmp_path / "p.tar.gz")
    assert shipped.run_args == [
        "--workload", f"{PLACEHOLDER}/0/a.toml", f"{PLACEHOLDER}/1/spin.toml",
        f"--workload={PLACEHOLDER}/0/b.toml", "--rounds", "3", "--workload", "ptrtree"]
    assert shipped.archive is not None
    with tarfile.open(shipped.archive) as tar:
        names = set(tar.getnames())
    assert {"0/a.toml", "0/b.toml", "0/a.c", "1/spin.toml", "1/spin.c"} <= names
    assert ship_profiles(["ptrtree"], ["ptrtree"], tmp_path / "none.tar.gz").archive is None
    crowded = tmp_path / "crowded"
    crowded.mkdir()
    for i in range(MAX_FILES + 1):
        (crowded / f"f{i}").touch()
    with pytest.raises(UsageError, match="a directory of their own"):
        ship_profiles([str(crowded / "x.toml")], [], tmp_path / "c.tar.gz")
