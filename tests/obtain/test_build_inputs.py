"""A build's cache key covers every input: generated recipes that read files of their profile's
directory, declared or not, by every route; generated changes to declared inputs.

The invariant (docs/reliability.md): what a build can read is declared and hashed, or invisible
to it. So a build never yields a stale cache hit: it fails naming the undeclared file, or a
change to what it read changes the key and the program is built again. Builds here are real
(bwrap, gcc) and tiny; `unconfined` is the fallback where bwrap cannot run, which hashes the
profile's whole directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from abibench.abi import ABIS
from abibench.errors import BuildError
from abibench.obtain import buildbox
from abibench.obtain.build import build, cache_key, recipe_of
from abibench.obtain.toolchain import KNOWN_TOOLS, named_tools
from abibench.records import Artifact
from abibench.workloads.profile import load_profile

ABI = ABIS["x86_64"]
# bench/build_invariants.py runs these longer: more examples per call.
SCALE = int(os.environ.get("ABIBENCH_TEST_SCALE", "1"))
CFLAGS = ("-O1",)
MODES = ("sandboxed", "unconfined")


@contextlib.contextmanager
def mode(name: str) -> Iterator[None]:
    """Builds in the sandbox, or unconfined as on a host where bwrap cannot run."""
    old = os.environ.get(buildbox.SANDBOX_SWITCH)
    os.environ[buildbox.SANDBOX_SWITCH] = "on" if name == "sandboxed" else "off"
    buildbox.sandbox_problem.cache_clear()
    try:
        if name == "sandboxed" and buildbox.sandbox_problem():
            pytest.skip(f"no sandbox here: {buildbox.sandbox_problem()}")
        yield
    finally:
        if old is None:
            del os.environ[buildbox.SANDBOX_SWITCH]
        else:
            os.environ[buildbox.SANDBOX_SWITCH] = old
        buildbox.sandbox_problem.cache_clear()


@dataclass(frozen=True)
class Read:
    """One file the recipe reads: where it lies, how the recipe reaches it, what is declared."""

    name: str
    sub: bool  # in a subdirectory of the profile's directory
    route: str  # "relative" to the build tree, "absolute" through {profile_dir}, "sourced"
    declared: bool
    by_dir: bool  # declared through its directory rather than by name (when in sub/)
    script_declared: bool  # for "sourced": the script that reads it is declared

    @property
    def rel(self) -> str:
        return f"sub/{self.name}" if self.sub else self.name


NAMES = st.sampled_from(["data", "helper.txt", "table.in", "k"])
reads_st = st.lists(
    st.builds(Read, NAMES, st.booleans(), st.sampled_from(["relative", "absolute", "sourced"]),
              st.booleans(), st.booleans(), st.booleans()),
    min_size=1, max_size=3, unique_by=lambda r: r.rel)
WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)


def _write_profile(d: Path, reads: list[Read], contents: list[str]) -> Path:
    lines = ["set -e"]
    declared: list[str] = []
    for i, (r, text) in enumerate(zip(reads, contents, strict=True)):
        f = d / r.rel
        f.parent.mkdir(exist_ok=True)
        f.write_text(text + "\n")
        ref = f"{{profile_dir}}/{r.rel}" if r.route == "absolute" else r.rel
        if r.route == "sourced":
            script = d / f"lib{i}.sh"
            # A script beside the profile that reads the file; the recipe sources it.
            script.write_text(f"v{i}=$(cat {r.rel})\n")
            lines.append(f". ./lib{i}.sh")
            if r.script_declared:
                declared.append(script.name)
        else:
            lines.append(f"v{i}=$(cat {ref})")
        if r.declared:
            declared.append("sub" if r.sub and r.by_dir else r.rel)
    joined = "|".join(f"$v{i}" for i in range(len(reads)))
    lines.append("printf '#include <stdio.h>\\nint main(void) { puts(\"%s\"); return 0; }\\n' "
                 f"\"{joined}\" > prog.c")
    lines.append("{cc} {cflags} -o {out}/prog prog.c")
    prof = d / "p.toml"
    prof.write_text(f'id = "reads"\ntitle = "reads files"\n[source]\n'
                    f"files = {json.dumps(sorted(set(declared)))}\n"
                    f'build = ["sh", "-c", {json.dumps(chr(10).join(lines))}]\n'
                    'artifacts = ["prog"]\n[run]\ncommand = ["{bin}/prog"]\n')
    return prof


def _first_undeclared(reads: list[Read]) -> str | None:
    """What the sandboxed build meets first that it cannot see, in the order it reads."""
    sub_declared = any(o.sub and o.declared and o.by_dir for o in reads)
    for i, r in enumerate(reads):
        if r.route == "sourced" and not r.script_declared:
            return f"lib{i}.sh"
        if not (r.declared or (r.sub and sub_declared)):
            return r.rel
    return None


def _output(art: Artifact) -> str:
    return subprocess.run([str(Path(art.bin_dir) / "prog")], capture_output=True, text=True,
                          check=True).stdout.strip()


def _build(prof: Path, cache: Path) -> Artifact:
    return build(load_profile(prof), ABI, "gcc", CFLAGS, cache)


@pytest.mark.parametrize("how", MODES)
# Real builds: a failing example is reported as found (shrinking it would take minutes).
@settings(max_examples=8 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(reads=reads_st, data=st.data())
def test_a_build_never_reuses_what_it_read_before_a_change(how: str, reads: list[Read],
                                                           data: st.DataObject) -> None:
    contents = [data.draw(WORD) for _ in reads]
    with mode(how), tempfile.TemporaryDirectory() as tmp:
        d, cache = Path(tmp) / "prof", Path(tmp) / "cache"
        d.mkdir()
        prof = _write_profile(d, reads, contents)
        if data.draw(st.booleans(), label="profile named through a '..'"):
            (Path(tmp) / "elsewhere").mkdir()
            prof = Path(tmp) / "elsewhere" / ".." / "prof" / prof.name
        missing = _first_undeclared(reads) if how == "sandboxed" else None
        if missing is not None:
            # Invisible to the build: it fails, and says which file to declare.
            with pytest.raises(BuildError) as err:
                _build(prof, cache)
            assert missing in str(err.value) and "[source] files" in str(err.value), \
                str(err.value)
            return
        first = _build(prof, cache)
        assert not first.cached and _output(first) == "|".join(contents)
        # Any file it read changes: a new key, a new build, the new bytes measured.
        i = data.draw(st.integers(0, len(reads) - 1))
        contents[i] = data.draw(WORD.filter(lambda w: w != contents[i]))
        (d / reads[i].rel).write_text(contents[i] + "\n")
        second = _build(prof, cache)
        assert second.cache_key != first.cache_key and not second.cached
        assert _output(second) == "|".join(contents)
        # A file it cannot read rebuilds nothing (sandboxed); unconfined it could have.
        (d / "unrelated.txt").write_text("x")
        third = _build(prof, cache)
        assert third.cached == (how == "sandboxed")


@dataclass(frozen=True)
class Change:
    kind: str  # "content", "mode", "new file", "removed", "link"
    target: int  # which declared file (or, for "new file", which directory)


def _key(prof: Path) -> str:
    wl = load_profile(prof)
    return cache_key(wl, ABI, "gcc", CFLAGS, recipe_of(wl, ABI, "gcc", CFLAGS, {},
                                                      Path("/staging"), prof.parent / "cache"))


@pytest.mark.parametrize("how", MODES)
@settings(max_examples=25 * SCALE, deadline=None)
@given(files=st.lists(st.tuples(st.sampled_from(["a.c", "b.h", "in/x.txt", "in/deep/y",
                                                 "run.sh"]), WORD, st.booleans()),
                      min_size=1, max_size=4, unique_by=lambda t: t[0]),
       change=st.builds(Change, st.sampled_from(["content", "mode", "new file", "removed",
                                                 "link"]), st.integers(0, 3)))
def test_every_change_to_a_declared_input_changes_the_key(
        how: str, files: list[tuple[str, str, bool]], change: Change) -> None:
    with mode(how), tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for name, text, executable in files:
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_text(text)
            (d / name).chmod(0o755 if executable else 0o644)
        # in/ is declared as a directory (whatever it holds), the other files by name.
        (d / "in").mkdir(exist_ok=True)
        declared = sorted({n.split("/")[0] for n, _, _ in files} | {"in"})
        prof = d / "p.toml"
        prof.write_text(f'id = "decl"\ntitle = "t"\n[source]\nfiles = {json.dumps(declared)}\n'
                        'build = ["sh", "-c", "{cc} {cflags} -o {out}/p a.c"]\n'
                        'artifacts = ["p"]\n[run]\ncommand = ["{bin}/p"]\n')
        before = _key(prof)
        assert _key(prof) == before  # the key is a function of the inputs
        name = files[change.target % len(files)][0]
        target = d / name
        if change.kind == "content":
            target.write_text(target.read_text() + "+")
        elif change.kind == "mode":
            target.chmod(target.stat().st_mode ^ 0o100)
        elif change.kind == "new file":
            (d / "in" / "new").write_text("")  # in/ is declared as a directory
        elif change.kind == "removed":
            target.unlink()
            if "/" not in name:  # declared by name: its absence is an error, never a hit
                with pytest.raises(BuildError, match="does not exist"):
                    _key(prof)
                return
        else:  # the same bytes, now through a link
            target.rename(target.with_name("elsewhere"))
            target.symlink_to("elsewhere")
        assert _key(prof) != before, (change, name)


def test_a_file_nobody_declared_is_named_with_the_fix() -> None:
    with mode("sandboxed"), tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "helper.sh").write_text("echo hi\n")
        prof = d / "p.toml"
        prof.write_text('id = "undecl"\ntitle = "t"\n[source]\n'
                        'build = ["sh", "-c", "sh helper.sh && {cc} -o {out}/p x.c"]\n'
                        'artifacts = ["p"]\n[run]\ncommand = ["{bin}/p"]\n')
        with pytest.raises(BuildError, match=r"helper\.sh; declare it in \[source\] files"):
            _build(prof, d / "cache")


COMMAND_TOOLS = st.sampled_from([*KNOWN_TOOLS, "gcc", "g++", "cc", "clang-16",
                                 "x86_64-linux-gnu-gcc-12", "/usr/bin/arm-linux-gnueabihf-gcc"])
GLUE = st.sampled_from([" && ", "; ", " | ", " || ", "\n"])


@settings(max_examples=200 * SCALE, deadline=None)
@given(tools=st.lists(st.tuples(COMMAND_TOOLS, st.sampled_from(["plain", "var", "subst",
                                                                "path"])), min_size=1,
                      max_size=5),
       glue=GLUE, wrap=st.booleans())
def test_every_tool_a_command_names_is_recorded(tools: list[tuple[str, str]], glue: str,
                                                wrap: bool) -> None:
    words = []
    for tool, how in tools:
        name = tool.rsplit("/", 1)[-1]
        if how == "var" and "/" not in tool:
            words.append(f"CC='{tool}' true")
        elif how == "subst":
            words.append(f"x=$({tool} -v)")
        elif how == "path" and "/" not in tool and name != "configure":
            words.append(f"/usr/local/bin/{tool} a")
        else:
            words.append(f"./{tool} a" if name == "configure" else f"{tool} a")
    script = glue.join(words)
    found = named_tools([["sh", "-c", script]] if wrap else [script.split(" ")])
    names = {t.rsplit("/", 1)[-1] for t in found}
    for tool, _ in tools:
        name = tool.rsplit("/", 1)[-1]
        assert name in names, (script, found)
        for implied in KNOWN_TOOLS[name].implies if name in KNOWN_TOOLS else ():
            assert implied in names, (script, found)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(sorted(KNOWN_TOOLS)), min_size=1, max_size=3),
       st.sampled_from(["examples", "src/x", "a.b"]))
def test_a_relative_path_in_a_message_names_no_tool(tools: list[str], where: str) -> None:
    # "error: examples/meson has ..." once recorded "examples/meson" as the meson toolchain
    # ("does not run (PermissionError)"): only a word a shell could run names a tool.
    script = "echo 'error: " + " ".join(f"{where}/{t}" for t in tools) + " missing' >&2; exit 2"
    assert named_tools([["sh", "-c", script]]) == []


def test_a_rust_build_is_recorded_as_rustc_not_as_gcc(tmp_path: Path) -> None:
    # The case: a program a `build` command made with another toolchain carries that
    # toolchain's version, and no C compiler's flags or target options.
    if subprocess.run(["sh", "-c", "command -v rustc"], capture_output=True,
                      check=False).returncode:
        pytest.skip("rustc is not installed")
    (tmp_path / "main.rs").write_text('fn main() { println!("hi"); }\n')
    prof = tmp_path / "p.toml"
    prof.write_text('id = "rs"\ntitle = "t"\n[source]\nfiles = ["main.rs"]\n'
                    'build = ["rustc", "-O", "-o", "{out}/prog", "main.rs"]\n'
                    'artifacts = ["prog"]\n[run]\ncommand = ["{bin}/prog"]\n')
    art = _build(prof, tmp_path / "cache")
    # rustc, and the cc it links with: gcc did run, as the linker, with none of our flags.
    assert list(art.toolchain) == ["rustc", "cc"], art.toolchain
    assert art.toolchain["rustc"].startswith("rustc ")
    assert art.compiler_version == "; ".join(art.toolchain.values())
    assert art.effective == {} and art.abi_flags == () and art.cflags == ()
    assert art.isolation is not None
