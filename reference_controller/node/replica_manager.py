"""Broker-side handling of the controller's requests, as ReplicaManager@2.5.1 (ring: drivers).

Fencing (spec §7.3): a LeaderAndIsr/UpdateMetadata/StopReplica whose controller epoch is older
than the latest seen is refused whole with STALE_CONTROLLER_EPOCH (11) and changes nothing; in a
LeaderAndIsr each partition whose leader epoch is not newer than the broker's gets a
per-partition 11, and a partition whose replicas do not include this broker gets
UNKNOWN_TOPIC_OR_PARTITION (3). A partition whose log is in an offline log dir (LOGDIR-5,
`log_dir_failure.py`), or whose log cannot be created, gets KAFKA_STORAGE_ERROR (56) and stays
offline (`HostedPartition.Offline`) until restart; StopReplica(delete) for it also answers 56.
Broker-epoch fencing (§7.4) is `is_stale_broker_epoch`, applied
by the API layer before any of this, as KafkaApis does.

Departure from Kafka 2.5 (issue 8, robustness): a LeaderAndIsr partition whose topic name is
illegal (`Topic.validate`: empty, "." or "..", over 249 characters, a character other than ASCII
alphanumerics, '.', '_' and '-' — so `a/b` and `../escape` too) gets INVALID_TOPIC_EXCEPTION (17)
with a WARN state-change line and touches no file; the other partitions of the request are
served. Kafka's controller never sends such names (topic creation validates them) and Kafka's
broker does not check them, so Kafka would create a directory from the name; the log manager
also refuses any partition directory that does not resolve directly inside its log dir.

The replica manager runs on the node's asyncio loop only (no locks needed); ZooKeeper writes
for the ISR live in `isr.py`, fetching from leaders in `fetcher.py`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from kafkawire.errors import Errors
from kafkawire.states import LeaderAndIsrPartitionState, LiveLeader, TopicPartition
from reference_controller.logutil import STATE_CHANGE_LOGGER, TRACE, trace
from reference_controller.node.admin import topic_name_error
from reference_controller.node.leader_epoch import EpochCheck, leader_epoch_check
from reference_controller.node.log_dir_failure import KafkaStorageError
from reference_controller.node.log_manager import LogManager
from reference_controller.node.metadata_cache import BrokerEndpoints, MetadataCache, PartitionState
from reference_controller.node.partition import FollowerState, Partition

log = logging.getLogger("kafka.server.ReplicaManager")


def now_ms() -> float:
    return time.monotonic() * 1000


class FetcherPort(Protocol):
    def add_partitions(
        self, partitions: dict[TopicPartition, tuple[int, int]], hints: list[LiveLeader]
    ) -> None:
        """Fetch `tp` from leader id (value[0]) at leader epoch value[1]."""

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None: ...


@dataclass(frozen=True)
class _RequestIds:
    """Who sent a LeaderAndIsr request: every state-change log line names them."""

    correlation_id: int
    controller_id: int
    controller_epoch: int


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        metadata_cache: MetadataCache,
        fetcher: FetcherPort,
        clock_ms: Callable[[], float] = now_ms,
    ) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.metadata_cache = metadata_cache
        self.fetcher = fetcher
        self.clock_ms = clock_ms
        self.controller_epoch = 0
        self.broker_epoch = -1
        self.partitions: dict[TopicPartition, Partition] = {}
        self.offline_partitions: set[TopicPartition] = set()
        # KafkaServer's `isShuttingDown`, shared with ReplicaManager: set before the controlled
        # shutdown request, so the become-follower transitions it causes add no fetcher.
        self.is_shutting_down = False
        self.state_change = _PrefixedLogger(
            logging.getLogger(STATE_CHANGE_LOGGER), f"[Broker id={broker_id}] "
        )

    def is_stale_broker_epoch(self, request_broker_epoch: int) -> bool:
        """KIP-380: BrokerEpoch != -1 and older than this broker's current czxid."""
        return request_broker_epoch != -1 and request_broker_epoch < self.broker_epoch

    # -- LeaderAndIsr --------------------------------------------------------------------------
    def become_leader_or_follower(
        self,
        correlation_id: int,
        controller_id: int,
        controller_epoch: int,
        states: list[LeaderAndIsrPartitionState],
        leaders: list[LiveLeader],
    ) -> tuple[int, dict[TopicPartition, int]]:
        """Returns (top-level error, per-partition errors) as `becomeLeaderOrFollower` does.

        1. Trace every partition state received.
        2. A request from an older controller epoch is refused whole (STALE_CONTROLLER_EPOCH).
        3. Admit each partition (legal name, online log dir, newer leader epoch, a replica here).
        4. Make each admitted partition leader or follower (a storage error takes it offline).
        5. Move the fetchers: none for leaders, one per follower (not while shutting down).
        6. Drop the placeholders a refused partition left, and checkpoint.
        """
        ids = _RequestIds(correlation_id, controller_id, controller_epoch)
        for st in states if self.state_change.logger.isEnabledFor(TRACE) else ():  # built only if logged
            self.state_change.trace(
                f"Received LeaderAndIsr request {st} correlation id {correlation_id} from controller "
                f"{controller_id} epoch {controller_epoch}"
            )
        if controller_epoch < self.controller_epoch:
            self.state_change.warn(
                f"Ignoring LeaderAndIsr request from controller {controller_id} with correlation id "
                f"{correlation_id} since its controller epoch {controller_epoch} is old. "
                f"Latest known controller epoch is {self.controller_epoch}"
            )
            return Errors.STALE_CONTROLLER_EPOCH, {st.tp: Errors.STALE_CONTROLLER_EPOCH for st in states}
        self.controller_epoch = controller_epoch
        errors: dict[TopicPartition, int] = {}
        accepted = [st for st in states if self._admit(st, ids, errors)]
        accepted = [st for st in accepted if self._become_leader_or_follower(st, ids, errors)]
        self._update_fetchers(accepted, leaders, ids)
        self._drop_placeholders(states)
        self.log_manager.checkpoint()
        return Errors.NONE, errors

    def _admit(
        self, st: LeaderAndIsrPartitionState, ids: _RequestIds, errors: dict[TopicPartition, int]
    ) -> bool:
        """Step 3 for one partition: True if admitted, else its error recorded and logged."""
        sc = self.state_change
        prefix = (
            f"Ignoring LeaderAndIsr request from controller {ids.controller_id} with correlation id "
            f"{ids.correlation_id} epoch {ids.controller_epoch} for partition {st.topic}-{st.partition}"
        )
        if (illegal := topic_name_error(st.topic)) is not None:
            sc.warn(f"{prefix} as the topic name is illegal: {illegal}")
            errors[st.tp] = Errors.INVALID_TOPIC_EXCEPTION
            return False
        if st.tp in self.offline_partitions:
            sc.warn(f"{prefix} as the local replica for the partition is in an offline log directory")
            errors[st.tp] = Errors.KAFKA_STORAGE_ERROR
            return False
        partition = self.partitions.setdefault(st.tp, Partition(st.tp, self.broker_id))
        match leader_epoch_check(st.leader_epoch, partition.leader_epoch, self.broker_id in st.replicas):
            case EpochCheck.ACCEPT:
                return True
            case EpochCheck.NOT_A_REPLICA:
                sc.warn(
                    f"{prefix} as itself is not in assigned replica list {','.join(map(str, st.replicas))}"
                )
                errors[st.tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
            case EpochCheck.OLDER:
                sc.warn(
                    f"{prefix} since its associated leader epoch {st.leader_epoch} is smaller than the "
                    f"current leader epoch {partition.leader_epoch}"
                )
                errors[st.tp] = Errors.STALE_CONTROLLER_EPOCH
            case EpochCheck.SAME:
                sc.debug(
                    f"{prefix} since its associated leader epoch {st.leader_epoch} matches the "
                    "current leader epoch"
                )
                errors[st.tp] = Errors.STALE_CONTROLLER_EPOCH
        return False

    def _become_leader_or_follower(
        self, st: LeaderAndIsrPartitionState, ids: _RequestIds, errors: dict[TopicPartition, int]
    ) -> bool:
        """Step 4 for one admitted partition: True if it took its role; a storage error takes the
        partition offline instead."""
        role = "leader" if st.leader == self.broker_id else "follower"
        try:
            if role == "leader":
                self._make_leader(st, ids.correlation_id, ids.controller_id, ids.controller_epoch)
            else:
                self._make_follower(st, ids.correlation_id, ids.controller_id, ids.controller_epoch)
        except KafkaStorageError as exc:
            self.state_change.error(
                f"Skipped the become-{role} state change with correlation id {ids.correlation_id} from "
                f"controller {ids.controller_id} epoch {ids.controller_epoch} for partition "
                f"{st.topic}-{st.partition} (last update controller epoch {st.controller_epoch}) since "
                f"the replica for the partition is offline due to disk error {exc}"
            )
            self.mark_partitions_offline([st.tp])
            errors[st.tp] = Errors.KAFKA_STORAGE_ERROR
            return False
        errors[st.tp] = Errors.NONE
        return True

    def _update_fetchers(
        self, accepted: list[LeaderAndIsrPartitionState], leaders: list[LiveLeader], ids: _RequestIds
    ) -> None:
        """Step 5."""
        followers = {st.tp: (st.leader, st.leader_epoch) for st in accepted if st.leader != self.broker_id}
        self.fetcher.remove_partitions(st.tp for st in accepted if st.leader == self.broker_id)
        if followers and self.is_shutting_down:
            self._skip_adding_fetchers(accepted, ids.correlation_id, ids.controller_id, ids.controller_epoch)
        elif followers:
            self.fetcher.add_partitions(followers, leaders)

    def _drop_placeholders(self, states: list[LeaderAndIsrPartitionState]) -> None:
        """Step 6: a partition created only to be refused holds no log and no leader epoch."""
        for tp in {st.tp for st in states} - self.offline_partitions:
            placeholder = self.partitions.get(tp)  # none for a rejected illegal name
            if placeholder is not None and tp not in self.log_manager.logs and placeholder.leader_epoch < 0:
                del self.partitions[tp]

    def _apply(self, p: Partition, st: LeaderAndIsrPartitionState) -> None:
        p.controller_epoch = st.controller_epoch
        p.replicas, p.adding, p.removing = st.replicas, st.adding_replicas, st.removing_replicas
        p.leader, p.leader_epoch, p.zk_version = st.leader, st.leader_epoch, st.zk_version
        self.log_manager.get_or_create_log(st.tp, st.is_new)

    def _make_leader(self, st: LeaderAndIsrPartitionState, cid: int, ctrl: int, epoch: int) -> None:
        sc = self.state_change
        p = self.partitions[st.tp]
        sc.trace(
            f"Handling LeaderAndIsr request correlationId {cid} from controller {ctrl} epoch {epoch} "
            f"starting the become-leader transition for partition {st.topic}-{st.partition}"
        )
        previous_epoch, was_leader = p.leader_epoch, p.is_leader
        self._apply(p, st)
        p.isr = st.isr
        log.info(
            f"[Partition {st.topic}-{st.partition} broker={self.broker_id}] {st.topic}-{st.partition} "
            "starts at "
            f"leader epoch {st.leader_epoch} from offset 0 with high watermark 0. "
            f"Previous leader epoch was {previous_epoch}."
        )
        self.log_manager.assign_leader_epoch(st.tp, st.leader_epoch)
        now = self.clock_ms()
        old = p.followers if was_leader else {}
        p.followers = {}
        for r in st.replicas:
            if r == self.broker_id:
                continue
            f = FollowerState(r, last_caught_up_time_ms=now if r in st.isr else 0.0)
            if r in old:
                f.last_fetch_time_ms, f.log_end_offset = old[r].last_fetch_time_ms, old[r].log_end_offset
            p.followers[r] = f
        sc.trace(
            f"Completed LeaderAndIsr request correlationId {cid} from controller {ctrl} epoch {epoch} "
            f"for the become-leader transition for partition {st.topic}-{st.partition}"
        )

    def _make_follower(self, st: LeaderAndIsrPartitionState, cid: int, ctrl: int, epoch: int) -> None:
        sc = self.state_change
        p = self.partitions[st.tp]
        sc.trace(
            f"Handling LeaderAndIsr request correlationId {cid} from controller {ctrl} epoch {epoch} "
            f"starting the become-follower transition for partition {st.topic}-{st.partition} with "
            f"leader {st.leader}"
        )
        if st.leader not in self.metadata_cache.live_brokers:
            sc.error(
                f"Received LeaderAndIsrRequest with correlation id {cid} from controller {ctrl} epoch "
                f"{epoch} "
                f"for partition {st.topic}-{st.partition} (last update controller epoch "
                f"{st.controller_epoch}) "
                f"but cannot become follower since the new leader {st.leader} is unavailable."
            )
        self._apply(p, st)
        p.isr, p.followers = (), {}
        if self.is_shutting_down:
            return  # `_skip_adding_fetchers` logs the skip instead
        sc.trace(
            f"Started fetcher to new leader as part of become-follower request from controller {ctrl} epoch "
            f"{epoch} with correlation id {cid} for partition {st.topic}-{st.partition} with leader "
            f"{st.leader}"
        )

    def _skip_adding_fetchers(
        self, accepted: list[LeaderAndIsrPartitionState], cid: int, ctrl: int, epoch: int
    ) -> None:
        """`makeFollowers` while `isShuttingDown` (ReplicaManager.scala@2.5.1 L1475, L1492-1498): the
        fetchers of the partitions to follow are removed and no new one is added (SHUTDOWN-3)."""
        follow = [st for st in accepted if st.leader != self.broker_id]
        self.fetcher.remove_partitions(st.tp for st in follow)
        for st in follow:
            if st.leader not in self.metadata_cache.live_brokers:
                continue  # Kafka leaves it out of `partitionsToMakeFollower` (leader unavailable)
            self.state_change.trace(
                f"Skipped the adding-fetcher step of the become-follower state change with correlation id "
                f"{cid} from controller {ctrl} epoch {epoch} for partition {st.topic}-{st.partition} with "
                f"leader {st.leader} since it is shutting down"
            )

    # -- StopReplica / UpdateMetadata ----------------------------------------------------------
    def stop_replicas(
        self, controller_epoch: int, delete: bool, partitions: list[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        sc = self.state_change
        if controller_epoch < self.controller_epoch:
            sc.warn(
                f"Received stop replica request from an old controller epoch {controller_epoch}. "
                f"Latest known controller epoch is {self.controller_epoch}"
            )
            return Errors.STALE_CONTROLLER_EPOCH, {}
        self.controller_epoch = controller_epoch
        self.fetcher.remove_partitions(partitions)
        errors: dict[TopicPartition, int] = {}
        for tp in partitions:
            name = f"{tp[0]}-{tp[1]}"
            sc.trace(f"Handling stop replica (delete={str(delete).lower()}) for partition {name}")
            try:
                if delete:
                    self._delete_replica(tp, name)
            except KafkaStorageError as exc:
                sc.error(
                    f"Ignoring stop replica (delete={str(delete).lower()}) for partition {name} due to "
                    f"storage exception: {exc}"
                )
                errors[tp] = Errors.KAFKA_STORAGE_ERROR
                continue
            sc.trace(f"Finished handling stop replica (delete={str(delete).lower()}) for partition {name}")
            errors[tp] = Errors.NONE
        return Errors.NONE, errors

    def _delete_replica(self, tp: TopicPartition, name: str) -> None:
        if tp in self.offline_partitions:
            raise KafkaStorageError(f"Partition {name} is on an offline disk")
        if self.partitions.pop(tp, None) is None:
            self.state_change.trace(
                f"Ignoring stop replica (delete=true) for partition {name} as replica doesn't exist on broker"
            )
        self.log_manager.async_delete(tp)

    def mark_partitions_offline(self, partitions: Iterable[TopicPartition]) -> None:
        """`markPartitionOffline` (after stopping their fetchers): no leader/follower state left."""
        tps = list(partitions)
        self.fetcher.remove_partitions(tps)
        for tp in tps:
            self.partitions.pop(tp, None)
            self.offline_partitions.add(tp)

    def maybe_update_metadata_cache(
        self,
        correlation_id: int,
        controller_id: int,
        controller_epoch: int,
        brokers: list[BrokerEndpoints],
        states: list[tuple[TopicPartition, PartitionState]],
    ) -> int:
        if controller_epoch < self.controller_epoch:
            self.state_change.warn(
                f"Received update metadata request with correlation id {correlation_id} from an old "
                "controller "
                f"{controller_id} with epoch {controller_epoch}. Latest known controller epoch is "
                f"{self.controller_epoch}"
            )
            return Errors.STALE_CONTROLLER_EPOCH
        for tp, st in states if self.state_change.logger.isEnabledFor(TRACE) else ():
            self.state_change.trace(
                f"Cached leader info {_update_metadata_state(tp, st)} for partition {tp[0]}-{tp[1]} "
                "in response to UpdateMetadata "
                "request "
                f"sent by controller {controller_id} epoch {controller_epoch} with correlation id "
                f"{correlation_id}"
            )
        self.metadata_cache.update(controller_id, brokers, states)
        self.controller_epoch = controller_epoch
        return Errors.NONE

    # -- leader side of Fetch ------------------------------------------------------------------
    def record_follower_fetch(self, tp: TopicPartition, follower: int, fetch_offset: int) -> bool:
        """`updateFollowerFetchState`; True when the follower should join the ISR (`needsExpandIsr`)."""
        p = self.partitions.get(tp)
        if p is None or not p.is_leader or follower not in p.followers:
            return False
        now = self.clock_ms()
        f = p.followers[follower]
        leader_end_offset = self.log_manager.logs[tp].log_end_offset if tp in self.log_manager.logs else 0
        if fetch_offset >= leader_end_offset:
            f.last_caught_up_time_ms = max(f.last_caught_up_time_ms, now)
        f.last_fetch_time_ms, f.log_end_offset = now, fetch_offset
        return follower not in p.isr and fetch_offset >= 0

    def out_of_sync_replicas(self, p: Partition, max_lag_ms: int) -> set[int]:
        """`getOutOfSyncReplicas`: ISR followers not caught up within the lag time."""
        now = self.clock_ms()
        return {
            r
            for r in p.isr
            if r != self.broker_id
            and r in p.followers
            and now - p.followers[r].last_caught_up_time_ms > max_lag_ms
        }

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.is_leader]

    def shutdown(self) -> None:
        self.fetcher.remove_partitions(list(self.partitions))


def _update_metadata_state(tp: TopicPartition, st: PartitionState) -> str:
    """`UpdateMetadataPartitionState.toString` as Kafka 2.5 prints it."""

    def lst(v: tuple[int, ...]) -> str:
        return "[" + ", ".join(map(str, v)) + "]"

    return (
        f"UpdateMetadataPartitionState(topicName='{tp[0]}', partitionIndex={tp[1]}, "
        f"controllerEpoch={st.controller_epoch}, leader={st.leader}, leaderEpoch={st.leader_epoch}, "
        f"isr={lst(st.isr)}, zkVersion={st.zk_version}, replicas={lst(st.replicas)}, "
        f"offlineReplicas={lst(st.offline_replicas)})"
    )


class _PrefixedLogger:
    """Kafka's StateChangeLogger: `[Broker id=N] ` before every message."""

    def __init__(self, logger: logging.Logger, prefix: str) -> None:
        self.logger, self.prefix = logger, prefix

    def trace(self, msg: str) -> None:
        trace(self.logger, self.prefix + msg)

    def debug(self, msg: str) -> None:
        self.logger.debug(self.prefix + msg)

    def warn(self, msg: str) -> None:
        self.logger.warning(self.prefix + msg)

    def error(self, msg: str) -> None:
        self.logger.error(self.prefix + msg)
