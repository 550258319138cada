"""The abibench a fleet's hosts run: an sdist built from this checkout, offline.

The sources are copied first (only what the sdist takes: pyproject.toml, MANIFEST.in, README,
setup.sh, src/), so building writes nothing into the checkout; setuptools' own PEP 517 hook
builds it with this Python (no isolated environment, nothing downloaded). The sdist holds
setup.sh (MANIFEST.in), which each host runs to set itself up.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from ..errors import HostError
from ..paths import PACKAGE_DIR
from ..text import one_line

_TOP = ("pyproject.toml", "MANIFEST.in", "README.md", "setup.sh")
_BUILD = "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))"


def checkout() -> Path:
    """The source tree abibench runs from (an editable install of a checkout)."""
    root = PACKAGE_DIR.parent.parent
    if not all((root / name).is_file() for name in _TOP):
        raise HostError(f"abibench fleet copies this checkout to every host, but {root} is not "
                        "one (no pyproject.toml and setup.sh beside src/): install abibench "
                        "from a checkout (bash setup.sh)")
    return root


def build_sdist(out: Path) -> Path:
    """abibench-VERSION.tar.gz in out, built from the checkout."""
    root = checkout()
    tree = out / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    for name in _TOP:
        shutil.copy2(root / name, tree / name)
    shutil.copytree(root / "src", tree / "src", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"))
    dist = out / "dist"
    dist.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-c", _BUILD, str(dist)], cwd=tree, capture_output=True,
                          text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise HostError(f"building the sdist of {root} failed: {one_line(done.stderr)[-400:]} "
                        "(needs setuptools >= 77: bash setup.sh)")
    return dist / done.stdout.strip().splitlines()[-1]
