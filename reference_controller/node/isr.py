"""ISR maintenance by partition leaders and ISR change propagation (ring: drivers).

ISR-1, as Partition/ReplicaManager@2.5.1 (IBP < 2.7-IV2, leaders write ZooKeeper themselves):
1. every `replica.lag.time.max.ms / 2` the leader removes ISR followers whose last caught-up
   fetch is older than `replica.lag.time.max.ms` (`maybeShrinkIsr`);
2. a fetch from a follower outside the ISR that has caught up adds it (`maybeExpandIsr`);
3. the new ISR is written with a conditional setData on `…/partitions/<p>/state` at the cached
   zkVersion, keeping the leader epoch and the controller epoch of the LeaderAndIsr that made
   this broker leader (`ReplicationUtils.updateLeaderAndIsr`); on BADVERSION the znode is re-read
   and the write counts as done only if ZooKeeper already holds the same leader/epoch/ISR/
   controller epoch, otherwise it is skipped ("Cached zkVersion … not equal to that in zookeeper");
4. changed partitions are recorded and, every 2500 ms, propagated as one
   `/isr_change_notification/isr_change_<seq>` when some are pending and (the last change is older
   than the blackout, default 5000 ms, or the last propagation older than the interval, default
   60000 ms) — `maybePropagateIsrChanges`; the pending set is cleared only once the znode is
   written, and a failed run is logged and retried at the next tick (`KafkaScheduler`), so a
   ZooKeeper outage delays the notification but never loses it (chaos `partition` seed 2046: a
   lost one left every broker's ISR metadata stale).

Partition lock (Kafka's `leaderIsrUpdateLock`): Kafka writes the new ISR while holding the
partition's write lock, which `makeLeader`, `makeFollower` and `delete` also take, so a
LeaderAndIsr or StopReplica for that partition waits until the ISR write has returned — an ISR
write the leader issued while cut from ZooKeeper can never land after the partition was deleted
(and perhaps recreated under the same name) on this broker. Here the write runs in a thread and
the request handlers await `wait_for_isr_writes` for their partitions before applying anything.
A write that loses its connection in flight is resent once connected (Kafka's
`retryRequestUntilConnected`); a conditional write that had in fact applied then meets
BADVERSION and the re-read finds the same data, which counts as done. An expired session skips
the write (Kafka's `conditionalUpdatePath` returns no version for any other error).

Deviation: with empty logs a follower's log end offset always equals the leader's, so Kafka 2.5's
`logEndOffset != leaderEndOffset` clause would never let an idle follower leave the ISR; here a
follower that stops fetching leaves after the lag time (what issue 4 asks for).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable

from kafkawire.states import TopicPartition
from reference_controller import zkdata
from reference_controller.controller.ports import CreateOp, SetDataOp, ZkCode
from reference_controller.node.partition import Partition
from reference_controller.node.replica_manager import ReplicaManager
from reference_controller.node.zk_port import NodeZkPort, expect, until_sent

log = logging.getLogger("kafka.cluster.Partition")
scheduler_log = logging.getLogger("kafka.utils.KafkaScheduler")
ISR_CHANGE_PROPAGATION_CHECK_MS = 2500
RESEND_PAUSE_S = 0.05


class IsrManager:
    def __init__(
        self,
        zk: NodeZkPort,
        replica_manager: ReplicaManager,
        replica_lag_time_max_ms: int,
        blackout_ms: int,
        interval_ms: int,
        *,
        wall_clock_ms: Callable[[], float] = lambda: time.time() * 1000,
    ) -> None:
        self.zk = zk
        self.wall_clock_ms = wall_clock_ms
        self.rm = replica_manager
        self.lag_ms = replica_lag_time_max_ms
        self.blackout_ms = blackout_ms
        self.interval_ms = interval_ms
        self.isr_change_set: set[TopicPartition] = set()
        self.last_isr_change_ms = wall_clock_ms()
        self.last_isr_propagation_ms = wall_clock_ms()
        self._lock = asyncio.Lock()
        self._in_flight: dict[TopicPartition, asyncio.Future[None]] = {}

    # -- periodic tasks -------------------------------------------------------------------------
    async def run_isr_expiration(self) -> None:
        while True:
            await asyncio.sleep(self.lag_ms / 2000)
            for p in self.rm.leader_partitions():
                await _scheduled("isr-expiration", self.maybe_shrink_isr(p))

    async def run_isr_change_propagation(self) -> None:
        while True:
            await asyncio.sleep(ISR_CHANGE_PROPAGATION_CHECK_MS / 1000)
            await _scheduled("isr-change-propagation", self.maybe_propagate_isr_changes())

    # -- shrink / expand ------------------------------------------------------------------------
    async def maybe_shrink_isr(self, p: Partition) -> None:
        async with self._lock:
            new_isr = self.shrunk_isr(p)
            if new_isr is not None:
                await self._update_isr(p, new_isr)

    async def maybe_expand_isr(self, tp: TopicPartition, follower: int) -> None:
        async with self._lock:
            expanded = self.expanded_isr(tp, follower)
            if expanded is not None:
                await self._update_isr(*expanded)

    # The decisions and what follows a write, synchronous so that a driver without threads (the
    # simulator, chaos/sim/replication.py) runs exactly these; only the ZooKeeper I/O differs.
    def shrunk_isr(self, p: Partition) -> tuple[int, ...] | None:
        """`maybeShrinkIsr`'s decision: the ISR without the followers that have not caught up for
        the lag time, or ``None`` when nothing is to be written."""
        out = self.rm.out_of_sync_replicas(p, self.lag_ms)
        if not out or not p.is_leader:
            return None
        new_isr = tuple(r for r in p.isr if r not in out)
        if not new_isr:  # Kafka asserts the ISR never becomes empty here
            return None
        log.info(
            f"[Partition {p.tp[0]}-{p.tp[1]} broker={self.rm.broker_id}] Shrinking ISR from "
            f"{','.join(map(str, p.isr))} to {','.join(map(str, new_isr))}. Leader: (highWatermark: 0, "
            f"endOffset: 0). Out of sync replicas: "
            + " ".join(f"(brokerId: {r}, endOffset: {p.followers[r].log_end_offset})" for r in sorted(out))
            + "."
        )
        return new_isr

    def expanded_isr(self, tp: TopicPartition, follower: int) -> tuple[Partition, tuple[int, ...]] | None:
        """`maybeExpandIsr`'s decision after a caught-up fetch: the partition and its ISR with
        ``follower`` added, or ``None``."""
        p = self.rm.partitions.get(tp)
        if p is None or not p.is_leader or follower in p.isr or follower not in p.replicas:
            return None
        new_isr = (*p.isr, follower)
        log.info(
            f"[Partition {tp[0]}-{tp[1]} broker={self.rm.broker_id}] Expanding ISR from "
            f"{','.join(map(str, p.isr))} to {','.join(map(str, new_isr))}"
        )
        return p, new_isr

    def isr_write(self, p: Partition, new_isr: tuple[int, ...]) -> tuple[zkdata.LeaderAndIsr, int]:
        """What the leader writes (`ReplicationUtils.updateLeaderAndIsr`): its leader epoch and
        cached zkVersion, and the controller epoch of the LeaderAndIsr that made it leader."""
        state = zkdata.LeaderAndIsr(self.rm.broker_id, p.leader_epoch, new_isr, p.zk_version)
        return state, p.controller_epoch

    def isr_written(
        self, p: Partition, new_isr: tuple[int, ...], version: int | None, epoch_at_start: int
    ) -> None:
        """The write of ``new_isr`` returned ``version`` (``None``: not done): take the new ISR and
        zkVersion and record the change for propagation, unless the partition moved meanwhile."""
        if p.leader_epoch != epoch_at_start or not p.is_leader:
            return  # a LeaderAndIsr arrived meanwhile; it is the newer truth
        if version is None:
            log.info(
                f"[Partition {p.tp[0]}-{p.tp[1]} broker={self.rm.broker_id}] Cached zkVersion {p.zk_version} "
                "not equal to that in zookeeper, skip updating ISR"
            )
            return
        p.isr, p.zk_version = new_isr, version
        log.info(
            f"[Partition {p.tp[0]}-{p.tp[1]} broker={self.rm.broker_id}] ISR updated to "
            f"[{','.join(map(str, new_isr))}] and zkVersion updated to [{version}]"
        )
        self.record_isr_change(p.tp)

    async def wait_for_isr_writes(self, partitions: Iterable[TopicPartition]) -> None:
        """Return once none of ``partitions`` has an ISR write in flight (the request handlers'
        side of Kafka's per-partition `leaderIsrUpdateLock`). The caller must apply its changes
        without awaiting anything in between, so that no new write can start meanwhile."""
        wanted = set(partitions)
        while pending := [f for tp, f in self._in_flight.items() if tp in wanted]:
            await asyncio.wait(pending)

    async def _update_isr(self, p: Partition, new_isr: tuple[int, ...]) -> None:
        leader_and_isr, controller_epoch = self.isr_write(p, new_isr)
        epoch_at_start = p.leader_epoch
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._in_flight[p.tp] = done
        try:
            version = await asyncio.to_thread(
                conditional_update, self.zk, p.tp, leader_and_isr, controller_epoch, _pause
            )
        finally:
            del self._in_flight[p.tp]
            done.set_result(None)
        self.isr_written(p, new_isr, version, epoch_at_start)

    # -- propagation ----------------------------------------------------------------------------
    def record_isr_change(self, tp: TopicPartition) -> None:
        self.isr_change_set.add(tp)
        self.last_isr_change_ms = self.wall_clock_ms()

    async def maybe_propagate_isr_changes(self) -> None:
        now = self.wall_clock_ms()
        changes = self.isr_changes_due(now)
        if changes is not None:
            await asyncio.to_thread(propagate_isr_changes, self.zk, changes, _pause)
            self.isr_changes_propagated(changes, now)

    def isr_changes_due(self, now: float) -> list[TopicPartition] | None:
        """The changes to propagate now (`maybePropagateIsrChanges`), or ``None``."""
        if isr_change_propagation_due(
            pending=bool(self.isr_change_set),
            now_ms=now,
            last_change_ms=self.last_isr_change_ms,
            last_propagation_ms=self.last_isr_propagation_ms,
            blackout_ms=self.blackout_ms,
            interval_ms=self.interval_ms,
        ):
            return sorted(self.isr_change_set)
        return None

    def isr_changes_propagated(self, changes: list[TopicPartition], now: float) -> None:
        """``changes`` were written as one notification at ``now``."""
        self.isr_change_set.difference_update(changes)  # Kafka clears the set after the write
        self.last_isr_propagation_ms = now


def isr_change_propagation_due(
    *,
    pending: bool,
    now_ms: float,
    last_change_ms: float,
    last_propagation_ms: float,
    blackout_ms: int,
    interval_ms: int,
) -> bool:
    """`maybePropagateIsrChanges`' choice: something is pending and either no ISR changed for the
    blackout (changes have settled) or the last propagation is older than the interval (changes
    keep coming)."""
    return pending and (last_change_ms + blackout_ms < now_ms or last_propagation_ms + interval_ms < now_ms)


# -- the ZooKeeper writes (blocking: run in a worker thread) ---------------------------------------
def conditional_update(
    zk: NodeZkPort,
    tp: TopicPartition,
    leader_and_isr: zkdata.LeaderAndIsr,
    controller_epoch: int,
    pause: Callable[[], None],
) -> int | None:
    """`conditionalUpdatePath` with `checkLeaderAndIsrZkData`; the new zkVersion or None."""
    path = zkdata.partition_state_path(*tp)
    data = zkdata.encode_partition_state(leader_and_isr, controller_epoch)
    result = until_sent(lambda: zk.set(SetDataOp(path, data, leader_and_isr.zk_version)), pause)
    if result.ok and result.stat is not None:
        return result.stat.version
    if result.code == ZkCode.BADVERSION:
        return _version_if_already_written(zk, path, leader_and_isr, controller_epoch)
    if result.code != ZkCode.NONODE:  # session expired or client closed: no version, as Kafka
        log.debug(f"ISR write for {tp[0]}-{tp[1]} not done: {result.code.name}")
    return None


def _version_if_already_written(
    zk: NodeZkPort, path: str, leader_and_isr: zkdata.LeaderAndIsr, controller_epoch: int
) -> int | None:
    """`checkLeaderAndIsrZkData`: the znode's version when it already holds what we meant to write."""
    try:
        written = zk.get(path)
        if written.stat is None:
            return None
        current = zkdata.decode_partition_state(written.data, written.stat.version, path)
    except Exception:
        return None
    wanted = zkdata.LeaderIsrAndControllerEpoch(
        zkdata.LeaderAndIsr(
            leader_and_isr.leader, leader_and_isr.leader_epoch, leader_and_isr.isr, written.stat.version
        ),
        controller_epoch,
    )
    return written.stat.version if current == wanted else None


def propagate_isr_changes(zk: NodeZkPort, changes: list[TopicPartition], pause: Callable[[], None]) -> str:
    """`propagateIsrChanges`: one persistent sequential znode, resent after a connection loss
    (`retryRequestUntilConnected`); any other failure raises and leaves the changes pending."""
    op = CreateOp(zkdata.isr_change_path(zkdata.ISR_CHANGE_PREFIX), zkdata.encode_isr_change(changes),
                  sequential=True)  # fmt: skip
    created = expect(until_sent(lambda: zk.create(op), pause)).created_path
    log.debug(f"Added {created} for {changes}")
    return str(created)


def _pause() -> None:
    time.sleep(RESEND_PAUSE_S)


async def _scheduled(name: str, task: Awaitable[None]) -> None:
    """One run of a periodic task, as `KafkaScheduler` runs them: an exception is logged at ERROR
    ("Uncaught exception in scheduled task") and the schedule goes on."""
    try:
        await task
    except Exception:
        scheduler_log.exception(f"Uncaught exception in scheduled task '{name}'")
