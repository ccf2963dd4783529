"""The file operations of the log manager, as a port (ring: drivers).

`LogManager` lays out its log dirs (Kafka 2.5's layout, :mod:`reference_controller.node.log_manager`)
only through a :class:`LogStorage`. A node process uses :data:`DISK`, which makes each call on the
real filesystem exactly as the log manager made it before the port existed (same calls, same order,
same `OSError`s); a host that runs the node's logic without a filesystem of its own (the
deterministic simulator) hands in another implementation.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Protocol

__all__ = ["DISK", "DiskStorage", "LogStorage"]


class LogStorage(Protocol):
    """Directories and small text files under the log dirs. Each call may raise `OSError`."""

    def make_dirs(self, d: Path) -> None:
        """`d` and its missing parents (an existing directory is fine)."""

    def make_dir(self, path: Path) -> None:
        """`path`, whose parent must exist (an existing directory is fine)."""

    def read_text(self, path: Path) -> str | None:
        """The file's text, or None when there is no such file."""

    def write_atomically(self, path: Path, text: str) -> None:
        """Replace the file's text in one step (a reader never sees half of it)."""

    def touch(self, path: Path) -> None:
        """An empty file unless it exists."""

    def unlink(self, path: Path) -> None:
        """Remove the file when it exists."""

    def subdirs(self, d: Path) -> list[Path]:
        """The directories directly in `d`, in sorted order."""

    def resolves_to_child(self, path: Path, parent: Path) -> bool:
        """Whether `path` resolves (links followed) to a direct child of `parent`."""

    def rename(self, src: Path, dst: Path) -> None:
        """Move `src` (a directory and all it holds) to `dst`."""

    def remove_tree(self, path: Path) -> None:
        """Remove the directory and all it holds; errors are ignored."""


class DiskStorage:
    """The real filesystem (module docstring)."""

    def make_dirs(self, d: Path) -> None:
        d.mkdir(parents=True, exist_ok=True)

    def make_dir(self, path: Path) -> None:
        path.mkdir(exist_ok=True)

    def read_text(self, path: Path) -> str | None:
        return path.read_text(encoding="utf-8") if path.exists() else None

    def write_atomically(self, path: Path, text: str) -> None:
        tmp = path.with_name(path.name + ".tmp")  # tmp + rename, as Kafka's CheckpointFile
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)

    def touch(self, path: Path) -> None:
        path.touch(exist_ok=True)

    def unlink(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def subdirs(self, d: Path) -> list[Path]:
        return [child for child in sorted(d.iterdir()) if child.is_dir()]

    def resolves_to_child(self, path: Path, parent: Path) -> bool:
        return path.resolve().parent == parent.resolve()

    def rename(self, src: Path, dst: Path) -> None:
        src.rename(dst)

    def remove_tree(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)


DISK: LogStorage = DiskStorage()
