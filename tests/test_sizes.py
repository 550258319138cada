"""Small rooms: no Python file under src/ over 600 lines, no function over 80 (Python anywhere
under src/, C in src/abibench/native/).

Lines are counted as a reader meets them: a Python file's lines; a Python function from its
`def` to its last line (ast); a C function from the line that names it to its closing brace, found
by a brace-depth scanner that first blanks comments, string and character literals and
preprocessor lines (so a brace in any of those is not counted). The scanners are tried on
generated text whose true sizes are known, so this test can fail.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import abibench

PACKAGE = Path(abibench.__file__).resolve().parent
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80

# ---- Python ---------------------------------------------------------------------------------

def python_functions(source: str) -> dict[str, int]:
    """Every function and method (nested ones too) by qualified name: its length in lines."""
    out: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    assert child.end_lineno is not None
                    out[name] = child.end_lineno - child.lineno + 1
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(source), "")
    return out


# ---- C --------------------------------------------------------------------------------------

_C_NOISE = re.compile(r"""
      /\*.*?\*/                    # a block comment
    | //[^\n]*                     # a line comment
    | "(?:\\.|[^"\\\n])*"          # a string literal
    | '(?:\\.|[^'\\\n])*'          # a character literal
    | ^[ \t]*\#(?:\\\n|[^\n])*     # a preprocessor line, with its continuations
""", re.S | re.M | re.X)


def _blank_noise(text: str) -> str:
    """Comments, literals and preprocessor lines as spaces; newlines kept, so lines do not move."""
    return _C_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), text)


def _function_name(head: str) -> tuple[str, int] | None:
    """The name and its offset when `head` (the text before a top-level `{`) ends with a
    parameter list; None for an initializer, a struct or an enum."""
    head = head.rstrip()
    if not head.endswith(")"):
        return None
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(head[i], 0)
        if depth == 0:
            m = re.search(r"([A-Za-z_]\w*)\s*$", head[:i])
            return (m[1], m.start(1)) if m else None
    return None


def c_functions(text: str) -> dict[str, int]:
    """Every function defined in C `text`: its length in lines, from its name to its `}`."""
    clean = _blank_noise(text)
    out: dict[str, int] = {}
    depth = 0
    current: tuple[str, int] | None = None
    for m in re.finditer(r"[{}]", clean):
        if m[0] == "{":
            if depth == 0:
                named = _function_name(clean[:m.start()])
                current = (named[0], clean.count("\n", 0, named[1])) if named else None
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0 and current is not None:
                out[current[0]] = clean.count("\n", 0, m.start()) - current[1] + 1
                current = None
    return out


# ---- the rule -------------------------------------------------------------------------------

def offenders(package: Path) -> set[str]:
    """Every file over MAX_FILE_LINES and function over MAX_FUNCTION_LINES under `package`."""
    found: set[str] = set()
    for path in sorted(package.rglob("*.py")):
        rel = str(path.relative_to(package))
        source = path.read_text(encoding="utf-8")
        if len(source.splitlines()) > MAX_FILE_LINES:
            found.add(rel)
        found |= {f"{rel}:{name}" for name, n in python_functions(source).items()
                  if n > MAX_FUNCTION_LINES}
    for path in sorted((package / "native").glob("*.c")):
        rel = str(path.relative_to(package))
        found |= {f"{rel}:{name}" for name, n in c_functions(path.read_text(encoding="utf-8")).items()
                  if n > MAX_FUNCTION_LINES}
    return found


@functools.cache
def _package_offenders() -> frozenset[str]:
    return frozenset(offenders(PACKAGE))  # seconds of parsing, shared by the two tests


def test_no_new_file_or_function_over_the_limits() -> None:
    new = sorted(_package_offenders())
    assert new == [], (f"over {MAX_FILE_LINES} lines a file or {MAX_FUNCTION_LINES} a function: "
                       f"{new}; split it into named steps (docs/architecture.md)")


def test_the_tests_and_benchmarks_keep_the_same_limits() -> None:
    """The rule is the repository's, not the package's: tests and bench scripts are code too."""
    root = PACKAGE.parents[1]
    over = sorted(f"{d}/{o}" for d in ("tests", "bench", "scripts") if (root / d).is_dir()
                  for o in offenders(root / d))
    assert over == [], (f"over {MAX_FILE_LINES} lines a file or {MAX_FUNCTION_LINES} a "
                        f"function: {over}; split it into named steps")


def test_the_c_sources_are_scanned() -> None:
    """The scanner finds the launcher's functions: an empty answer would pass every limit."""
    found = c_functions((PACKAGE / "native" / "launch.c").read_text(encoding="utf-8"))
    assert {"main", "parse_options", "kill_the_rest", "covariate_loop"} <= set(found)


# ---- the scanners on generated text ---------------------------------------------------------

# Statements a C body may hold, each a brace, quote or comment the scanner must not miscount.
_C_LINES = (
    "x = 1;",
    's = "}{";',
    "c = '{';",
    "c = '\\'';",
    's = "a\\"}{";',
    "/* } { */",
    "// {",
    "y = f(x, (int)g(')'));",
)
_C_TOP = (
    "#include <stdio.h>",
    "#define BLOCK(x) { x; }",
    "static int table[] = {1, 2, 3};",
    "typedef struct { int a; } pair;",
    "struct point { int x, y; };",
    "static int proto(int a);",
    "/* a comment with a { brace */",
    "enum colour { RED, GREEN };",
)

_statement = st.recursive(
    st.sampled_from(_C_LINES).map(lambda s: [s]),
    lambda inner: st.lists(inner, min_size=1, max_size=4).map(
        lambda blocks: ["if (x) {", *[line for b in blocks for line in b], "}"]),
    max_leaves=20,
)


@st.composite
def c_source(draw: st.DrawFn) -> tuple[str, dict[str, int]]:
    """A C text of top-level noise and functions of random shape, and each function's length."""
    lines: list[str] = []
    truth: dict[str, int] = {}
    for i in range(draw(st.integers(1, 5))):
        lines += draw(st.lists(st.sampled_from(_C_TOP), max_size=3))
        body = [line for s in draw(st.lists(_statement, max_size=6)) for line in s]
        body += ["/* a comment", "   over lines } */"] if draw(st.booleans()) else []
        gnu_style = draw(st.booleans())  # `int\nname(void)\n{` or `int name(void) {`
        lines += ["static int"] if gnu_style else []
        first = len(lines)
        lines += [f"f{i}(int a, char *b)", "{"] if gnu_style else [f"static int f{i}(int a) {{"]
        lines += [f"    {line}" for line in body] + ["}"]
        truth[f"f{i}"] = len(lines) - first
    return "\n".join(lines) + "\n", truth


@settings(max_examples=40, deadline=None)
@given(c_source())
def test_the_c_scanner_measures_generated_functions(case: tuple[str, dict[str, int]]) -> None:
    text, truth = case
    assert c_functions(text) == truth


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 120), min_size=1, max_size=4), st.booleans())
def test_the_python_measure_and_the_rule_on_generated_functions(bodies: list[int],
                                                                method: bool) -> None:
    """Functions of generated lengths (as methods, or with a nested one) measure as generated,
    and one over the limit is an offender."""
    lines: list[str] = ["class Holder:"] if method else []
    pad = "    " if method else ""
    truth = {}
    for i, n in enumerate(bodies):
        name = f"Holder.f{i}" if method else f"f{i}"
        lines += [f"{pad}def f{i}() -> None:", f'{pad}    """{{ not a brace that counts }}"""',
                  f"{pad}    def inner() -> None:", f"{pad}        pass"]
        lines += [f"{pad}    x = {j}" for j in range(n)]
        truth[name] = n + 4
        truth[f"{name}.inner"] = 2
    assert python_functions("\n".join(lines) + "\n") == truth


def test_a_long_generated_c_function_is_an_offender(tmp_path: Path) -> None:
    """The rule itself, on a package of one short and one long C function and one long file."""
    native = tmp_path / "native"
    native.mkdir()

    def function(name: str, lines: int) -> str:
        return f"int {name}(void) {{\n" + "    x++;\n" * (lines - 2) + "}\n"

    (native / "t.c").write_text(function("fits", MAX_FUNCTION_LINES)
                                + function("over", MAX_FUNCTION_LINES + 1))
    (tmp_path / "big.py").write_text("x = 1\n" * (MAX_FILE_LINES + 1))
    assert offenders(tmp_path) == {"native/t.c:over", "big.py"}
