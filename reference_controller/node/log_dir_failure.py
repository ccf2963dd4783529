"""Log-dir failure on the broker side: LOGDIR-5, spec §6.4 (ring: drivers).

As Kafka 2.5.1:
- `LogDirFailureChannel`: every I/O error on a log dir (creating a partition dir or its files,
  writing a checkpoint, renaming a log for deletion) is reported with `maybe_add_offline_log_dir`,
  which logs the message at ERROR and queues the dir once; a dir stays offline until restart.
- `LogDirFailureHandler` (ReplicaManager's thread of that name; in `log_dir_handler.py`, which
  imports the ReplicaManager that imports this module): for each newly offline dir,
  `handleLogDirFailure`: WARN "Stopping serving replicas in dir <dir>"; the partitions whose log
  is in it are marked offline (fetchers stopped, leader/follower state dropped; LeaderAndIsr
  and StopReplica(delete) for them answer KAFKA_STORAGE_ERROR (56)); `LogManager.
  handleLogDirFailure` (no checkpoints are written there any more; all log dirs offline ⇒ the
  broker halts, exit 1, before any notification); then `propagateLogDirEvent`: a
  PERSISTENT_SEQUENTIAL `/log_dir_event_notification/log_dir_event_<seq>` =
  `{"version":1,"broker":<id>,"event":1}`; WARN "Stopped serving replicas in dir <dir>".
  With `inter.broker.protocol.version` < 1.0-IV0 the broker halts on the first failed dir.

Reference addition (NOT in Kafka): an idle reference broker does almost no disk I/O, so a
periodic health check (every `HEALTH_CHECK_INTERVAL_S` = 1 s) probes each online log dir and
reports it to the channel when it is missing, not a directory, or not writable (creating and
deleting the probe file `.reference-health-check` fails).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from reference_controller import zkdata
from reference_controller.controller.ports import CreateOp, ZkCode
from reference_controller.errors import ReferenceControllerError
from reference_controller.node.zk_port import CONNECTION_CODES, NodeZkError, NodeZkPort, expect

log = logging.getLogger("kafka.server.LogDirFailureChannel")
rm_log = logging.getLogger("kafka.server.ReplicaManager")

HEALTH_CHECK_INTERVAL_S = 1.0
PROBE_FILE = ".reference-health-check"


class KafkaStorageError(ReferenceControllerError):
    """Kafka's KafkaStorageException: the operation touched an offline (or failing) log dir."""


class LogDirFailureChannel:
    """Newly offline log dirs, each handed out once (all calls on the node's event loop)."""

    def __init__(self) -> None:
        self.offline: set[Path] = set()
        self._queue: asyncio.Queue[Path] = asyncio.Queue()

    def maybe_add_offline_log_dir(self, log_dir: Path, msg: str, exc: BaseException | None) -> None:
        log.error(msg, exc_info=exc)
        if log_dir not in self.offline:
            self.offline.add(log_dir)
            self._queue.put_nowait(log_dir)

    async def take_next_offline_log_dir(self) -> Path:
        return await self._queue.get()


def probe_log_dir(log_dir: Path) -> OSError | None:
    """The health check of one log dir (reference addition); the error, or None when healthy."""
    try:
        if not log_dir.exists():
            raise FileNotFoundError(2, "log dir does not exist", str(log_dir))
        if not log_dir.is_dir():
            raise NotADirectoryError(20, "log dir is not a directory", str(log_dir))
        probe = log_dir / PROBE_FILE
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        return exc
    return None


def propagate_log_dir_event(zk: NodeZkPort, broker_id: int) -> str:
    """`KafkaZkClient.propagateLogDirEvent`: resent while the session is reconnecting (or
    expired and being replaced); a closed client or any other failure raises."""
    op = CreateOp(
        zkdata.log_dir_event_path(zkdata.LOG_DIR_EVENT_PREFIX),
        zkdata.encode_log_dir_event(broker_id),
        sequential=True,
    )
    while True:
        result = zk.create(op)
        if result.code in (*CONNECTION_CODES, ZkCode.SESSIONEXPIRED):
            if zk.is_closed():  # node shutting down
                raise NodeZkError(op.path, result.code)
            continue
        path = str(expect(result).created_path)
        rm_log.debug(f"Added {path} for broker {broker_id}")
        return path


async def run_health_check(
    channel: LogDirFailureChannel, live_dirs: Callable[[], list[Path]], interval_s: float
) -> None:
    """Reference addition: probe every online log dir each `interval_s` (see the module doc)."""
    while True:
        await asyncio.sleep(interval_s)
        for log_dir in live_dirs():
            if log_dir in channel.offline:
                continue
            exc = await asyncio.to_thread(probe_log_dir, log_dir)
            if exc is not None:
                channel.maybe_add_offline_log_dir(
                    log_dir, f"Error while checking log dir {log_dir} (reference health check): {exc}", exc
                )
