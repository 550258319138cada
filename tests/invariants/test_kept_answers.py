"""A kept answer goes through kept.py: never read back stale, damaged or of the wrong shape, never
written half, made once by two makers at once, and a write that fails costs only a re-ask.

The family: "a kept answer read from a stale, damaged or wrong-shaped entry, or written half".
One generated test runs every cache that keeps an answer (the helper itself, dpkg's owner of a
file, a .deb's source and contents, a program's stripped size, an ELF file's header facts, apt's
closure of some packages)
through the same damage: whatever the entry holds instead of what was written (any bytes, any
JSON, the right key with a value of another shape, another key with the right value, no file
but a directory or a FIFO), the answer is the source's, and is kept again after.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import abibench
from abibench import elf, kept
from abibench.hashing import sha256_file
from abibench.locks import lock_path
from abibench.obtain import debian, ownlibs, resolve
from abibench.probe import dpkgowner

from ..obtain.test_debian_packages import captured

SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))


@dataclass
class Cache:
    """One cache of a kept answer, driven as its callers drive it."""

    ask: Callable[[], object]  # the answer, as a caller gets it
    shape: Callable[[object], bool]  # what its entries' values must look like
    reads: Callable[[], int]  # how many times its source was read so far
    entry: Callable[[], Path]  # where its answer is kept (after a first ask)


def _counting(target: object, name: str, counter: list[int]) -> mock._patch[object]:
    real = getattr(target, name)

    def counted(*args: object, **kwargs: object) -> object:
        counter[0] += 1
        return real(*args, **kwargs)

    return mock.patch.object(target, name, counted)


def _only(directory: Path) -> Path:
    (entry,) = (p for p in directory.iterdir() if p.suffix == ".json")
    return entry


@contextlib.contextmanager
def _helper(work: Path) -> Iterator[Cache]:
    count = [0]

    def read() -> list[str]:
        count[0] += 1
        return ["answer", str(count[0] > 0)]

    entry = work / "cache" / "kind" / "k.json"

    def shape(v: object) -> bool:
        return isinstance(v, list) and all(isinstance(x, str) for x in v)

    yield Cache(lambda: kept.answer(entry, {"of": "what", "n": 1}, shape, read), shape,
                lambda: count[0], lambda: entry)


@contextlib.contextmanager
def _dpkg_owner(work: Path) -> Iterator[Cache]:
    loader = work / "ld.so"
    loader.write_bytes(b"")
    count = [0]

    def ask(_: str) -> str | None:
        count[0] += 1
        return "libc6 2.36-9"

    cache, admin = work / "cache", work / "dpkg"  # a database of its own: no install moves it
    (admin / "info").mkdir(parents=True)
    (admin / "status").write_text("Package: libc6\n")
    with mock.patch.dict(os.environ, {"DPKG_ADMINDIR": str(admin)}):
        yield Cache(lambda: dpkgowner.owner(str(loader), cache, ask), dpkgowner._is_answer,
                    lambda: count[0], lambda: _only(cache / "dpkg-owner"))


def _deb_cache(deb_file: Path, fact: str) -> Callable[[Path], contextlib.AbstractContextManager[
        Cache]]:
    @contextlib.contextmanager
    def make(work: Path) -> Iterator[Cache]:
        deb = work / "debs" / deb_file.name
        deb.parent.mkdir()
        shutil.copy2(deb_file, deb)
        count = [0]
        with _counting(ownlibs, "_dpkg_deb", count):
            ask = (lambda: ownlibs.source_of(deb)) if fact == "source" else \
                (lambda: sorted(ownlibs.contents(deb)))
            yield Cache(ask, ownlibs._SHAPES[fact], lambda: count[0],
                        lambda: ownlibs.index_file(deb, fact))
    return make


@contextlib.contextmanager
def _stripped(work: Path) -> Iterator[Cache]:
    exe = work / "true"
    shutil.copy("/usr/bin/true", exe)
    digest = sha256_file(exe)
    count = [0]
    with _counting(debian, "stripped_size", count):
        yield Cache(lambda: elf.section_sizes(exe, debian.kept_stripped_size(work, digest)),
                    debian._a_size, lambda: count[0], lambda: _only(work / "debian" / "stripped"))


@contextlib.contextmanager
def _elf_facts(work: Path) -> Iterator[Cache]:
    exe = work / "true"
    shutil.copy("/usr/bin/true", exe)
    count = [0]
    with mock.patch.dict(os.environ, {"ABIBENCH_CACHE": str(work / "cache")}), \
            _counting(elf, "_parse_facts", count):
        yield Cache(lambda: elf.read_elf(exe),
                    elf._facts_shape, lambda: count[0], lambda: _only(work / "cache" / "elf"))


# apt-cache's answers as captured on a Debian 12 host (tests/data): a real apt-cache call costs
# 0.7 s of CPU.
APT = captured()


@contextlib.contextmanager
def _closure(work: Path) -> Iterator[Cache]:
    count = [0]
    with _counting(resolve, "resolve", count):
        yield Cache(lambda: resolve.resolve_cached(["gzip"], ["amd64"], work, apt=APT),
                    resolve._closure_shape, lambda: count[0],
                    lambda: _only(work / "debian" / "closures"))


def make_probe_deb(where: Path) -> Path:
    """A small .deb of source package "src", built by dpkg-deb in `where`."""
    tree = where / "tree"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text(
        "Package: probe\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\nDescription: t\n"
        "Source: src (0.9)\n")
    (tree / "usr" / "bin").mkdir(parents=True)
    (tree / "usr" / "bin" / "p").write_text("p")
    out = where / "probe_1_all.deb"
    subprocess.run(["dpkg-deb", "-Zgzip", "-b", str(tree), str(out)], check=True,
                   capture_output=True)
    return out


@pytest.fixture(scope="module")
def probe_deb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("dpkg-deb") is None:
        pytest.skip("no dpkg-deb")
    return make_probe_deb(tmp_path_factory.mktemp("deb"))


CACHES = ("helper", "dpkg-owner", "deb-source", "deb-contents", "stripped", "elf-facts",
          "closure")


def _cache(name: str, deb: Path) -> Callable[[Path], contextlib.AbstractContextManager[Cache]]:
    return {"helper": _helper, "dpkg-owner": _dpkg_owner, "stripped": _stripped,
            "elf-facts": _elf_facts, "deb-source": _deb_cache(deb, "source"),
            "deb-contents": _deb_cache(deb, "contents"), "closure": _closure}[name]


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)
# A value of no cache's shape... or of its own shape with another cache's key: each is drawn
# against the entry as written, so "the right key" is the cache's own.
_VALUE = st.none() | st.booleans() | st.integers(-3, 3) | st.floats() | st.just("") | \
    st.text(min_size=201, max_size=203) | \
    st.lists(st.integers() | st.none(), min_size=1, max_size=2) | \
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2)
DAMAGE = st.one_of(
    st.tuples(st.just("bytes"), st.binary(max_size=60)),
    st.tuples(st.just("json"), _JSON),
    st.tuples(st.just("wrong-shape"), _VALUE),  # this cache's key, a value of another shape
    st.tuples(st.just("stale-key"), _JSON),  # another key, the value as written
    st.tuples(st.just("extra-field"), _JSON),
    st.tuples(st.just("format"), st.sampled_from([True, 0, 2, "1", 1.0])),
    st.tuples(st.just("truncated"), st.integers(0, 200)),
    st.tuples(st.just("nan"), st.sampled_from(["NaN", "Infinity", "-Infinity"])),
    st.tuples(st.just("deep"), st.integers(2000, 100_000)),
    st.tuples(st.just("directory"), st.none()),
    st.tuples(st.just("fifo"), st.none()),
    # every string of the value (keys too) ending in a lone surrogate: JSON spells it, no UTF-8
    # writer takes it (text.not_text)
    st.tuples(st.just("surrogate"), st.sampled_from(["\ud800", "\udcff", "\udfff"])),
)


def _with_lone(value: object, lone: str) -> object:
    if isinstance(value, str):
        return value + lone
    if isinstance(value, list):
        return [_with_lone(v, lone) for v in value]
    if isinstance(value, dict):
        return {k + lone: _with_lone(v, lone) for k, v in value.items()}
    return value


def _damage(entry: Path, kind: str, arg: object) -> bool:
    """Put the damage in place of the entry; True when the entry can be written again after
    (a directory in its place cannot be renamed over: the answer is then asked each time)."""
    written = entry.read_text()
    doc = json.loads(written)
    entry.unlink()
    if kind == "directory":
        entry.mkdir()
        return False
    if kind == "fifo":
        os.mkfifo(entry)
        return True
    text: str | bytes
    if kind == "bytes":
        assert isinstance(arg, bytes)
        text = arg
    elif kind == "json":
        text = json.dumps(arg)
    elif kind == "wrong-shape":
        text = json.dumps({**doc, "value": arg})
    elif kind == "stale-key":
        text = json.dumps({**doc, "key": [doc["key"], arg]})
    elif kind == "extra-field":
        text = json.dumps({**doc, "also": arg})
    elif kind == "format":
        text = json.dumps({**doc, "kept": arg})
    elif kind == "surrogate":
        assert isinstance(arg, str)
        text = json.dumps({**doc, "value": _with_lone(doc["value"], arg)})
    elif kind == "truncated":
        assert isinstance(arg, int)
        text = written[:min(arg, len(written) - 1)]
    elif kind == "nan":
        text = written.replace('"key": ', f'"key": [{arg}, ', 1).replace(', "value"', '], "value"', 1)
    else:
        assert isinstance(arg, int)
        text = "[" * arg + "]" * arg
    entry.write_bytes(text if isinstance(text, bytes) else text.encode())
    return True


@settings(max_examples=36 * SCALE, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(which=st.sampled_from(CACHES), damage=DAMAGE)
def test_a_damaged_entry_of_any_cache_is_read_from_its_source_again(
        probe_deb: Path, which: str, damage: tuple[str, object]) -> None:
    with tempfile.TemporaryDirectory() as tmp, _cache(which, probe_deb)(Path(tmp)) as cache:
        fresh = cache.ask()
        assert cache.reads() == 1
        assert cache.ask() == fresh and cache.reads() == 1  # kept: the source is not read
        entry = cache.entry()
        kind, arg = damage
        # A value of the cache's own shape under its own key is, by the key, the answer.
        assume(kind != "wrong-shape" or not cache.shape(arg))
        if kind == "surrogate":  # only a value that holds a string can be spoilt so
            written = json.loads(entry.read_text())["value"]
            assume(_with_lone(written, str(arg)) != written)
        rewritable = _damage(entry, *damage)
        assert cache.ask() == fresh, damage
        assert cache.reads() == 2, f"{which}: {damage} was taken for an answer"
        assert cache.ask() == fresh
        assert cache.reads() == (2 if rewritable else 3)
        if rewritable:
            assert json.loads(entry.read_text())["value"] is not None


def test_the_shape_of_a_kept_value_is_checked_before_it_is_kept_or_believed(
        tmp_path: Path) -> None:
    entry = tmp_path / "c" / "k.json"
    asks: list[str] = []

    def read() -> object:
        asks.append("x")
        return {"not": "a list"}


    def is_list(v: object) -> bool:
        return isinstance(v, list)

    assert kept.answer(entry, "k", is_list, read) == {"not": "a list"}
    assert not entry.exists()  # returned, not kept
    assert kept.answer(entry, "k", is_list, lambda: [1.5]) == [1.5]
    assert kept.answer(entry, "k", is_list, read) == [1.5]
    # An answer its caller says not to keep, or not JSON (NaN), is returned and not kept.
    other = tmp_path / "c" / "n.json"
    assert kept.answer(other, "k", is_list, lambda: [1], keep=lambda _: False) == [1]
    nan = kept.answer(other, "k", is_list, lambda: [float("nan")])
    assert isinstance(nan, list) and nan[0] != nan[0]
    assert not other.exists() and len(asks) == 1


FAILURES = ("write", "lock", "cache-is-a-file")


_FINITE = st.recursive(st.booleans() | st.integers() | st.text(max_size=8)
                       | st.floats(allow_nan=False, allow_infinity=False),
                       lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)


@settings(max_examples=6 * SCALE, deadline=None)
@given(failure=st.sampled_from(FAILURES), value=_FINITE)
def test_a_write_that_fails_costs_only_a_re_ask(failure: str, value: object) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "cache"
        entry = root / "kind" / "k.json"
        asks = [0]

        def read() -> object:
            asks[0] += 1
            return value

        def broken(*_: object) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        with contextlib.ExitStack() as stack:
            if failure == "write":
                stack.enter_context(mock.patch.object(kept, "write_atomic", broken))
            elif failure == "lock":
                stack.enter_context(mock.patch.object(kept, "exclusive", broken))
            else:
                root.write_text("a file where the cache's directory would be")
            for n in (1, 2):
                got = kept.answer(entry, "k", lambda v: v is not None, read)
                assert json.dumps(got) == json.dumps(value) and asks[0] == n
        # The failure gone: asked once more and kept (but where the cache cannot be).
        assert kept.answer(entry, "k", lambda v: v is not None, read) is not None
        assert asks[0] == 3 and (root.is_file() or entry.is_file())
        kept.answer(entry, "k", lambda v: v is not None, read)
        assert asks[0] == (4 if root.is_file() else 3)


def _waiting_on(lock: Path) -> int:
    """Blocked flock(2) requests on this lock file, as the kernel lists them."""
    ino = os.stat(lock).st_ino
    return sum(1 for ln in Path("/proc/locks").read_text().splitlines()
               if "->" in ln and f":{ino} " in ln)


def _until(check: Callable[[], bool], what: str, deadline: float = 30.0) -> None:
    """Wait for a state the kernel reports (never for a time); fail if it never comes."""
    end = time.monotonic() + deadline
    while not check():
        if time.monotonic() > end:
            pytest.fail(f"never happened within {deadline:.0f} s: {what}")
        time.sleep(0.01)


@settings(max_examples=3 * SCALE, deadline=None)
@given(others=st.integers(1, 3))
def test_two_makers_at_once_read_the_source_once(others: int) -> None:
    """The first maker holds the entry's lock while it reads; every other one waits (seen
    blocked in /proc/locks) and then finds its answer, reading nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        entry = Path(tmp) / "kind" / "k.json"
        reading, release = threading.Event(), threading.Event()
        reads: list[str] = []
        got: list[object] = []

        def read() -> str:
            reads.append(threading.current_thread().name)
            reading.set()
            release.wait(60)
            return "the answer"

        def ask() -> None:
            got.append(kept.answer(entry, "k", lambda v: isinstance(v, str), read))

        first = threading.Thread(target=ask, name="first")
        first.start()
        assert reading.wait(30)
        rest = [threading.Thread(target=ask, name=f"other-{i}") for i in range(others)]
        for t in rest:
            t.start()
        _until(lambda: _waiting_on(lock_path(entry)) == others, f"{others} makers waiting")
        release.set()
        for t in [first, *rest]:
            t.join(60)
        assert reads == ["first"] and got == ["the answer"] * (others + 1)


# ------------------------------------------------ every kept answer is written by kept.py

# What the check reads as "writes a kept answer another way": a top-level function or method of
# a module under src/abibench (nested functions and lambdas count as part of it) that both
# serialises JSON (json.dumps or json.dump) and writes a file: outputs.write_atomic, a path's
# write_text or write_bytes, os.replace or os.rename, a path's rename or replace with one
# argument, open() or a path's open() with a mode that writes ("w", "a", "x", "+"), or json.dump
# itself (to a file object). kept.py is where such writes belong; every other function that
# does both is listed here with what it writes, which is no answer read from a source and kept.
NOT_KEPT = {
    "abibench.cli.printing:_print_json": "a command's --json, to stdout",
    "abibench.fleet.ansible:run_playbook": "ansible's extra-vars file in the run's work dir",
    "abibench.obtain.build:_make": "a build entry's own record, published with it by a rename",
    "abibench.obtain.inputs:_publish": "an input's sidecar, published with the input",
    "abibench.obtain.inputs:_corpus_cached": "a generated input (made entry), by _publish",
    "abibench.obtain.inputs:lua_scripts": "the stamp inside a staged input, renamed with it",
    "abibench.obtain.qemuplugin:_fetch_header": "the stamp of a fetched header, beside it",
    "abibench.obtain.sysroot:_make_sysroot": "a sysroot's record inside its staged entry",
    "abibench.probe.noise:store": "a measurement (calibrate replaces it under its lock; it "
                                  "expires by age and boot), not an answer read from a source",
}
_MOVES = {"replace", "rename"}
_WRITING_MODE = set("wax+")


def _call_kind(call: ast.Call) -> str | None:
    """'json' for JSON serialised, 'write' for a file written, 'both' for json.dump."""
    f = call.func
    base = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    if base == "json" and name in ("dumps", "dump"):
        return "both" if name == "dump" else "json"
    if name in ("write_atomic", "write_text", "write_bytes"):
        return "write"
    if name in _MOVES and (base == "os" or (isinstance(f, ast.Attribute) and len(call.args) == 1
                                           and not call.keywords)):
        return "write"
    if name == "open":
        modes = [a for a in call.args[1 if isinstance(f, ast.Name) else 0:][:1]] + \
            [k.value for k in call.keywords if k.arg == "mode"]
        if any(isinstance(m, ast.Constant) and isinstance(m.value, str)
               and _WRITING_MODE & set(m.value) for m in modes):
            return "write"
    return None


def writers_of_json(source: str, module: str) -> set[str]:
    """`module:function` of every top-level function or method that serialises JSON and writes
    a file (module-level code counts as `module:<module>`)."""
    tree = ast.parse(source)
    units: list[tuple[str, list[ast.AST]]] = [("<module>", [])]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            units.append((node.name, [node]))
        elif isinstance(node, ast.ClassDef):
            units += [(f"{node.name}.{m.name}", [m]) for m in node.body
                      if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            units[0][1].extend(m for m in node.body
                               if not isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)))
        else:
            units[0][1].append(node)
    found = set()
    for name, nodes in units:
        kinds = {_call_kind(n) for top in nodes for n in ast.walk(top) if isinstance(n, ast.Call)}
        if "both" in kinds or {"json", "write"} <= kinds:
            found.add(f"{module}:{name}")
    return found


def _package_writers() -> set[str]:
    root = Path(abibench.__file__).resolve().parent
    found: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        if "profiles" in path.parts:  # benchmark payloads, run by the measured programs
            continue
        rel = path.relative_to(root.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        found |= writers_of_json(path.read_text(), module)
    return found


def test_every_kept_answer_is_written_by_kept_py() -> None:
    found = _package_writers()
    assert "abibench.kept:_store" in found  # the check sees the one writer that belongs
    others = found - {w for w in found if w.startswith("abibench.kept:")}
    assert others - set(NOT_KEPT) == set(), (
        "a function writes JSON to a file outside kept.py: keep the answer with kept.answer, "
        "or list it in NOT_KEPT with what it writes")
    assert set(NOT_KEPT) - others == set(), "NOT_KEPT names a function that writes no JSON now"


_SERIALISE = ["json.dumps(value)", "json.dumps(value, sort_keys=True).encode()"]
_WRITE = ["write_atomic(entry, data)", "entry.write_text(data)", "entry.write_bytes(data)",
          "os.replace(tmp, entry)", "os.rename(tmp, entry)", "tmp.rename(entry)",
          "tmp.replace(entry)", "open(entry, 'w')", "entry.open('a')", "open(entry, mode='x')",
          "open(entry, 'r+b')"]
_HARMLESS = ["text.replace('a', 'b')", "open(entry)", "entry.open('rb')", "entry.read_text()",
             "json.loads(data)", "hashlib.sha256(data)"]
_WRAP = ["{}", "if cond:\n    {}", "with lock():\n    {}", "try:\n    {}\nexcept OSError:\n    pass",
         "for x in xs:\n    {}", "def inner():\n    {}", "f = lambda: {}"]


def _body(statements: list[tuple[str, str]]) -> str:
    lines = []
    for wrap, stmt in statements:
        lines += ["    " + ln for ln in wrap.format(stmt).splitlines()]
    return "def unit():\n" + "\n".join(lines or ["    pass"]) + "\n"


@settings(max_examples=40 * SCALE, deadline=None)
@given(serialise=st.none() | st.sampled_from(_SERIALISE), write=st.none() | st.sampled_from(
    _WRITE), dump=st.booleans(), harmless=st.lists(st.sampled_from(_HARMLESS), max_size=3),
       wraps=st.lists(st.sampled_from(_WRAP), min_size=4, max_size=4), in_class=st.booleans())
def test_the_check_finds_every_drawn_writer_of_json(
        serialise: str | None, write: str | None, dump: bool, harmless: list[str],
        wraps: list[str], in_class: bool) -> None:
    """Generated functions: JSON serialised (or json.dump) and a file written, each in any
    nesting, beside calls that neither serialise nor write, are found; either alone is not."""
    statements = [(w, s) for w, s in zip(wraps, [serialise, write, *harmless], strict=False)
                  if s is not None]
    if dump:
        statements.append((wraps[-1], "json.dump(value, fh)"))
    source = _body(statements)
    name = "unit"
    if in_class:
        source = "class C:\n" + "".join("    " + ln + "\n" for ln in source.splitlines())
        name = "C.unit"
    want = dump or (serialise is not None and write is not None)
    assert writers_of_json(source, "m") == ({f"m:{name}"} if want else set()), source
