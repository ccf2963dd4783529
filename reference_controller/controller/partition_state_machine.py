"""Partition state machine (ring: core).

Mirrors `ZkPartitionStateMachine` (PartitionStateMachine.scala@2.5.1): NewPartition →
OnlinePartition creates the state znodes (`initializeLeaderAndIsrForPartitions`, one fenced batch
per level), Online/Offline → OnlinePartition runs an election strategy from
`decisions.elections` and writes the result with fenced conditional sets, retrying on BADVERSION.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller import zk_client as zkc
from reference_controller.controller.context import ControllerContext, tp_str
from reference_controller.controller.decisions import elections as el
from reference_controller.controller.decisions.states import (
    VALID_PREVIOUS_PARTITION_STATES,
    PartitionState,
    is_valid_partition_transition,
    valid_previous_names,
)
from reference_controller.controller.effects import Effect
from reference_controller.controller.ports import ControllerMovedError, ZkPort
from reference_controller.controller.request_batch import ControllerBrokerRequestBatch
from reference_controller.controller.state_change_log import (
    IllegalStateException,
    StateChangeFailedException,
    StateChangeLogger,
    keeper_exception,
)
from reference_controller.errors import MalformedZnodeError
from reference_controller.zkdata import LeaderAndIsr, LeaderIsrAndControllerEpoch

P = PartitionState
log = logging.getLogger("kafka.controller.ZkPartitionStateMachine")
ElectionOutcome = LeaderAndIsr | Exception
UNCLEAN_KEY = "unclean.leader.election.enable"


def lai_str(lai: LeaderAndIsr) -> str:
    isr = ", ".join(str(r) for r in lai.isr)
    return (
        f"LeaderAndIsr(leader={lai.leader}, leaderEpoch={lai.leader_epoch}, isr=List({isr}), "
        f"zkVersion={lai.zk_version})"
    )


class PartitionStateMachine:
    def __init__(  # noqa: PLR0917 - the collaborators, as in Kafka
        self,
        controller_id: int,
        context: ControllerContext,
        zk: ZkPort,
        batch: ControllerBrokerRequestBatch,
        state_change_log: StateChangeLogger,
        emit: Callable[[list[Effect]], None],
        unclean_default: Callable[[], bool],
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self.zk = zk
        self.batch = batch
        self.scl = state_change_log
        self.emit = emit
        self.unclean_default = unclean_default

    # ---- startup --------------------------------------------------------------------------
    def startup(self) -> None:
        log.info("Initializing partition state")
        self.initialize_partition_state()
        log.info("Triggering online partition state changes")
        self.trigger_online_partition_state_change()

    def initialize_partition_state(self) -> None:
        ctx = self.context
        for tp in ctx.all_partitions():
            info = ctx.partition_leadership_info.get(tp)
            if info is None:
                ctx.partition_states[tp] = P.NewPartition
            elif ctx.is_replica_online(info.leader_and_isr.leader, tp):
                ctx.partition_states[tp] = P.OnlinePartition
            else:
                ctx.partition_states[tp] = P.OfflinePartition

    def shutdown(self) -> None:
        self.context.partition_states.clear()

    def trigger_online_partition_state_change(
        self, topic: str | None = None
    ) -> dict[TopicPartition, ElectionOutcome]:
        """All New/Offline partitions (of `topic`) not queued for deletion → Online, offline strategy."""
        partitions = [
            tp
            for tp in self.context.partitions_in_states((P.OfflinePartition, P.NewPartition))
            if (topic is None or tp[0] == topic) and not self.context.is_topic_queued_up_for_deletion(tp[0])
        ]
        return self.handle_state_changes(
            partitions, P.OnlinePartition, el.OfflinePartitionLeaderElectionStrategy(allow_unclean=False)
        )

    # ---- transitions ----------------------------------------------------------------------
    def handle_state_changes(
        self,
        partitions: Sequence[TopicPartition],
        target: PartitionState,
        strategy: el.PartitionLeaderElectionStrategy | None = None,
    ) -> dict[TopicPartition, ElectionOutcome]:
        if not partitions:
            return {}
        try:
            self.batch.new_batch()
            result = self._do_handle_state_changes(list(partitions), target, strategy)
            self.emit(self.batch.send_requests_to_brokers(self.context.epoch))
            return result
        except ControllerMovedError:
            self.batch.clear()
            log.error(  # noqa: TRY400 - logged without the stack, as in Kafka
                "Controller moved to another broker when moving some partitions to %s state", target
            )
            raise
        except Exception as exc:
            self.batch.clear()
            log.exception("Error while moving some partitions to %s state", target)
            return dict.fromkeys(partitions, exc)

    def _do_handle_state_changes(
        self,
        partitions: list[TopicPartition],
        target: PartitionState,
        strategy: el.PartitionLeaderElectionStrategy | None,
    ) -> dict[TopicPartition, ElectionOutcome]:
        ctx = self.context
        for tp in partitions:
            ctx.partition_states.setdefault(tp, P.NonExistentPartition)
        valid: list[TopicPartition] = []
        for tp in partitions:  # one pass (checkValidPartitionStateChange); no quadratic `in list`
            if is_valid_partition_transition(ctx.partition_state(tp), target):
                valid.append(tp)
            else:
                self._log_invalid_transition(tp, target)
        if target == P.OnlinePartition:
            return self._to_online(valid, strategy)
        traced = self.scl.trace_enabled
        for tp in valid:
            if traced:
                suffix = ""
                if target == P.NewPartition:
                    suffix = " with assigned replicas " + ",".join(
                        str(r) for r in ctx.partition_replica_assignment(tp)
                    )
                self.scl.trace(
                    f"Changed partition {tp_str(tp)} state from {ctx.partition_state(tp)} to {target}{suffix}"
                )
            ctx.partition_states[tp] = target
        return {}

    def _to_online(
        self, valid: list[TopicPartition], strategy: el.PartitionLeaderElectionStrategy | None
    ) -> dict[TopicPartition, ElectionOutcome]:
        ctx = self.context
        uninitialized = [tp for tp in valid if ctx.partition_state(tp) == P.NewPartition]
        to_elect = [tp for tp in valid if ctx.partition_state(tp) in (P.OfflinePartition, P.OnlinePartition)]
        traced = self.scl.trace_enabled
        for tp in self._initialize_leader_and_isr_for_partitions(uninitialized):
            if traced:
                lai = ctx.partition_leadership_info[tp].leader_and_isr
                self.scl.trace(
                    f"Changed partition {tp_str(tp)} from {ctx.partition_state(tp)} to OnlinePartition "
                    f"with state {lai_str(lai)}"
                )
            ctx.partition_states[tp] = P.OnlinePartition
        if not to_elect:
            return {}
        if strategy is None:
            raise ValueError("Election strategy is a required field when the target state is OnlinePartition")
        results = self._elect_leader_for_partitions(to_elect, strategy)
        for tp, outcome in results.items():
            if isinstance(outcome, LeaderAndIsr):
                if traced:
                    self.scl.trace(
                        f"Changed partition {tp_str(tp)} from {ctx.partition_state(tp)} to OnlinePartition "
                        f"with state {lai_str(outcome)}"
                    )
                ctx.partition_states[tp] = P.OnlinePartition
        return results

    # ---- initializeLeaderAndIsrForPartitions ----------------------------------------------
    def _initialize_leader_and_isr_for_partitions(
        self, partitions: list[TopicPartition]
    ) -> list[TopicPartition]:
        ctx = self.context
        states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for tp in partitions:
            replicas = ctx.partition_replica_assignment(tp)
            live = tuple(r for r in replicas if ctx.is_replica_online(r, tp))
            if not live:
                message = (
                    f"Controller {self.controller_id} epoch {ctx.epoch} encountered error during "
                    "state change of "
                    f"partition {tp_str(tp)} from New to Online, assigned replicas are "
                    f"[{','.join(str(r) for r in replicas)}], live brokers are "
                    f"[Set({', '.join(str(b) for b in sorted(ctx.live_broker_ids))})]. No "
                    "assigned replica is alive."
                )
                self._log_failed_state_change(
                    tp, P.NewPartition, P.OnlinePartition, StateChangeFailedException(message)
                )
                continue
            states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(live[0], 0, live, 0), ctx.epoch)
        if not states:
            return []
        try:
            responses = zkc.create_topic_partition_states_raw(self.zk, states, ctx.epoch_zk_version)
        except ControllerMovedError:
            log.error(  # noqa: TRY400 - logged without the stack, as in Kafka
                "Controller moved to another broker when trying to create the topic partition state znode"
            )
            raise
        except Exception as exc:
            for tp in states:
                self._log_failed_state_change(tp, ctx.partition_state(tp), P.NewPartition, exc)
            return []
        successful: list[TopicPartition] = []
        for tp, response in responses:
            if response.ok:
                info = states[tp]
                ctx.partition_leadership_info[tp] = info
                self.batch.add_leader_and_isr_request_for_brokers(
                    info.leader_and_isr.isr, tp, info, ctx.partition_full_replica_assignment(tp), is_new=True
                )
                successful.append(tp)
            else:
                failure = keeper_exception(response.code)
                self._log_failed_state_change(tp, P.NewPartition, P.OnlinePartition, failure)
        return successful

    # ---- electLeaderForPartitions ----------------------------------------------------------
    def _elect_leader_for_partitions(
        self, partitions: list[TopicPartition], strategy: el.PartitionLeaderElectionStrategy
    ) -> dict[TopicPartition, ElectionOutcome]:
        finished_elections: dict[TopicPartition, ElectionOutcome] = {}
        remaining = partitions
        while remaining:
            finished, remaining = self._do_elect_leader_for_partitions(remaining, strategy)
            for tp, outcome in finished.items():
                if isinstance(outcome, Exception):
                    self._log_failed_state_change(
                        tp, self.context.partition_state(tp), P.OnlinePartition, outcome
                    )
            finished_elections.update(finished)
            if remaining:
                log.info(
                    "Retrying leader election with strategy %s for partitions %s",
                    strategy,
                    ",".join(tp_str(tp) for tp in remaining),
                )
        return finished_elections

    def _do_elect_leader_for_partitions(
        self, partitions: list[TopicPartition], strategy: el.PartitionLeaderElectionStrategy
    ) -> tuple[dict[TopicPartition, ElectionOutcome], list[TopicPartition]]:
        ctx = self.context
        failed: dict[TopicPartition, ElectionOutcome] = {}
        valid: dict[TopicPartition, LeaderAndIsr] = {}
        for tp, data in zip(partitions, zkc.get_topic_partition_states_raw(self.zk, partitions), strict=True):
            decoded = zkc.decode_state(data)
            if decoded is None:
                failed[tp] = StateChangeFailedException(
                    f"LeaderAndIsr information doesn't exist for partition {tp_str(tp)} in "
                    f"{ctx.partition_state(tp)} state"
                )
            elif decoded.controller_epoch > ctx.epoch:
                failed[tp] = StateChangeFailedException(
                    f"Aborted leader election for partition {tp_str(tp)} since the LeaderAndIsr "
                    "path was already "
                    f"written by another controller. This probably means that the current controller "
                    f"{self.controller_id} went through a soft failure and another controller was "
                    "elected with "
                    f"epoch {decoded.controller_epoch}."
                )
            else:
                valid[tp] = decoded.leader_and_isr
        if not valid:
            return failed, []
        results = self._elect(valid, strategy)
        recipients: dict[TopicPartition, tuple[int, ...]] = {}
        adjusted: dict[TopicPartition, LeaderAndIsr] = {}
        for tp, result in results.items():
            if result is None or result.leader_and_isr is None:
                failed[tp] = StateChangeFailedException(
                    f"Failed to elect leader for partition {tp_str(tp)} under strategy {strategy}"
                )
            else:
                adjusted[tp] = result.leader_and_isr
                recipients[tp] = result.recipients
        finished, retry = zkc.update_leader_and_isr(self.zk, adjusted, ctx.epoch, ctx.epoch_zk_version)
        for tp, outcome in finished.items():
            if isinstance(outcome, LeaderAndIsr):
                info = LeaderIsrAndControllerEpoch(outcome, ctx.epoch)
                ctx.partition_leadership_info[tp] = info
                self.batch.add_leader_and_isr_request_for_brokers(
                    recipients[tp], tp, info, ctx.partition_full_replica_assignment(tp), is_new=False
                )
        return {**finished, **failed}, retry

    def _elect(
        self, valid: dict[TopicPartition, LeaderAndIsr], strategy: el.PartitionLeaderElectionStrategy
    ) -> dict[TopicPartition, el.ElectionResult | None]:
        ctx = self.context
        results: dict[TopicPartition, el.ElectionResult | None] = {}
        unclean = (
            self._collect_unclean_leader_election_state(valid, strategy)
            if isinstance(strategy, el.OfflinePartitionLeaderElectionStrategy)
            else {}
        )
        for tp, lai in valid.items():
            assignment = ctx.partition_full_replica_assignment(tp)
            match strategy:
                case el.OfflinePartitionLeaderElectionStrategy():
                    allowed = unclean.get(tp, False)
                    results[tp] = (
                        None
                        if allowed is None
                        else el.leader_for_offline(assignment.replicas, lai, ctx.online_replicas(tp), allowed)
                    )
                case el.ReassignPartitionLeaderElectionStrategy():
                    results[tp] = el.leader_for_reassign(
                        assignment.target_replicas, lai, ctx.online_replicas(tp)
                    )
                case el.PreferredReplicaPartitionLeaderElectionStrategy():
                    results[tp] = el.leader_for_preferred_replica(
                        assignment.replicas, lai, ctx.online_replicas(tp)
                    )
                case el.ControlledShutdownPartitionLeaderElectionStrategy():
                    results[tp] = el.leader_for_controlled_shutdown(
                        assignment.replicas,
                        lai,
                        ctx.online_replicas(tp, include_shutting_down=True),
                        frozenset(ctx.shutting_down_broker_ids),
                    )
        return results

    def _collect_unclean_leader_election_state(
        self, valid: dict[TopicPartition, LeaderAndIsr], strategy: el.OfflinePartitionLeaderElectionStrategy
    ) -> dict[TopicPartition, bool | None]:
        """Per partition without a live ISR member: unclean allowed? (None = config read failed)."""
        ctx = self.context
        result: dict[TopicPartition, bool | None] = {}
        configs: dict[str, bool | Exception] = {}
        for tp, lai in valid.items():
            if any(ctx.is_replica_online(r, tp) for r in lai.isr):
                continue
            if strategy.allow_unclean:
                result[tp] = True
                continue
            if tp[0] not in configs:
                configs[tp[0]] = self._topic_unclean_enabled(tp[0])
            enabled = configs[tp[0]]
            if isinstance(enabled, Exception):
                self._log_failed_state_change(tp, ctx.partition_state(tp), P.OnlinePartition, enabled)
                result[tp] = None
            else:
                result[tp] = enabled
        return result

    def _topic_unclean_enabled(self, topic: str) -> bool | Exception:
        """The topic's `LogConfig.uncleanLeaderElectionEnable`, read from ZooKeeper at election time
        (ELECT-6): the override, else the broker's value; an error fails the election of its
        partitions (logged as a failed state change)."""
        try:
            value = zkc.get_topic_config(self.zk, topic).get(UNCLEAN_KEY)
        except MalformedZnodeError as exc:
            return exc
        if value is None:
            return self.unclean_default()
        match value.strip().lower():  # ConfigDef BOOLEAN: trimmed, either case
            case "true":
                return True
            case "false":
                return False
            case _:
                return MalformedZnodeError(
                    zd.config_topic_path(topic),
                    None,
                    f"Invalid value {value} for configuration {UNCLEAN_KEY}: "
                    "Expected value to be either true or false",
                )

    # ---- logging --------------------------------------------------------------------------
    def _log_invalid_transition(self, tp: TopicPartition, target: PartitionState) -> None:
        current = self.context.partition_state(tp)
        exc = IllegalStateException(
            f"Partition {tp_str(tp)} should be in one of "
            f"{valid_previous_names(VALID_PREVIOUS_PARTITION_STATES[target])} states before "
            f"moving to {target} "
            f"state. Instead it is in {current} state"
        )
        self._log_failed_state_change(tp, current, target, exc)

    def _log_failed_state_change(
        self, tp: TopicPartition, current: PartitionState, target: PartitionState, cause: BaseException
    ) -> None:
        self.scl.error(
            f"Controller {self.controller_id} epoch {self.context.epoch} failed to change state "
            "for partition "
            f"{tp_str(tp)} from {current} to {target}",
            cause,
        )
