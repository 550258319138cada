"""Deterministic workload inputs (corpora, audio, scenes), generated once and cached.

A profile names an input under [inputs] with a `kind` registered here; the generated file's
absolute path fills the {name} placeholder. Generators must be deterministic: the same
parameters on the same machine give byte-identical files, so every ABI reads the same input.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

# kind -> generator(spec without "kind", cache directory for this kind) -> path of the input
Generator = Callable[[dict[str, Any], Path], Path]
INPUT_KINDS: dict[str, Generator] = {}


def generate_input(name: str, spec: dict[str, Any], cache_root: Path) -> Path:
    kind = spec["kind"]
    params = {k: v for k, v in spec.items() if k != "kind"}
    out_dir = cache_root / "inputs" / kind
    out_dir.mkdir(parents=True, exist_ok=True)
    return INPUT_KINDS[kind](params, out_dir)
