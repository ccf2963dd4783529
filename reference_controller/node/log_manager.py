"""Partition directories on disk, laid out as Kafka 2.5's LogManager does (ring: drivers).

Per `log.dirs` entry: `meta.properties` (version=0, broker.id, cluster.id), the offset checkpoint
files (`0\\n<count>\\n<topic> <partition> <offset>` lines), `cleaner-offset-checkpoint` (empty) and
`.kafka_cleanshutdown` after a clean shutdown. Per partition `<dir>/<topic>-<p>/`: the empty
active segment `00000000000000000000.log` with `.index` and `.timeindex`, and
`leader-epoch-checkpoint` (empty at creation; `0\\n1\\n<epoch> <offset>\\n` once leader).
Deleted partitions are renamed `<topic>-<p>.<uuid hex>-delete` and removed after
`log.segment.delete.delay.ms`. A partition directory is only ever made by `partition_dir`, which
refuses (IllegalLogPath) any name that would not resolve directly inside its log dir. Logs stay
empty: no Produce in this issue, but the files are real. Every file operation goes through the
`LogStorage` port (:mod:`reference_controller.node.log_storage`): the disk in a node process.

Log-dir failure (LOGDIR-5, `log_dir_failure.py`): an OSError while creating a partition dir or its
files, writing a checkpoint or renaming a log for deletion is reported to the
`LogDirFailureChannel` and surfaces as `KafkaStorageError`; once the failure handler has called
`handle_log_dir_failure`, the dir is offline: its logs are dropped, no file is written there any
more, new logs go to the online dirs only, and (as `getOrCreateLog`) a log that is not new is
not created at all while some dir is offline.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from kafkawire.states import TopicPartition
from reference_controller.errors import ReferenceControllerError
from reference_controller.node.log_dir_failure import KafkaStorageError, LogDirFailureChannel
from reference_controller.node.log_storage import DISK, LogStorage

log = logging.getLogger("kafka.log.LogManager")

SEGMENT_BASE = "00000000000000000000"
CHECKPOINT_FILES = (
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
)
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_DELETE_DIR = re.compile(r"^.+-\d+\.[0-9a-f]{32}-delete$")


class IllegalLogPath(ReferenceControllerError):
    """A partition directory that would not resolve directly inside its log dir (never created)."""


class LogDirError(ReferenceControllerError):
    """A log dir is unusable or belongs to another broker/cluster (InconsistentBrokerId/ClusterId)."""


@dataclass
class Log:
    topic_partition: TopicPartition
    dir: Path

    @property
    def log_end_offset(self) -> int:
        return 0

    @property
    def high_watermark(self) -> int:
        return 0


def log_dir_name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def partition_dir(log_dir: Path, tp: TopicPartition, storage: LogStorage = DISK) -> Path:
    """`<log_dir>/<topic>-<p>`, only when it resolves to a direct child of `log_dir` (so `a/b`,
    `..`, `../escape` and the like never reach the filesystem); else IllegalLogPath."""
    name = log_dir_name(tp)
    path = log_dir / name
    if "/" in name or "\x00" in name or not storage.resolves_to_child(path, log_dir):
        raise IllegalLogPath(f"Refusing partition directory {name!r}: it does not resolve inside {log_dir}")
    return path


def write_checkpoint(path: Path, entries: list[str], storage: LogStorage = DISK) -> None:
    """Kafka's CheckpointFile format, written atomically (tmp + rename)."""
    storage.write_atomically(path, "0\n" + f"{len(entries)}\n" + "".join(e + "\n" for e in entries))


class LogManager:
    def __init__(
        self,
        log_dirs: tuple[Path, ...],
        broker_id: int,
        delete_delay_ms: int,
        failure_channel: LogDirFailureChannel | None = None,
        storage: LogStorage = DISK,
    ) -> None:
        self.log_dirs = log_dirs
        self.storage = storage
        self.broker_id = broker_id
        self.delete_delay_ms = delete_delay_ms
        self.failure_channel = failure_channel or LogDirFailureChannel()
        self.live_log_dirs: list[Path] = list(log_dirs)
        self._checkpoint_files = {d: tuple(d / name for name in CHECKPOINT_FILES) for d in log_dirs}
        self.logs: dict[TopicPartition, Log] = {}
        self._to_delete: list[tuple[float, Path]] = []

    # -- online / offline dirs -----------------------------------------------------------------
    def is_log_dir_online(self, d: Path) -> bool:
        return d in self.live_log_dirs

    @property
    def offline_log_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d not in self.live_log_dirs]

    def _io_error(self, d: Path, msg: str, exc: OSError) -> None:
        self.failure_channel.maybe_add_offline_log_dir(d, msg, exc)

    def handle_log_dir_failure(self, d: Path) -> bool:
        """`LogManager.handleLogDirFailure`: drop the dir's logs; False when no log dir is left."""
        log.warning(f"Stopping serving logs in dir {d}")
        if d in self.live_log_dirs:
            self.live_log_dirs.remove(d)
        if not self.live_log_dirs:
            log.critical(
                f"Shutdown broker because all log dirs in {', '.join(map(str, self.log_dirs))} have failed"
            )
            return False
        offline = sorted(tp for tp, lg in self.logs.items() if lg.dir.parent == d)
        for tp in offline:
            del self.logs[tp]
        self._to_delete = [(t, p) for t, p in self._to_delete if p.parent != d]
        log.warning(
            f"Logs for partitions {','.join(map(log_dir_name, offline))} are offline and logs for future "
            f"partitions  are offline due to failure on log directory {d}"
        )
        return True

    # -- start-up ------------------------------------------------------------------------------
    def startup(self, cluster_id: str) -> None:
        """Check/write meta.properties, load existing partition dirs, write checkpoint files."""
        for d in self.log_dirs:
            try:
                self.storage.make_dirs(d)
            except OSError as exc:
                raise LogDirError(f"cannot create log dir {d}: {exc}") from exc
            try:
                self._check_meta(d, cluster_id)
                self.storage.unlink(d / CLEAN_SHUTDOWN_FILE)
                self.storage.touch(d / "cleaner-offset-checkpoint")
                self._load_dir(d)
            except OSError as exc:  # e.g. a read-only dir: name the key, the dir and the file
                raise LogDirError(
                    f"log.dirs: cannot use log dir {d}: {exc.strerror or exc} ({exc.filename or d})"
                ) from exc
        self.checkpoint()

    def _check_meta(self, d: Path, cluster_id: str) -> None:
        meta = d / "meta.properties"
        stored = self.storage.read_text(meta)
        if stored is not None:
            props = dict(line.split("=", 1) for line in stored.splitlines() if "=" in line)
            if props.get("broker.id", str(self.broker_id)) != str(self.broker_id):
                raise LogDirError(
                    f"Configured broker.id {self.broker_id} doesn't match stored broker.id "
                    f"{props.get('broker.id')} in meta.properties ({meta})."
                )
            if props.get("cluster.id", cluster_id) != cluster_id:
                raise LogDirError(
                    f"The Cluster ID {cluster_id} doesn't match stored clusterId "
                    f"Some({props.get('cluster.id')}) "
                    f"in meta.properties ({meta}). The broker is trying to join the wrong cluster."
                )
        stamp = time.strftime("%a %b %d %H:%M:%S %Z %Y")
        self.storage.write_atomically(
            meta, f"#\n#{stamp}\nversion=0\nbroker.id={self.broker_id}\ncluster.id={cluster_id}\n"
        )

    def _load_dir(self, d: Path) -> None:
        for child in self.storage.subdirs(d):
            if _DELETE_DIR.match(child.name):
                self._to_delete.append((time.monotonic(), child))
                continue
            m = _PARTITION_DIR.match(child.name)
            if m is None or "." in child.name.rsplit("-", 1)[1]:
                continue
            tp = TopicPartition(m.group("topic"), int(m.group("partition")))
            if tp in self.logs:
                raise LogDirError(
                    f"Duplicate log directories for {log_dir_name(tp)}: {self.logs[tp].dir}, {child}"
                )
            self._ensure_segment_files(child)
            self.logs[tp] = Log(tp, child)
            log.info(
                f"Completed load of log with 1 segments, log start offset 0 and log end offset 0 ({child})"
            )

    # -- logs ----------------------------------------------------------------------------------
    def next_log_dirs(self) -> list[Path]:
        """Online log dirs, least-loaded first (fewest partitions; ties: earlier `log.dirs` entry)."""
        counts = dict.fromkeys(self.live_log_dirs, 0)
        for lg in self.logs.values():
            if lg.dir.parent in counts:
                counts[lg.dir.parent] += 1
        return sorted(self.live_log_dirs, key=lambda d: (counts[d], self.log_dirs.index(d)))

    def get_or_create_log(self, tp: TopicPartition, is_new: bool = False) -> Log:
        """`getOrCreateLog`: raises KafkaStorageError as Kafka throws KafkaStorageException."""
        existing = self.logs.get(tp)
        if existing is not None:
            return existing
        name = log_dir_name(tp)
        for d in self.log_dirs:
            partition_dir(d, tp, self.storage)  # IllegalLogPath before any filesystem change
        if not is_new and self.offline_log_dirs:
            raise KafkaStorageError(
                f"Can not create log for {name} because log directories "
                f"{','.join(map(str, self.offline_log_dirs))} are offline"
            )
        candidates = self.next_log_dirs()
        for d in candidates:
            path = partition_dir(d, tp, self.storage)
            try:
                self.storage.make_dir(path)  # the log dir itself must exist (a vanished dir has failed)
            except OSError as exc:
                msg = f"Error while creating log for {name} in dir {d}"
                self._io_error(d, msg, exc)
                log.warning(msg)
                continue
            try:
                self._ensure_segment_files(path)
            except OSError as exc:
                msg = f"Error while loading log dir {d}"
                self._io_error(d, msg, exc)
                raise KafkaStorageError(msg) from exc
            break
        else:
            tried = ", ".join(str(d) for d in candidates)
            raise KafkaStorageError(f"No log directories available. Tried {tried}")
        created = Log(tp, path)
        self.logs[tp] = created
        log.info(f"Created log for partition {log_dir_name(tp)} in {path} with properties {{}}.")
        return created

    def _ensure_segment_files(self, path: Path) -> None:
        for suffix in (".log", ".index", ".timeindex"):
            self.storage.touch(path / f"{SEGMENT_BASE}{suffix}")
        self.storage.touch(path / "leader-epoch-checkpoint")

    def assign_leader_epoch(self, tp: TopicPartition, leader_epoch: int, start_offset: int = 0) -> None:
        """`maybeAssignEpochStartOffset`: with empty logs only the latest entry remains."""
        lg = self.logs.get(tp)
        if lg is None or leader_epoch < 0:
            return
        path = lg.dir / "leader-epoch-checkpoint"
        try:
            write_checkpoint(path, [f"{leader_epoch} {start_offset}"], self.storage)
        except OSError as exc:
            msg = f"Error while writing to checkpoint file {path}"
            self._io_error(lg.dir.parent, msg, exc)
            raise KafkaStorageError(msg) from exc

    def async_delete(self, tp: TopicPartition) -> Path | None:
        """Rename to `<topic>-<p>.<uuid>-delete`; removed after `log.segment.delete.delay.ms`."""
        lg = self.logs.pop(tp, None)
        if lg is None:
            return None
        target = lg.dir.with_name(f"{log_dir_name(tp)}.{uuid.uuid4().hex}-delete")
        try:
            self.storage.rename(lg.dir, target)
        except OSError as exc:
            msg = f"Error while renaming dir for {log_dir_name(tp)} in log dir {lg.dir.parent}"
            self._io_error(lg.dir.parent, msg, exc)
            self.logs[tp] = lg  # still there: the failure handler takes it offline with its dir
            raise KafkaStorageError(msg) from exc
        self._to_delete.append((time.monotonic() + self.delete_delay_ms / 1000, target))
        log.info(f"Log for partition {log_dir_name(tp)} is renamed to {target} and is scheduled for deletion")
        self.checkpoint()
        return target

    def delete_due(self, now_s: float | None = None) -> None:
        now = time.monotonic() if now_s is None else now_s
        due = [p for t, p in self._to_delete if t <= now]
        self._to_delete = [(t, p) for t, p in self._to_delete if t > now]
        for path in due:
            self.storage.remove_tree(path)
            log.info(f"Deleted log {path}.")

    # -- checkpoints ---------------------------------------------------------------------------
    def checkpoint(self) -> None:
        """Checkpoint files of every online log dir; a failed write takes that dir offline."""
        for d in [d for d in self.live_log_dirs if d not in self.failure_channel.offline]:
            entries = sorted(f"{tp[0]} {tp[1]} 0" for tp, lg in self.logs.items() if lg.dir.parent == d)
            for path in self._checkpoint_files[d]:
                try:
                    write_checkpoint(path, entries, self.storage)
                except OSError as exc:
                    self._io_error(d, f"Error while writing to checkpoint file {path}", exc)
                    break

    def shutdown(self) -> None:
        self.checkpoint()
        for d in [d for d in self.live_log_dirs if d not in self.failure_channel.offline]:
            try:
                self.storage.touch(d / CLEAN_SHUTDOWN_FILE)
            except OSError as exc:
                self._io_error(d, f"Error while writing {d / CLEAN_SHUTDOWN_FILE}", exc)
