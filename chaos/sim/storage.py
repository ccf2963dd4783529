"""A simulated node's log dirs in memory (ring: drivers — a simulated one; no I/O).

:class:`MemoryStorage` is the reference `LogManager`'s `LogStorage` port over a dictionary
instead of a filesystem: directories and text files by path, kept for the life of the simulated
node, so a restarted node's log manager reads back the partition directories and files its earlier
life left, as a real node reads its disk. The log manager's own logic (layout, checkpoint contents,
renames for deletion, what a restart loads) runs unchanged on top of it.

It answers as a local POSIX filesystem without links would: creating in a missing directory is
`FileNotFoundError`, a file where a directory should be is `FileExistsError` / `NotADirectoryError`,
a name longer than 255 bytes is `OSError(ENAMETOOLONG)`, a directory renamed onto an empty one
replaces it; a path resolves to itself (nothing is a
link), so a partition directory always resolves inside its log dir.
"""

from __future__ import annotations

import errno
from pathlib import Path

__all__ = ["MemoryStorage"]

NAME_MAX = 255


def _split(key: str) -> tuple[str, str]:
    """A path's parent and name, from its text (as ``Path.parent`` and ``Path.name``)."""
    head, _, name = key.rpartition("/")
    return head or ("/" if key.startswith("/") else "."), name


class MemoryStorage:
    """Directories and files of one simulated node (module docstring)."""

    def __init__(self) -> None:
        self.dirs: set[str] = {"/", "."}  # the root and the working directory
        self.files: dict[str, str] = {}

    # ---- checks, answered as the filesystem answers them --------------------------------------------
    def _parent_dir(self, path: Path) -> str:
        """``path`` as a key, once its parent is known to be a directory (string work: this runs
        for every file the log manager touches)."""
        key = str(path)
        parent, name = _split(key)
        if len(name) > NAME_MAX // 4 and len(name.encode()) > NAME_MAX:
            raise OSError(errno.ENAMETOOLONG, "File name too long", key)
        if parent not in self.dirs:
            if parent in self.files:
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory", key)
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", key)
        return key

    def _under(self, key: str) -> tuple[list[str], list[str]]:
        prefix = key.rstrip("/") + "/"
        return (
            [d for d in self.dirs if d == key or d.startswith(prefix)],
            [f for f in self.files if f.startswith(prefix)],
        )

    # ---- the LogStorage port ---------------------------------------------------------------------
    def make_dirs(self, d: Path) -> None:
        for path in (*reversed(d.parents), d):
            if str(path) not in self.dirs:
                self.make_dir(path)

    def make_dir(self, path: Path) -> None:
        key = self._parent_dir(path)
        if key in self.files:
            raise FileExistsError(errno.EEXIST, "File exists", key)
        self.dirs.add(key)

    def read_text(self, path: Path) -> str | None:
        key = str(path)
        if key in self.dirs:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", key)
        return self.files.get(key)

    def write_atomically(self, path: Path, text: str) -> None:
        key = self._parent_dir(path)
        if key in self.dirs:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", key)
        self.files[key] = text

    def touch(self, path: Path) -> None:
        key = self._parent_dir(path)
        if key not in self.dirs:
            self.files.setdefault(key, "")

    def unlink(self, path: Path) -> None:
        key = str(path)
        if key in self.dirs:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", key)
        self.files.pop(key, None)

    def subdirs(self, d: Path) -> list[Path]:
        key = str(d)
        if key not in self.dirs:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", key)
        return sorted(Path(c) for c in self.dirs if c != key and _split(c)[0] == key)

    def resolves_to_child(self, path: Path, parent: Path) -> bool:
        head, name = _split(str(path))
        return head == str(parent) and name not in ("", ".", "..")

    def rename(self, src: Path, dst: Path) -> None:
        old = str(src)
        if old not in self.dirs and old not in self.files:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", old)
        new = self._parent_dir(dst)
        if old in self.files:
            if new in self.dirs:
                raise IsADirectoryError(errno.EISDIR, "Is a directory", new)
            self.files[new] = self.files.pop(old)
            return
        if new in self.files:
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", new)
        if new in self.dirs:  # a directory replaces an empty one
            if any(d != new for d in self._under(new)[0]) or self._under(new)[1]:
                raise OSError(errno.ENOTEMPTY, "Directory not empty", new)
            self.dirs.discard(new)
        dirs, files = self._under(old)
        for d in dirs:
            self.dirs.discard(d)
            self.dirs.add(new + d[len(old) :])
        for f in files:
            self.files[new + f[len(old) :]] = self.files.pop(f)

    def remove_tree(self, path: Path) -> None:
        dirs, files = self._under(str(path))
        self.dirs.difference_update(dirs)
        for f in files:
            del self.files[f]
