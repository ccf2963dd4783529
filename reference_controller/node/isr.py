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
   60000 ms) — `maybePropagateIsrChanges`.

Deviation: with empty logs a follower's log end offset always equals the leader's, so Kafka 2.5's
`logEndOffset != leaderEndOffset` clause would never let an idle follower leave the ISR; here a
follower that stops fetching leaves after the lag time (what issue 4 asks for).
"""

from __future__ import annotations

import asyncio
import logging
import time

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from reference_controller import zkdata
from reference_controller.node.partition import Partition, TopicPartition
from reference_controller.node.replica_manager import ReplicaManager

log = logging.getLogger("kafka.cluster.Partition")
ISR_CHANGE_PROPAGATION_CHECK_MS = 2500


class IsrManager:
    def __init__(
        self,
        zk: KazooClient,
        replica_manager: ReplicaManager,
        replica_lag_time_max_ms: int,
        blackout_ms: int,
        interval_ms: int,
    ) -> None:
        self.zk = zk
        self.rm = replica_manager
        self.lag_ms = replica_lag_time_max_ms
        self.blackout_ms = blackout_ms
        self.interval_ms = interval_ms
        self.isr_change_set: set[TopicPartition] = set()
        self.last_isr_change_ms = time.time() * 1000
        self.last_isr_propagation_ms = time.time() * 1000
        self._lock = asyncio.Lock()

    # -- periodic tasks -------------------------------------------------------------------------
    async def run_isr_expiration(self) -> None:
        while True:
            await asyncio.sleep(self.lag_ms / 2000)
            for p in self.rm.leader_partitions():
                await self.maybe_shrink_isr(p)

    async def run_isr_change_propagation(self) -> None:
        while True:
            await asyncio.sleep(ISR_CHANGE_PROPAGATION_CHECK_MS / 1000)
            await self.maybe_propagate_isr_changes()

    # -- shrink / expand ------------------------------------------------------------------------
    async def maybe_shrink_isr(self, p: Partition) -> None:
        async with self._lock:
            out = self.rm.out_of_sync_replicas(p, self.lag_ms)
            if not out or not p.is_leader:
                return
            new_isr = tuple(r for r in p.isr if r not in out)
            if not new_isr:  # Kafka asserts the ISR never becomes empty here
                return
            log.info(
                f"[Partition {p.tp[0]}-{p.tp[1]} broker={self.rm.broker_id}] Shrinking ISR from "
                f"{','.join(map(str, p.isr))} to {','.join(map(str, new_isr))}. Leader: (highWatermark: 0, "
                f"endOffset: 0). Out of sync replicas: "
                + " ".join(
                    f"(brokerId: {r}, endOffset: {p.followers[r].log_end_offset})" for r in sorted(out)
                )
                + "."
            )
            await self._update_isr(p, new_isr)

    async def maybe_expand_isr(self, tp: TopicPartition, follower: int) -> None:
        async with self._lock:
            p = self.rm.partitions.get(tp)
            if p is None or not p.is_leader or follower in p.isr or follower not in p.replicas:
                return
            new_isr = (*p.isr, follower)
            log.info(
                f"[Partition {tp[0]}-{tp[1]} broker={self.rm.broker_id}] Expanding ISR from "
                f"{','.join(map(str, p.isr))} to {','.join(map(str, new_isr))}"
            )
            await self._update_isr(p, new_isr)

    async def _update_isr(self, p: Partition, new_isr: tuple[int, ...]) -> None:
        leader_and_isr = zkdata.LeaderAndIsr(self.rm.broker_id, p.leader_epoch, new_isr, p.zk_version)
        epoch_at_start = p.leader_epoch
        version = await asyncio.to_thread(self._conditional_update, p.tp, leader_and_isr, p.controller_epoch)
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

    def _conditional_update(
        self, tp: TopicPartition, leader_and_isr: zkdata.LeaderAndIsr, controller_epoch: int
    ) -> int | None:
        """`conditionalUpdatePath` with `checkLeaderAndIsrZkData`; the new zkVersion or None."""
        path = zkdata.partition_state_path(*tp)
        data = zkdata.encode_partition_state(leader_and_isr, controller_epoch)
        try:
            stat = self.zk.set(path, data, version=leader_and_isr.zk_version)
            return int(stat.version)
        except BadVersionError:
            try:
                written, stat = self.zk.get(path)
                current = zkdata.decode_partition_state(written, stat.version, path)
            except Exception:
                return None
            wanted = zkdata.LeaderIsrAndControllerEpoch(
                zkdata.LeaderAndIsr(
                    leader_and_isr.leader, leader_and_isr.leader_epoch, leader_and_isr.isr, stat.version
                ),
                controller_epoch,
            )
            return int(stat.version) if current == wanted else None
        except NoNodeError:
            return None

    # -- propagation ----------------------------------------------------------------------------
    def record_isr_change(self, tp: TopicPartition) -> None:
        self.isr_change_set.add(tp)
        self.last_isr_change_ms = time.time() * 1000

    async def maybe_propagate_isr_changes(self) -> None:
        now = time.time() * 1000
        if self.isr_change_set and (
            self.last_isr_change_ms + self.blackout_ms < now
            or self.last_isr_propagation_ms + self.interval_ms < now
        ):
            changes = sorted(self.isr_change_set)
            self.isr_change_set.clear()
            await asyncio.to_thread(self._propagate, changes)
            self.last_isr_propagation_ms = now

    def _propagate(self, changes: list[TopicPartition]) -> None:
        path = zkdata.isr_change_path(zkdata.ISR_CHANGE_PREFIX)
        created = self.zk.create(path, zkdata.encode_isr_change(changes), sequence=True)
        log.debug(f"Added {created} for {changes}")
