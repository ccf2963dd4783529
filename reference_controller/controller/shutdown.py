"""Controlled shutdown (ring: core).

`doControlledShutdown` (KafkaController.scala@2.5.1 L1107-1165, spec §6.10): reply
STALE_CONTROLLER_EPOCH (11) when not active, STALE_BROKER_EPOCH (77) for an older broker epoch;
for an unknown broker UNKNOWN_SERVER_ERROR (-1) when the request carries an epoch (Kafka's lookup
of the cached epoch throws) and BROKER_NOT_AVAILABLE (8) when it carries -1; else mark the broker
shutting down, move the leaderships of its replicated partitions away (controlled-shutdown
strategy), stop and remove it from the ISR of the partitions it follows, and answer with the
replicated partitions it still leads.
"""

from __future__ import annotations

from kafkawire.errors import Errors
from kafkawire.states import TopicPartition
from reference_controller.controller.common import csv
from reference_controller.controller.context import replica_of
from reference_controller.controller.decisions import elections as el
from reference_controller.controller.decisions.states import PartitionState, ReplicaState
from reference_controller.controller.events import ControlledShutdown, ControlledShutdownResult
from reference_controller.controller.handler_ports import ShutdownPort
from reference_controller.controller.ports import ControllerMovedError
from reference_controller.errors import ReferenceControllerError

UNKNOWN_BROKER_EPOCH = -1


class ControlledShutdownRejected(ReferenceControllerError):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def process_controlled_shutdown(ctl: ShutdownPort, event: ControlledShutdown) -> None:
    try:
        remaining = do_controlled_shutdown(ctl, event.broker_id, event.broker_epoch)
    except ControlledShutdownRejected as exc:
        event.reply(ControlledShutdownResult(exc.error_code))
    except ControllerMovedError:
        event.reply(ControlledShutdownResult(Errors.STALE_CONTROLLER_EPOCH))
        raise
    except Exception:
        ctl.log.exception("Error during controlled shutdown of broker %d", event.broker_id)
        event.reply(ControlledShutdownResult(Errors.UNKNOWN_SERVER_ERROR))
    else:
        event.reply(ControlledShutdownResult(0, tuple(remaining)))


def do_controlled_shutdown(ctl: ShutdownPort, broker_id: int, broker_epoch: int) -> list[TopicPartition]:
    if not ctl.is_active:
        raise ControlledShutdownRejected(
            Errors.STALE_CONTROLLER_EPOCH, "Controller moved to another broker. Aborting controlled shutdown"
        )
    ctx = ctl.context
    if broker_epoch != UNKNOWN_BROKER_EPOCH:
        if broker_id not in ctx.live_broker_epochs:
            # Kafka reads the cached epoch with Map.apply (L1115), which throws NoSuchElementException
            # for a broker it does not know: the answer is UNKNOWN_SERVER_ERROR, not the
            # BROKER_NOT_AVAILABLE of L1126, which only a request without an epoch (-1) reaches
            raise ControlledShutdownRejected(Errors.UNKNOWN_SERVER_ERROR, f"key not found: {broker_id}")
        cached = ctx.live_broker_epochs[broker_id]
        if broker_epoch < cached:
            message = (
                f"Received controlled shutdown request from an old broker epoch {broker_epoch} for broker "
                f"{broker_id}. Current broker epoch is {cached}."
            )
            ctl.log.info(message)
            raise ControlledShutdownRejected(Errors.STALE_BROKER_EPOCH, message)
    ctl.log.info("Shutting down broker %d", broker_id)
    if broker_id not in ctx.live_or_shutting_down_broker_ids:
        raise ControlledShutdownRejected(
            Errors.BROKER_NOT_AVAILABLE, f"Broker id {broker_id} does not exist."
        )
    ctx.shutting_down_broker_ids.add(broker_id)
    ctl.log.debug("All shutting down brokers: %s", csv(sorted(ctx.shutting_down_broker_ids)))
    tdm = ctl.topic_deletion_manager
    to_act_on = [
        tp
        for tp in ctx.partitions_on_broker(broker_id)
        if len(ctx.partition_replica_assignment(tp)) > 1
        and tp in ctx.partition_leadership_info
        and not tdm.is_topic_queued_up_for_deletion(tp[0])
    ]
    led = [tp for tp in to_act_on if ctx.partition_leadership_info[tp].leader_and_isr.leader == broker_id]
    followed = [tp for tp in to_act_on if tp not in led]
    ctl.partition_state_machine.handle_state_changes(
        led, PartitionState.OnlinePartition, el.ControlledShutdownPartitionLeaderElectionStrategy()
    )
    ctl.batch.new_batch()
    for tp in followed:
        ctl.batch.add_stop_replica_request_for_brokers([broker_id], tp, delete_partition=False)
    ctl.emit(ctl.batch.send_requests_to_brokers(ctx.epoch))
    ctl.replica_state_machine.handle_state_changes(
        [replica_of(tp, broker_id) for tp in followed], ReplicaState.OfflineReplica
    )
    return [
        tp
        for tp, info in ctx.partition_leadership_info.items()
        if not tdm.is_topic_queued_up_for_deletion(tp[0])
        and info.leader_and_isr.leader == broker_id
        and len(ctx.partition_replica_assignment(tp)) > 1
    ]
