"""Untrusted work is bounded (docs/reliability.md): a profile's patterns run in linear time
(RE2), a file a profile or a program names is read only when it is a regular file and never
past a limit, and a sample whose program was stopped is stored but never counted.

The patterns and file kinds are generated (Hypothesis); the stop is a real SIGSTOP/SIGTSTP
sent to a real program in the middle of its sample.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import stat
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.abi import parse_abi_list
from abibench.analyse.report import from_run
from abibench.errors import ProfileError, UsageError
from abibench.files import NotRegular, TooLarge
from abibench.hashing import sha256_regular
from abibench.report.markdown import render
from abibench.run.launcher import RawResult, run_sample
from abibench.run.samples import VALIDATE_LIMIT, ParseError, check_value, parse_metrics
from abibench.run.schedule import Plan
from abibench.run.suite import Request, measure_suite
from abibench.store.sqlite import Store
from abibench.workloads.pattern import Pattern
from abibench.workloads.profile import load_profile, load_workloads

FIXTURES = Path(__file__).parents[1] / "fixtures"
_ids = itertools.count()
SLOW_OK = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# ---------------------------------------------------------------------------- patterns

# Patterns a backtracking engine takes exponential (or high polynomial) time on.
CLASSIC = ("(a+)+$", "(a|aa)*b", "(a*)*b", "((a+)+)+c", "(a|a)*$", "(x+x+)+y", "(.*a){12}",
           r"^(\w+\s?)*$", "(a?){25}a{25}", "((?:a|b|ab)*)c")
ATOMS = st.sampled_from(["a", "b", ".", "[ab]", r"\w", "a?", "(?:a|aa)", "(?:ab|a)"])


def _quantified(inner: str) -> st.SearchStrategy[str]:
    return st.sampled_from(["*", "+", "?", "{2,}", "{1,4}"]).map(lambda q: f"(?:{inner}){q}")


NESTED = st.recursive(
    ATOMS,
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map("".join),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")"),
        inner.flatmap(_quantified)),
    max_leaves=10)
PATTERNS = st.one_of(
    st.sampled_from(CLASSIC),
    st.tuples(NESTED, st.sampled_from(["$", "b", "c", "!", ""])).map(lambda t: f"({t[0]}){t[1]}"))
# Output built to make a backtracking engine try every way to split it, then fail at the end.
ADVERSARIAL = st.tuples(st.sampled_from(["a", "ab", "aab", "x", "a "]),
                        st.integers(2_000, 30_000),
                        st.sampled_from(["", "!", "c", "\n", "b"])).map(
    lambda t: t[0] * (t[1] // len(t[0])) + t[2])
# What RE2 cannot do in linear time, so it refuses: backreferences and lookaround.
REFUSED = st.tuples(st.sampled_from([r"(a)\1", "(?=a)(a)", "(?<=a)(b)", "(?P<x>a)(?P=x)",
                                     "(a)(?!b)", "(?<!a)(b)", r"(a+)\1+"]),
                    st.sampled_from(["", "x", "[ab]*", "^"])).map(lambda t: t[1] + t[0])


def _metric_profile(where: Path, pattern: str, key: str = "metric") -> Path:
    wid = f"rx{next(_ids)}"
    path = where / f"{wid}.toml"
    parse = f"parse = {{ regex = '{pattern}' }}" if key == "metric" else \
        "parse = { regex = 'value: ([0-9]+)' }"
    validate = f"[validate]\nstdout_match = '{pattern}'\n" if key == "stdout_match" else ""
    path.write_text(f'id = "{wid}"\ntitle = "patterns"\nprimary = "value"\n'
                    '[source]\nfiles = ["metric.c"]\nartifacts = ["metric"]\n'
                    '[run]\ncommand = ["{bin}/metric", "0"]\ntimeout = "30s"\n'
                    f'{validate}[[metric]]\nname = "value"\n{parse}\n'
                    'unit = "units"\nbetter = "higher"\n')
    return path


@pytest.fixture
def pattern_dir(tmp_path: Path) -> Path:
    shutil.copy(FIXTURES / "metric.c", tmp_path / "metric.c")
    return tmp_path


@settings(SLOW_OK, max_examples=60)
@given(pattern=PATTERNS, output=ADVERSARIAL)
def test_every_profile_pattern_runs_in_linear_time_on_adversarial_output(
        pattern_dir: Path, pattern: str, output: str) -> None:
    try:
        wl = load_profile(_metric_profile(pattern_dir, pattern))
    except ProfileError as exc:  # too big for RE2's memory: refused at load, in one line
        assert "RE2" in str(exc) and "\n" not in str(exc)
        return
    rule = wl.metrics[0]
    # The one engine a profile's pattern ever meets: RE2, compiled at load.
    assert isinstance(rule.regex, Pattern) and rule.regex.engine == "re2"
    try:
        parse_metrics(wl.metrics, output)  # a backtracking engine would not return here
    except ParseError as exc:
        assert "\n" not in str(exc)


@settings(SLOW_OK, max_examples=20)
@given(pattern=REFUSED, key=st.sampled_from(["metric", "stdout_match"]))
def test_a_pattern_re2_cannot_run_in_linear_time_is_a_one_line_profile_error(
        pattern_dir: Path, pattern: str, key: str) -> None:
    path = _metric_profile(pattern_dir, pattern, key)
    with pytest.raises(ProfileError) as caught:
        load_profile(path)
    line = str(caught.value)
    assert line.startswith(f"{path}:") and line.split(":")[1].isdigit(), line
    assert "RE2" in line and "\n" not in line


# ---------------------------------------------------------------------------- files

KINDS = ("regular", "empty", "fifo", "link to a regular file", "link to /dev/zero", "directory",
         "sparse 20 GB", "character device", "socket")


def _make(kind: str, path: Path) -> None:
    """A file of the kind at path, as a program or a profile's author could leave it."""
    if kind == "regular":
        path.write_bytes(b"output\n" * 100)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link to a regular file":
        target = path.with_name(path.name + ".real")
        target.write_bytes(b"x")
        path.symlink_to(target)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "sparse 20 GB":
        with path.open("wb") as fh:
            fh.truncate(20 << 30)
    elif kind == "character device":
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's numbers
    elif kind == "socket":
        import socket
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()


def _raw() -> RawResult:
    return RawResult(status="exited", exit_code=0, signal=0, wall_s=0.1, user_s=0.1, sys_s=0.0,
                     max_rss_kb=1, minflt=0, majflt=0, errno=0, stdout_digest="0" * 64,
                     stdout="value: 1\n", stderr_tail="")


def _usable(kind: str) -> bool:
    return kind != "character device" or os.geteuid() == 0


@settings(SLOW_OK, max_examples=30)
@given(kind=st.sampled_from(KINDS).filter(_usable), limit=st.sampled_from([0, 1, 700, 4096]))
def test_a_validate_file_is_hashed_only_when_regular_and_within_the_limit(
        pattern_dir: Path, kind: str, limit: int) -> None:
    wl = load_profile(_metric_profile(pattern_dir, "value: ([0-9]+)"))
    work = pattern_dir / f"work{next(_ids)}"
    work.mkdir()
    out = work / "out.bin"
    _make(kind, out)
    if kind in ("regular", "empty"):
        # Bounded by its own limit: never more than `limit` bytes read, else TooLarge.
        size = out.stat().st_size
        if size > limit:
            with pytest.raises(TooLarge):
                sha256_regular(out, limit)
        else:
            assert len(sha256_regular(out, limit)) == 64
        assert check_value(wl, _raw(), [out]) is not None
        return
    # Anything else fails the sample with one line, at once (a FIFO never blocks the run).
    with pytest.raises(ParseError) as caught:
        check_value(wl, _raw(), [out])
    line = str(caught.value)
    assert "\n" not in line and str(out) in line
    if kind == "sparse 20 GB":
        assert f"over the {VALIDATE_LIMIT >> 20} MiB" in line
    else:
        assert "regular file" in line


@settings(SLOW_OK, max_examples=16)
@given(kind=st.sampled_from(KINDS).filter(_usable))
def test_stdin_is_only_ever_a_regular_file(pattern_dir: Path, sample_launcher: Path,
                                           kind: str) -> None:
    where = pattern_dir / f"in{next(_ids)}"
    where.mkdir()
    stdin = where / "stdin"
    _make(kind, stdin)
    head = shutil.which("head")
    assert head is not None
    run = [head, "-c", "16"]
    if kind in ("regular", "empty", "sparse 20 GB"):
        # A regular file of any size: the program reads what it reads, within its timeout.
        raw = run_sample(run, cwd=where, env={}, timeout_s=30, launch=sample_launcher,
                         stdin=stdin)
        assert raw.ok
        return
    # Refused right before it is opened, without waiting for a FIFO's writer.
    with pytest.raises(UsageError) as caught:
        run_sample(run, cwd=where, env={}, timeout_s=30, launch=sample_launcher, stdin=stdin)
    assert "regular file" in str(caught.value) and "\n" not in str(caught.value)
    if kind in ("fifo", "directory", "character device", "link to /dev/zero", "socket"):
        # And where the profile names a file already there, at load, as file:line.
        prof = pattern_dir / f"stdin{next(_ids)}.toml"
        text = _metric_profile(pattern_dir, "value: ([0-9]+)").read_text()
        prof.write_text(text.replace('timeout = "30s"',
                                     f'timeout = "30s"\nstdin = "{stdin.relative_to(pattern_dir)}"'))
        with pytest.raises(ProfileError) as at_load:
            load_profile(prof)
        assert str(at_load.value).startswith(f"{prof}:") and "regular file" in str(at_load.value)


def test_a_fifo_is_never_opened_for_reading_in_a_way_that_waits(tmp_path: Path) -> None:
    # The one opener (files.open_regular) refuses a FIFO without a writer at once.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular):
        sha256_regular(fifo, 10)


# ---------------------------------------------------------------------------- stops


def _stopper(pid_file: Path, go: Path, sig: int, done: list[str]) -> None:
    """The test's hand: once the program says it started, stop it, see it stopped, go on."""
    try:
        for _ in range(20_000):
            if pid_file.exists():
                break
            time.sleep(0.001)
        pid = int(pid_file.read_text())
        os.kill(pid, sig)
        for _ in range(20_000):  # until the kernel shows it stopped (state T)
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T":
                break
            time.sleep(0.001)
        os.kill(pid, signal.SIGCONT)
        done.append("stopped")
    finally:
        go.touch()


@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGTSTP], ids=["SIGSTOP", "SIGTSTP"])
def test_a_sample_stopped_while_it_ran_is_stored_but_not_counted(
        tmp_path: Path, shared_cache: Path, sig: int) -> None:
    shutil.copy(FIXTURES / "stopme.c", tmp_path / "stopme.c")
    pid_file, go = tmp_path / "pid", tmp_path / "go"
    wid = f"stopme{next(_ids)}"
    prof = tmp_path / f"{wid}.toml"
    prof.write_text(f'id = "{wid}"\ntitle = "stopped"\nprimary = "value"\n'
                    '[source]\nfiles = ["stopme.c"]\nartifacts = ["stopme"]\n'
                    f'[run]\ncommand = ["{{bin}}/stopme", "{pid_file}", "{go}"]\n'
                    'timeout = "60s"\n'
                    '[[metric]]\nname = "value"\nparse = { regex = \'value: ([0-9]+)\' }\n'
                    'unit = "units"\nbetter = "higher"\n')
    done: list[str] = []
    hand = threading.Thread(target=_stopper, args=(pid_file, go, sig, done), daemon=True)
    hand.start()
    db = Store(tmp_path / "r.sqlite")
    req = Request(workloads=load_workloads([str(prof)], None, {}),
                  abis=parse_abi_list("x86_64"), plan=Plan(min_rounds=1, fixed_rounds=2, warmup=0))
    result = measure_suite(req, db, shared_cache, lambda _: None)
    hand.join()
    assert done == ["stopped"]
    doc = db.load_run(result.run_id)
    first, second = sorted((s for s in doc.samples if s.kind == "timed"), key=lambda s: s.round)
    # Stored as measured, with the reason, and not counted; the next sample counts.
    assert first.status == "ok" and not first.counted
    assert first.discarded is not None and "stopped once" in first.discarded
    assert second.counted and second.discarded is None
    assert any("stopped (SIGSTOP or SIGTSTP)" in w.message for w in doc.warnings)
    assert "1 sample was stopped" in render(from_run(doc))  # the report says why
