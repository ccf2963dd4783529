"""The simulator's in-memory log dirs answer as the disk does (ring: unit tests — the real
filesystem under pytest's tmp_path is the oracle; no node, ZooKeeper or socket).

The reference `LogManager` is run twice with the same calls, once over the disk and once over
:class:`~chaos.sim.storage.MemoryStorage`: the trees it leaves (directories, file names, file
contents) and what a restarted log manager loads back must be the same. Each storage operation
on its own must also succeed or fail alike (the same `OSError` subclass and errno).
"""

from __future__ import annotations

import errno
import functools
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from chaos.sim.storage import MemoryStorage
from kafkawire.states import TopicPartition
from reference_controller.node.log_manager import LogManager
from reference_controller.node.log_storage import DISK, LogStorage

pytestmark = pytest.mark.unit

_DELETE_SUFFIX = re.compile(r"\.[0-9a-f]{32}-delete")  # a uuid4 per deletion: differs run to run


def _play(root: Path, storage: LogStorage) -> list[str]:
    dirs = (root / "a", root / "b")
    lm = LogManager(dirs, 7, 0, storage=storage)
    lm.startup("cluster")
    for i in range(6):
        tp = TopicPartition(f"t{i % 3}", i)
        lm.get_or_create_log(tp, is_new=True)
        lm.assign_leader_epoch(tp, i + 1)
    lm.checkpoint()
    lm.async_delete(TopicPartition("t1", 1))
    lm.shutdown()
    again = LogManager(dirs, 7, 0, storage=storage)
    again.startup("cluster")
    again.get_or_create_log(TopicPartition("u", 0), is_new=True)
    again.checkpoint()
    return sorted(f"{tp} {lg.dir.relative_to(root)}" for tp, lg in again.logs.items())


def _disk_tree(root: Path) -> dict[str, str | None]:
    return {str(p.relative_to(root)): p.read_text() if p.is_file() else None for p in root.rglob("*")}


def _memory_tree(storage: MemoryStorage, root: Path) -> dict[str, str | None]:
    prefix = f"{root}/"
    tree: dict[str, str | None] = {
        k[len(prefix) :]: v for k, v in storage.files.items() if k.startswith(prefix)
    }
    tree.update({k[len(prefix) :]: None for k in storage.dirs if k.startswith(prefix)})
    return tree


def _comparable(tree: dict[str, str | None]) -> dict[str, str | None]:
    """Deletion names without their uuid; meta.properties without its wall-clock stamp line."""
    out: dict[str, str | None] = {}
    for name, text in tree.items():
        kept = text
        if name.endswith("meta.properties") and text is not None:
            kept = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
        out[_DELETE_SUFFIX.sub(".<uuid>-delete", name)] = kept
    return out


def test_the_log_manager_leaves_the_same_tree_in_memory_as_on_disk(tmp_path: Path) -> None:
    memory = MemoryStorage()
    loaded_from_disk = _play(tmp_path, DISK)
    loaded_from_memory = _play(Path("/simulated"), memory)
    assert loaded_from_memory == loaded_from_disk
    disk, mem = _comparable(_disk_tree(tmp_path)), _comparable(_memory_tree(memory, Path("/simulated")))
    assert mem == disk
    assert "a/replication-offset-checkpoint" in disk  # the comparison saw the checkpoint files
    assert any(".<uuid>-delete" in name for name in disk)  # and the renamed partition


def _outcome(action: Callable[[], object]) -> object:
    try:
        return ("ok", action())
    except OSError as exc:
        return (type(exc).__name__, errno.errorcode.get(exc.errno or 0))


_LONG = "x" * 256


def _make_dir_twice(s: LogStorage, r: Path) -> None:
    s.make_dir(r / "d2")
    s.make_dir(r / "d2")


def _rename_onto_empty_dir(s: LogStorage, r: Path) -> list[str]:
    s.rename(r / "d", r / "e")
    return [p.name for p in s.subdirs(r)]


CASES: dict[str, Callable[[LogStorage, Path], object]] = {
    "make_dir in a missing dir": lambda s, r: s.make_dir(r / "missing" / "d"),
    "make_dir where a file is": lambda s, r: s.make_dir(r / "f"),
    "make_dir under a file": lambda s, r: s.make_dir(r / "f" / "d"),
    "make_dir twice": _make_dir_twice,
    "make_dirs where a file is": lambda s, r: s.make_dirs(r / "f"),
    "touch in a missing dir": lambda s, r: s.touch(r / "missing" / "f"),
    "touch a long name": lambda s, r: s.touch(r / _LONG),
    "write into a missing dir": lambda s, r: s.write_atomically(r / "missing" / "f", "x"),
    "read a missing file": lambda s, r: s.read_text(r / "nothing"),
    "read a dir": lambda s, r: s.read_text(r / "d"),
    "unlink a missing file": lambda s, r: s.unlink(r / "nothing"),
    "unlink a dir": lambda s, r: s.unlink(r / "d"),
    "rename a missing dir": lambda s, r: s.rename(r / "missing", r / "other"),
    "rename onto a non-empty dir": lambda s, r: s.rename(r / "e", r / "d"),
    "rename onto an empty dir": _rename_onto_empty_dir,
    "rename a dir onto a file": lambda s, r: s.rename(r / "d", r / "f"),
    "subdirs of a missing dir": lambda s, r: s.subdirs(r / "missing"),
    "subdirs": lambda s, r: [p.name for p in s.subdirs(r)],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_operation_succeeds_or_fails_as_on_disk(tmp_path: Path, case: str) -> None:
    results = []
    for storage, root in ((DISK, tmp_path / "root"), (MemoryStorage(), Path("/simulated/root"))):
        storage.make_dirs(root / "d")
        storage.write_atomically(root / "d" / "inside", "x")
        storage.make_dir(root / "e")
        storage.touch(root / "f")
        results.append(_outcome(functools.partial(CASES[case], storage, root)))
    disk, memory = results
    assert memory == disk
