"""A copy of this kit's tracked files (as they are in the working tree), for a test to change, and
``python -m chaos`` run as a user runs it, from the kit or from such a copy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def copy_kit(tree: Path, patch: Path | None = None) -> Path:
    """The kit's tracked files copied into ``tree``; ``patch`` applied to the copy when given."""
    tree.mkdir(parents=True, exist_ok=True)
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        if name and (REPO / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_bytes((REPO / name).read_bytes())
    if patch is not None:
        subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=tree, check=True)
    return tree


def run_chaos(
    *args: str, cwd: Path | None = None, hash_seed: str = "random", tree: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """``python -m chaos ARGS`` in a child process with ``tree`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": hash_seed}
    return subprocess.run(
        [sys.executable, "-m", "chaos", *args],
        cwd=cwd or tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def seed_version_of(tree: Path) -> str:
    """The seed version (``chaos.sim.version.seed_version``) of the kit at ``tree``."""
    done = subprocess.run(
        [sys.executable, "-c", "from chaos.sim.version import seed_version; print(seed_version())"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()
