"""A copy of this kit's tracked files (as they are in the working tree), for a test to change."""

from __future__ import annotations

import subprocess
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
