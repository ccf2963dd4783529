"""`LogDirFailureHandler`, ReplicaManager's thread of that name: LOGDIR-5, spec §6.4 (ring: drivers).

For each log dir the channel hands out: `ReplicaManager.handleLogDirFailure` as Kafka 2.5.1 (see
`log_dir_failure.py` for the whole sequence, the channel and the notification it writes). A module
of its own because it drives the ReplicaManager, which itself reports to the channel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from reference_controller.node.log_dir_failure import LogDirFailureChannel, propagate_log_dir_event, rm_log
from reference_controller.node.replica_manager import ReplicaManager
from reference_controller.node.zk_port import NodeZkPort

__all__ = ["LogDirFailureHandler"]


class LogDirFailureHandler:
    def __init__(
        self,
        channel: LogDirFailureChannel,
        replica_manager: ReplicaManager,
        zk: NodeZkPort,
        halt: Callable[[str], None],
        halt_on_failure: bool,
    ) -> None:
        self.channel = channel
        self.rm = replica_manager
        self.zk = zk
        self.halt = halt
        self.halt_on_failure = halt_on_failure

    async def run(self) -> None:
        while True:
            log_dir = await self.channel.take_next_offline_log_dir()
            if self.halt_on_failure:
                reason = f"Halting broker because dir {log_dir} is offline"
                rm_log.critical(reason)
                self.halt(reason)
                return
            if not await self.handle_log_dir_failure(log_dir):
                return

    async def handle_log_dir_failure(self, log_dir: Path) -> bool:
        """`ReplicaManager.handleLogDirFailure`; False when no log dir is left (broker halted)."""
        rm, lm = self.rm, self.rm.log_manager
        if not lm.is_log_dir_online(log_dir):
            return True
        rm_log.warning(f"Stopping serving replicas in dir {log_dir}")
        offline = sorted(tp for tp, lg in lm.logs.items() if lg.dir.parent == log_dir)
        rm.mark_partitions_offline(offline)
        rm_log.warning(
            f"Broker {rm.broker_id} stopped fetcher for partitions "
            f"{','.join(f'{t}-{p}' for t, p in offline)} and stopped moving logs for partitions  "
            f"because they are in the failed log directory {log_dir}."
        )
        if not lm.handle_log_dir_failure(log_dir):  # it logged the fatal message
            dirs = ", ".join(str(d) for d in lm.log_dirs)
            self.halt(f"Shutdown broker because all log dirs in {dirs} have failed")
            return False
        await asyncio.to_thread(propagate_log_dir_event, self.zk, rm.broker_id)
        rm_log.warning(f"Stopped serving replicas in dir {log_dir}")
        return True
