"""The program measured is the program built, for every sample (docs/reliability.md).

Fault injection through the real pipeline (measure_suite, the C launcher, a SQLite store): at
a generated sample k, the program is swapped for another (a different ELF, a same-size binary
that differs in one byte, a touched but identical copy), and swapped back a generated number of
samples later. Where it is swapped is generated too: the build cache (what the issue saw: every
sample was accepted) or the run's own pinned copy, the file that really runs.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.abi import parse_abi_list
from abibench.analyse.report import from_run
from abibench.records import Sample
from abibench.report.markdown import render
from abibench.run.schedule import Plan
from abibench.run.suite import Request, measure_suite
from abibench.store.sqlite import Store
from abibench.workloads.profile import load_workloads
from abibench.workspace import prefix, temp_root
from tests.processes import python_as_other_user

FIXTURES = Path(__file__).parents[1] / "fixtures"
_ids = itertools.count()

SWAPS = ("another ELF", "same size, one byte differs", "touched, identical")


def _profile(where: Path, wid: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "metric.c", where / "metric.c")
    path = where / f"{wid}.toml"
    path.write_text(
        f'id = "{wid}"\ntitle = "pinned"\nprimary = "value"\n'
        '[source]\nfiles = ["metric.c"]\nartifacts = ["metric"]\n'
        '[run]\ncommand = ["{bin}/metric", "0"]\ntimeout = "30s"\n'
        "[validate]\nstdout_match = '(?m)^checksum: (\\S+)$'\n"
        '[[metric]]\nname = "value"\nparse = { regex = \'(?m)^value: ([0-9.]+)$\' }\n'
        'unit = "units"\nbetter = "higher"\n')
    return path


def _other(program: Path, how: str) -> bytes | None:
    """The bytes the program is swapped for; None: the same bytes, only touched."""
    body = program.read_bytes()
    if how == "another ELF":
        return Path("/bin/true").read_bytes()
    if how == "same size, one byte differs":
        at = body.index(b"GCC: (")  # the .comment section: the program still runs
        return body[:at] + b"X" + body[at + 1:]
    return None


class Swapper:
    """Swaps one file for others' bytes and back, as another process would: a new file renamed
    over it (its directory made writable for the moment, as its owner can), or a touch."""

    def __init__(self, path: Path, how: str) -> None:
        self.path, self.how = path, how
        self.saved = path.with_name(path.name + ".saved")

    def _writable(self) -> int:
        mode = self.path.parent.stat().st_mode
        os.chmod(self.path.parent, 0o700)
        return mode

    def swap(self) -> None:
        mode = self._writable()
        other = _other(self.path, self.how)
        if other is None:
            st_ = self.path.stat()
            os.utime(self.path, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000_000))
        else:
            os.rename(self.path, self.saved)
            new = self.path.with_name(self.path.name + ".new")
            new.write_bytes(other)
            new.chmod(0o755)
            os.rename(new, self.path)
        os.chmod(self.path.parent, mode & 0o7777)

    def swap_back(self) -> None:
        if not self.saved.exists():
            return
        mode = self._writable()
        os.rename(self.saved, self.path)
        os.chmod(self.path.parent, mode & 0o7777)


def _pinned(wid: str, label: str) -> Path:
    """The run's own copy of a target's program (run/pinned.py), found as this process owns it."""
    (path,) = temp_root().glob(f"{prefix(wid)}*/{label}.program/metric")
    return path


def _cached(cache: Path, wid: str, abi: str) -> Path:
    (path,) = cache.glob(f"builds/{wid}/{abi}-*/bin/metric")
    return path


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(1, 3), back_after=st.integers(1, 3), how=st.sampled_from(SWAPS),
       in_cache=st.booleans())
def test_a_program_swapped_between_samples_k_and_k1_and_back_is_never_counted(
        tmp_path: Path, shared_cache: Path, k: int, back_after: int, how: str,
        in_cache: bool) -> None:
    n = next(_ids)
    wid = f"pinned{n}"
    prof = _profile(tmp_path / f"p{n}", wid)
    # A cache of its own when the cache is the file swapped: the shared one stays intact.
    cache = tmp_path / f"cache{n}" if in_cache else shared_cache
    db = Store(tmp_path / f"r{n}.sqlite")
    rounds = k + back_after + 1
    seen: list[Sample] = []
    swapper: list[Swapper] = []
    swapped_at: list[int] = []

    def on_sample(s: Sample) -> None:
        # Right after the x86_64 target's sample k, and back `back_after` samples later.
        seen.append(s)
        mine = [x for x in seen if x.target == "x86_64"]
        if s.target == "x86_64" and len(mine) == k and not swapper:
            path = _cached(cache, wid, "x86_64") if in_cache else _pinned(wid, "x86_64")
            swapper.append(Swapper(path, how))
            swapper[0].swap()
            swapped_at.append(len(seen))
        elif swapped_at and len(seen) == swapped_at[0] + back_after:
            swapper[0].swap_back()

    req = Request(workloads=load_workloads([str(prof)], None, {}),
                  abis=parse_abi_list("i386,x86_64"),
                  plan=Plan(min_rounds=1, fixed_rounds=rounds, warmup=0))
    result = measure_suite(req, db, cache, lambda _: None, on_sample)
    doc = db.load_run(result.run_id)
    ours = [s for s in doc.samples if s.target == "x86_64" and s.kind == "timed"]
    others = [s for s in doc.samples if s.target == "i386" and s.kind == "timed"]
    assert swapper, "the swap never happened"
    # The other target is untouched: every one of its samples counts.
    assert len(others) == rounds and all(s.counted for s in others)
    if in_cache:
        # The cache entry is not what runs: every sample measured the pinned, built program.
        assert len(ours) == rounds and all(s.counted for s in ours), \
            [(s.status, s.error) for s in ours]
        assert not doc.statuses
        return
    # The first k samples ran the built program; sample k+1 is the first after the swap: it
    # fails with the one line, and no sample of the target is measured after it.
    assert [s.counted for s in ours] == [True] * k + [False]
    line = ours[k].error or ""
    assert f"between samples {k} and {k + 1}" in line and "changed since it was built" in line
    assert "\n" not in line
    (status,) = doc.statuses
    assert status.target == "x86_64" and status.state == "failed"
    assert f"between samples {k} and {k + 1}" in (status.reason or "")
    # The report says why.
    shown = render(from_run(doc))
    assert f"between samples {k} and {k + 1}" in shown
    assert result.exit_code != 0


def test_the_pinned_copy_is_read_only_and_removed_with_the_run(
        tmp_path: Path, shared_cache: Path) -> None:
    wid = f"pinned{next(_ids)}"
    prof = _profile(tmp_path / "p", wid)
    db = Store(tmp_path / "r.sqlite")
    modes: list[tuple[int, int]] = []

    def on_sample(s: Sample) -> None:
        if not modes:
            p = _pinned(wid, s.target)
            modes.append((p.stat().st_mode & 0o777, p.parent.stat().st_mode & 0o777))

    req = Request(workloads=load_workloads([str(prof)], None, {}),
                  abis=parse_abi_list("x86_64"),
                  plan=Plan(min_rounds=1, fixed_rounds=1, warmup=0))
    result = measure_suite(req, db, shared_cache, lambda _: None, on_sample)
    assert result.exit_code == 0
    assert modes == [(0o555, 0o555)]
    assert not list(temp_root().glob(f"{prefix(wid)}*"))



REMOVE = """
import os, sys
from pathlib import Path
from abibench.workspace import remove_tree
top = Path(sys.argv[1]) / "run"
(top / "x86_64.program").mkdir(parents=True)
(top / "x86_64.program" / "metric").write_bytes(b"x")
os.chmod(top / "x86_64.program" / "metric", 0o555)
os.chmod(top / "x86_64.program", 0o555)
remove_tree(top)
print("gone" if not top.exists() else "left")
"""


def test_a_read_only_pinned_copy_is_removed_by_a_user_other_than_root() -> None:
    # Root deletes entries of a read-only directory anyway; another user cannot, unless the
    # directory is made writable again: workspace.remove_tree does, for the run's own tree.
    # Not pytest's tmp_path: its parents are closed to other users.
    with tempfile.TemporaryDirectory() as where:
        r = python_as_other_user(REMOVE, Path(where), where)
    if r is None:
        pytest.skip("running as another user needs root and util-linux")
    assert r.stdout.strip() == "gone", r.stderr[-2000:]
