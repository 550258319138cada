"""The layering DESIGN.md and docs/architecture.md describe, enforced on the source tree.

Data flows one way: probe -> obtain -> run -> store -> analyse -> report -> fleet -> cli, the
order the README and docs/architecture.md give. A module may import its own stage, earlier
stages and the shared base (records, codec, errors, paths, abi, elf, stats, workloads), never
a later stage; and no two modules import each other, however
indirectly. Every import counts: lazy ones inside functions and TYPE_CHECKING ones too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import abibench

PACKAGE = Path(abibench.__file__).resolve().parent

# Lowest first. The base is what every stage shares; the CLI sits on top.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("abibench", "abibench.errors", "abibench.paths", "abibench.records", "abibench.codec",
              "abibench.ids",
              "abibench.abi", "abibench.elf", "abibench.stats", "abibench.text", "abibench.hashing",
              "abibench.tools", "abibench.locks",
              "abibench.workspace", "abibench.files",
              "abibench.workloads")),
    ("probe", ("abibench.probe",)),
    ("obtain", ("abibench.obtain",)),
    ("run", ("abibench.run",)),
    ("store", ("abibench.store",)),
    ("analyse", ("abibench.analyse",)),
    ("report", ("abibench.report",)),
    ("fleet", ("abibench.fleet",)),
    ("cli", ("abibench.cli", "abibench.__main__")),
)


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "profiles" in path.parts:  # benchmark payloads run by the measured programs
            continue
        out[module_name(path)] = path
    return out


def _resolve(name: str, current: str, is_package: bool, level: int) -> str:
    if level == 0:
        return name
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every abibench module `name` imports (a `from X import y` of a submodule counts as it)."""
    tree = ast.parse(path.read_text())
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node.module or "", name, is_package, node.level)
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)
    out = set()
    for f in found:
        # Keep the longest prefix that is one of our modules.
        while f and f not in known:
            f = f.rpartition(".")[0]
        if f and f != name:
            out.add(f)
    return out


def layer_of(module: str) -> int:
    best, best_len = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    return best


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {m: imports_of(m, p, known) for m, p in mods.items()}


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = [m for m in modules() if layer_of(m) < 0]
    assert unplaced == [], f"modules outside every layer: {unplaced}; add them to LAYERS"


def test_no_module_imports_a_later_stage() -> None:
    g = graph()
    bad = []
    for m, deps in g.items():
        for d in deps:
            # The package root only holds the version; it may be imported from anywhere.
            if d != "abibench" and layer_of(d) > layer_of(m):
                bad.append(f"{m} ({LAYERS[layer_of(m)][0]}) imports {d} "
                           f"({LAYERS[layer_of(d)][0]})")
    assert bad == [], "\n".join(sorted(bad))


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    # A package's __init__ importing its own submodules is how a registry is built; a cycle
    # through it is still a cycle, so it is not exempt.
    found = cycles(graph())
    assert found == [], f"import cycles: {found}"


def test_the_checks_catch_a_violation() -> None:
    """The rules are not vacuous: a graph with a back edge and a cycle fails both."""
    g = {"abibench.run.schedule": {"abibench.report.html"},
         "abibench.report.html": {"abibench.analyse.report"},
         "abibench.analyse.report": {"abibench.report.html"}}
    assert cycles(g) == [["abibench.analyse.report", "abibench.report.html"]]
    assert layer_of("abibench.run.schedule") < layer_of("abibench.report.html")
