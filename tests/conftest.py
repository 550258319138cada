"""Shared fixtures: the CLI in a subprocess, isolated data and caches, synthetic run documents.

Test modules never import each other; everything they share is a fixture here.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from abibench.paths import cache_dir
from abibench.records import Run, RunConfig, RunDoc, Sample
from abibench.run.launcher import launcher
from abibench.store.open import open_store
from abibench.store.sql import SqlStore

from . import drawing  # noqa: F401  (loads the gate's Hypothesis profile)
from .documents import (
    HOSTILE,
    HOSTILE_SHOWN,
    SAMPLE_DEFAULTS,
    partial_doc,
    rewrite_strings,
    strings_doc,
    synthetic_doc,
)
from .servers import PgCluster, SshFleet, pg_cluster, postgres_bindir, sshd_hosts
from .storetools import DbRows, Mounts, query_rows

# Re-exported: test modules and bench/ scripts import these from here.
__all__ = ["HOSTILE", "HOSTILE_SHOWN", "SAMPLE_DEFAULTS", "Mounts", "partial_doc", "query_rows",
           "rewrite_strings", "strings_doc", "synthetic_doc"]

TESTS = Path(__file__).parent

# CPU seconds per test (--cpu-durations, --cpu-json) and the recorded longest-first order;
# apt's package cache for the run where the system keeps none; the sweep of what killed test
# processes left.
pytest_plugins = ("tests.cputime", "tests.aptcache", "tests.owned")

Cli = Callable[..., subprocess.CompletedProcess[str]]


def pytest_configure(config: pytest.Config) -> None:
    # A shell without job control starts background commands with SIGINT ignored, and an
    # ignored signal is inherited through exec: the programs the Ctrl-C tests interrupt would
    # never see it. A handler (unlike SIG_IGN) is reset to the default in every child.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.addinivalue_line("markers", "needs_apt: uses apt, dpkg and the i386 architecture "
                            "(skipped where they are missing)")
    config.addinivalue_line("markers", "needs_setup(*packages, root=False): needs these of "
                            "setup.sh's Debian packages (all of them when none is named), and "
                            "root; skipped only where `bash setup.sh missing` names one")


# --------------------------------------------------------------------------- setup-dependent skips
#
# The one rule for every test that needs what setup.sh installs: it is skipped only where
# setup.sh itself says a package is missing (`bash setup.sh missing`: its own definition of
# present, a package another one provides included), and the skip names the packages. Where
# setup.sh has run, such a test runs; if it skips all the same, it fails (pytest_runtest_makereport).

SETUP_SH = TESTS.parent / "setup.sh"


@functools.cache
def setup_missing(packages: tuple[str, ...] = ()) -> tuple[str, ...]:
    """What `bash setup.sh missing [PACKAGES]` prints: of these packages (of all setup.sh
    installs when none are named), those that are not present here."""
    done = subprocess.run(["bash", str(SETUP_SH), "missing", *packages], capture_output=True,
                          text=True, check=False, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"bash setup.sh missing exited {done.returncode}: {done.stderr}")
    return tuple(done.stdout.split())


def setup_skip_reason(packages: tuple[str, ...] = (), root: bool = False) -> str | None:
    """Why a test that needs these packages (all of setup.sh's when none are named), and root
    when asked, cannot run here; None when it can."""
    if root and os.geteuid() != 0:
        return "needs root (it starts servers as root): run the tests as root"
    missing = setup_missing(packages)
    if missing:
        names = " ".join(missing)
        return f"not installed here: {names} (run bash setup.sh, or apt-get install {names})"
    return None


SetupMissing = Callable[..., tuple[str, ...]]
SetupSkipReason = Callable[..., "str | None"]


@pytest.fixture(scope="session")
def setup_answer() -> tuple[SetupMissing, SetupSkipReason]:
    """(setup_missing, setup_skip_reason): the one rule, for tests of the rule itself."""
    return setup_missing, setup_skip_reason


def _needs_setup(item: pytest.Item) -> tuple[tuple[str, ...], bool] | None:
    mark = item.get_closest_marker("needs_setup")
    if mark is None:
        return None
    return tuple(str(a) for a in mark.args), bool(mark.kwargs.get("root", False))


# What pytest says for a skip that gave no reason of its own.
_NAMELESS = re.compile(r"(Skipped: )?(unconditional skip|condition: .*|Skipped)?\s*")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report: pytest.TestReport = yield
    if not report.skipped or getattr(report, "wasxfail", None) is not None:
        return report
    why = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    needs = _needs_setup(item)
    if _NAMELESS.fullmatch(why):
        report.outcome = "failed"
        report.longrepr = f"a skip must name its cause and its fix: {why!r}"
    elif needs is not None and setup_skip_reason(*needs) is None:
        # Every package it needs is present and it may run: a skip here hides a broken test.
        report.outcome = "failed"
        report.longrepr = (f"skipped where setup.sh has run (`bash setup.sh missing` names "
                           f"none of its packages): {why}")
    return report


def _apt_problem() -> str | None:
    for tool in ("apt-cache", "apt-get", "dpkg"):
        if shutil.which(tool) is None:
            return f"{tool} not available"
    arches = subprocess.run(["dpkg", "--print-foreign-architectures"], capture_output=True,
                            text=True, check=False).stdout.split()
    if "i386" not in arches and os.uname().machine == "x86_64":
        return "dpkg has no i386 architecture (bash setup.sh adds it)"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    needs = _needs_setup(item)
    if needs is not None:
        reason = setup_skip_reason(*needs)
        if reason is not None:
            pytest.skip(reason)
    if item.get_closest_marker("needs_apt") is not None:
        problem = _apt_problem()
        if problem is not None:
            pytest.skip(problem)


# Session fixtures that hold state outside the test's own files (the fleet's hosts keep their
# work directories in abibench's cache, one per key, locked), or that cost more to make once per
# worker than their tests gain from running in parallel (the fault harness's reference run):
# every test that uses one runs on one worker, in turn. The groups are by module, so that the
# controller of pytest-xdist, which sees only test ids, can keep them together
# (pytest_xdist_make_scheduler below); tests/invariants/test_shared_state.py checks that every
# test using such a fixture is in its fixture's module group.
ONE_WORKER_FIXTURES = {"ssh_fleet": "fleet", "fleet_workdir": "fleet", "warmed": "faults"}
ONE_WORKER_MODULES = {"tests/fleet/test_fleet.py": "fleet", "tests/faults/test_faults.py": "faults"}


def one_worker_group(nodeid: str) -> str | None:
    """The group a test runs in (all of it on one worker), or None: anywhere."""
    return ONE_WORKER_MODULES.get(nodeid.split("::", 1)[0])


@pytest.fixture(scope="session")
def one_worker() -> tuple[dict[str, str], Callable[[str], str | None]]:
    """(ONE_WORKER_FIXTURES, one_worker_group), for the test of the rule."""
    return ONE_WORKER_FIXTURES, one_worker_group


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's load scheduling, but each group's tests as one unit, and the units in
    the recorded longest-first order. (Its own loadgroup mode reads xdist_group marks by
    renaming test ids, which pytest 9 no longer allows.)"""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    from .cputime import longest_first, recorded_order

    class Grouped(LoadScopeScheduling):  # type: ignore[misc]  # untyped base
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return one_worker_group(nodeid) or nodeid

        def _assign_work_unit(self, node: Any) -> None:
            # The first assignment sees the whole queue: longest first (tests/gate_order.json),
            # so the long tests do not start last and hold the gate while the others idle.
            if not self.ordered:
                self.ordered = True
                units = longest_first(list(self.workqueue.items()), recorded_order())
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return Grouped(config, log)


def isolation_modes() -> list[str]:
    out = ["bwrap"] if shutil.which("bwrap") else []
    if os.geteuid() == 0:
        out.append("chroot")
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # `isolation` parametrises a test over every way this host can run a sysroot program.
    if "isolation" in metafunc.fixturenames:
        metafunc.parametrize("isolation", isolation_modes())


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """Small programs and profiles written for the tests (tests/fixtures/)."""
    return TESTS / "fixtures"


@pytest.fixture(scope="session")
def c_program(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """tests/fixtures/NAME.c compiled for the host, once per session: c_program("escape")."""
    out = tmp_path_factory.mktemp("programs")
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            exe = out / name
            subprocess.run(["gcc", "-O2", "-o", str(exe), str(TESTS / "fixtures" / f"{name}.c")],
                           check=True)
            built[name] = exe
        return built[name]

    return get


@pytest.fixture(scope="session")
def sample_launcher(shared_cache: Path) -> Path:
    """The C sample launcher (native/launch.c), built once per session."""
    return launcher(shared_cache)


@pytest.fixture(scope="session")
def captured() -> Path:
    """Outputs captured from real programs on a Debian 12 host (tests/data/)."""
    return TESTS / "data"


def run_wide_dir(factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory shared by every worker of this test run (pytest-xdist's workers each have a
    base temp of their own, popen-gwN, under the run's), made empty at the run's start; without
    workers, the session's. Only for what abibench itself locks (locks.py): caches."""
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    where = base / name
    where.mkdir(exist_ok=True)
    return where


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build cache for the whole test run, every worker's: an artifact that several tests
    build is built once (its maker holds the entry's lock, obtain/build.py). Tests that need a
    cold cache make their own."""
    return run_wide_dir(tmp_path_factory, "cache")


@pytest.fixture(scope="session")
def debian_cache() -> Path:
    """Sysroots are content-keyed, so tests share abibench's own cache (no re-download)."""
    return Path(os.environ.get("ABIBENCH_TEST_DEBIAN_CACHE") or cache_dir())


# Which results database the command-line tests write: `sqlite` (the default file in each
# test's data directory) or `postgresql` (a new database on the session's throw-away cluster).
# The store's own tests run on both backends every time; this runs every other test that
# stores results on the other one too: ABIBENCH_TEST_DB_BACKEND=postgresql bash scripts/test.sh
TEST_BACKEND_ENV = "ABIBENCH_TEST_DB_BACKEND"


@pytest.fixture
def cli_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The results database the `cli` fixture writes (see TEST_BACKEND_ENV)."""
    backend = os.environ.get(TEST_BACKEND_ENV) or "sqlite"
    if backend == "sqlite":
        return str(tmp_path / "data" / "results.sqlite")
    if backend != "postgresql":
        pytest.fail(f"{TEST_BACKEND_ENV}={backend}: expected sqlite or postgresql")
    cluster: PgCluster = request.getfixturevalue("pg_server")
    return cluster.url(cluster.new_database())


@pytest.fixture
def cli_env(tmp_path: Path, shared_cache: Path, cli_db: str) -> dict[str, str]:
    env = dict(os.environ)
    env["ABIBENCH_DATA"] = str(tmp_path / "data")
    env["ABIBENCH_CACHE"] = str(shared_cache)
    env["CI"] = "true"
    if cli_db.startswith("postgresql://"):
        env["ABIBENCH_DB"] = cli_db
    return env


@pytest.fixture
def cli(cli_env: dict[str, str]) -> Cli:
    def run(*args: str, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "abibench", *args], capture_output=True,
                              text=True, env=env or cli_env, timeout=timeout, check=False)

    return run


@pytest.fixture(scope="session")
def db_rows() -> DbRows:
    """db_rows(db, query, *params): query_rows on any results database."""
    return query_rows


@pytest.fixture
def stored(cli_db: str) -> DbRows:
    """stored(query, *params): rows of the database the `cli` fixture writes, either backend."""
    return lambda query, *params: query_rows(cli_db, query, *params)


@pytest.fixture
def db_file(cli_env: dict[str, str]) -> Path:
    """The SQLite file the `cli` fixture writes by default (tests of SQLite itself)."""
    return Path(cli_env["ABIBENCH_DATA"]) / "results.sqlite"


@pytest.fixture(scope="session")
def make_doc() -> Callable[..., dict[str, Any]]:
    """A factory of synthetic run documents, shaped exactly like `abibench export` writes them."""
    return synthetic_doc


@pytest.fixture(scope="session")
def make_strings_doc() -> Callable[[Callable[[str], str]], dict[str, Any]]:
    """A factory of run documents whose every string is rewritten by a function."""
    return strings_doc


@pytest.fixture(scope="session")
def make_hostile_doc() -> Callable[[], dict[str, Any]]:
    """A factory of run documents whose every string attacks the terminal (see HOSTILE)."""
    return lambda: strings_doc(HOSTILE.format)


@pytest.fixture(scope="session")
def hostile_shown() -> str:
    """What HOSTILE.format(x) must look like on a terminal, as a format string."""
    return HOSTILE_SHOWN


@pytest.fixture(scope="session")
def run_doc() -> Callable[[dict[str, dict[str, Any]], list[dict[str, Any]]], RunDoc]:
    """A factory of typed run documents from partial workloads and samples."""
    return partial_doc


# --------------------------------------------------------------------------- the store's faults


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[Mounts]:
    """Mount tiny or read-only file systems (root only); all are unmounted when the test ends."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting file systems needs root and mount(8)")
    m = Mounts(tmp_path)
    try:
        yield m
    finally:
        m.undo()


Main = Callable[..., tuple[int, str, str]]


@pytest.fixture
def main_in_process(capsys: pytest.CaptureFixture[str]) -> Main:
    """`abibench ARGS...` in this process (a subprocess costs seconds of imports per call):
    returns (exit code, stdout, stderr)."""
    from abibench.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def check_error_line(code: int, err: str, expected: int) -> str:
    assert code == expected, f"exit {code}, expected {expected}: {err}"
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("abibench: error: "), err
    return lines[0]


@pytest.fixture(scope="session")
def error_line() -> Callable[[int, str, int], str]:
    """Check that a command failed with this exit code and exactly one `abibench: error:`
    line on stderr; returns that line."""
    return check_error_line


def stored_sample(run_id: str, **kw: Any) -> Sample:
    base: dict[str, Any] = dict(
        run_id=run_id, workload="w", target="i386", round=1, position=0, warmup=False,
        status="ok", exit_code=0, wall_s=1.5, user_s=1.0, sys_s=0.1, max_rss_kb=2048,
        stdout_digest="d" * 64, check="c", metrics={"rate": 3.0},
        started_at="2026-01-01T00:00:00+00:00")
    base.update(kw)
    return Sample(**base)


@pytest.fixture(scope="session")
def make_sample() -> Callable[..., Sample]:
    """A factory of samples for the store: make_sample(run_id, round=2, ...)."""
    return stored_sample


@pytest.fixture(scope="session")
def make_run() -> Callable[..., Run]:
    """A factory of `running` runs with an empty config: make_run(run_id, started=...)."""
    def run(run_id: str, started: str = "2026-01-01T00:00:00", status: str = "running") -> Run:
        return Run(run_id, started, None, status, "0", RunConfig({}))

    return run


# --------------------------------------------------------------------------- real servers


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgCluster]:
    """One throw-away PostgreSQL cluster for the whole session (tests/servers.py): each test
    that needs a database gets its own in it (`pg_url`)."""
    reason = setup_skip_reason(("postgresql",))
    if reason is not None and postgres_bindir() is None:  # ABIBENCH_PG_BINDIR: one elsewhere
        pytest.skip(reason)
    # fsync off: a test's data need not survive a power cut, and the suite is faster.
    with pg_cluster({"fsync": "off", "synchronous_commit": "off",
                     "full_page_writes": "off"}) as cluster:
        yield cluster


@pytest.fixture
def pg_url(pg_server: PgCluster) -> str:
    """The URL (password included: never print it) of a new empty database."""
    return pg_server.url(pg_server.new_database())


BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def db_ref(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new results database of each backend: a SQLite file, a PostgreSQL URL. A test that
    takes it runs once per backend."""
    if request.param == "sqlite":
        return str(tmp_path / "results.sqlite")
    cluster: PgCluster = request.getfixturevalue("pg_server")
    return cluster.url(cluster.new_database())


OpenDb = Callable[..., SqlStore]


@pytest.fixture
def open_db(db_ref: str) -> Iterator[OpenDb]:
    """open_db(readonly=False): the store at db_ref, closed when the test ends."""
    opened: list[SqlStore] = []

    def get(readonly: bool = False) -> SqlStore:
        store = open_store(db_ref, readonly=readonly)
        opened.append(store)
        return store

    yield get
    for store in opened:
        store.close()


@pytest.fixture(scope="session")
def ssh_fleet() -> Iterator[SshFleet]:
    """Two fleet "hosts": sshd on 127.0.0.2 and 127.0.0.3, free ports, own host keys, only the
    key generated for the tests accepted (tests/servers.py). A host that does not start or
    refuses the key fails the test with sshd's own words."""
    # The hosts are this machine, and each runs setup.sh: on a machine that lacks some of its
    # packages, that is an apt-get install of them, as root, by a test. Not done here: the
    # fleet needs every package of setup.sh (the tests that use it are marked so too).
    reason = setup_skip_reason(root=True)
    if reason is not None:
        pytest.skip(f"the fleet's hosts are this machine and run setup.sh: {reason}")
    with contextlib.ExitStack() as stack:
        try:
            fleet = stack.enter_context(sshd_hosts({"hostA": "127.0.0.2", "hostB": "127.0.0.3"}))
        except (RuntimeError, TimeoutError, OSError) as exc:
            pytest.fail(f"the fleet's sshd hosts: {exc}", pytrace=False)
        yield fleet


@pytest.fixture
def fleet_env(ssh_fleet: SshFleet, cli_env: dict[str, str], fleet_workdir: Path) -> dict[str, str]:
    """The environment tests/fleet/inventory.ini reads: each host's port, the test key, and the
    hosts' work directories (fleet_workdir, tests/owned.py)."""
    for name, host in ssh_fleet.hosts.items():
        host.start()  # a test that stopped one has it back
        # What a host stored belongs to the test that stored it: each test starts with none.
        # (The virtual environment setup.sh made there is kept: it is the costly part.)
        shutil.rmtree(fleet_workdir / name / "data", ignore_errors=True)
        (fleet_workdir / name).mkdir(parents=True, exist_ok=True)
    return {**cli_env, **ssh_fleet.env(), "ABIBENCH_TEST_WORKDIR": str(fleet_workdir)}


# --------------------------------------------------------------------------- counted runs


def captured_symbols(path: str) -> dict[int, str]:
    """The symbols of an object of a captured callgrind output: the test program itself, kept
    beside it in tests/data/callgrind/ (never the host's files: a test must not depend on
    which C library this machine has)."""
    from abibench.elf import function_entries

    kept = TESTS / "data" / "callgrind" / Path(path).name
    return function_entries(kept) if kept.is_file() and "." not in kept.name else {}


def captured_profile(name: str, abi: str, attempts: tuple[int, ...] | None = None,
                     simulation: str = "cache") -> Any:
    """The CounterProfile of a real callgrind output in tests/data/callgrind/ (NAME-ABI),
    as a counted run stores it; ``attempts`` default to two runs that agreed."""
    import gzip

    from abibench.run.counters import parse_cachegrind, profile_of

    text = gzip.decompress((TESTS / "data" / "callgrind" /
                            f"{name}-{abi}.callgrind.out.gz").read_bytes()).decode()
    parsed = parse_cachegrind(text, captured_symbols)
    ir = parsed.totals[parsed.events.index("Ir")]
    return profile_of(parsed, attempts or (ir, ir), simulation)


@pytest.fixture(scope="session")
def cachegrind_profile() -> Callable[..., Any]:
    """A factory: cachegrind_profile("ptrchase", "i386") -> its CounterProfile."""
    return captured_profile


def counted_doc(times: dict[str, list[float]], profiles: dict[str, Any],
                rss: dict[str, list[int]] | None = None,
                faults: dict[str, list[int]] | None = None, workload: str = "w",
                check: str | None = "same") -> RunDoc:
    """A typed run of one workload (primary: wall time, lower is better): timed samples with
    these times per target, round by round, and one counted sample per target holding its
    profile."""
    samples: list[dict[str, Any]] = []
    for target, walls in times.items():
        for rnd, wall in enumerate(walls, start=1):
            samples.append({"workload": workload, "target": target, "round": rnd,
                            "wall_s": wall, "user_s": wall, "check": check,
                            "max_rss_kb": (rss or {}).get(target, [1000] * len(walls))[rnd - 1],
                            "minflt": (faults or {}).get(target, [None] * len(walls))[rnd - 1]})
    for target, prof in profiles.items():
        samples.append({"workload": workload, "target": target, "round": len(
            next(iter(times.values()))) + 1, "kind": "counters", "check": check,
            "instructions": prof.totals[0], "counters": prof.to_dict()})
    return partial_doc({workload: {"primary": "wall", "targets": list(times)}}, samples)


@pytest.fixture(scope="session")
def make_counted_doc() -> Callable[..., RunDoc]:
    """A factory of run documents with timed and counted samples (see counted_doc)."""
    return counted_doc
