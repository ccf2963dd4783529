"""What the admin APIs decide before the controller acts (ring: decisions — pure).

AlterPartitionReassignments (KafkaController.scala@2.5.1 L1593-1628, spec §13.1.4): each entry
with a target is validated on its own, in this order, every failure INVALID_REPLICA_ASSIGNMENT (39)
with Kafka's message (Scala prints the request's replica list as an `ArrayBuffer`):

| # | condition                                                | message starts                          |
|---|----------------------------------------------------------|-----------------------------------------|
| 1 | empty list                                               | Empty replica list specified in …       |
| 2 | a broker id twice                                        | Duplicate replica ids in … ArrayBuffer( |
| 3 | a negative id                                            | Invalid broker id in replica list: …    |
| 4 | an *added* replica (target − ORS) not registered or      | Replica assignment has brokers that are |
|   | shutting down (original replicas are not checked)        | not alive. Replica list: …              |

ElectLeaders (L1747-1759, §13.3.3 step 5): PREFERRED elects iff the leader is not the first
assigned replica; UNCLEAN iff the leader is -1 or not a live broker.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kafkawire.api_error import ApiError
from kafkawire.errors import Errors
from reference_controller.zkdata import NO_LEADER, ReplicaAssignment

PARTITION_DOES_NOT_EXIST = "The partition does not exist."


def scala_buffer(values: Sequence[int]) -> str:
    """A Scala `ArrayBuffer`'s `toString`, as Kafka's messages print replica lists."""
    return f"ArrayBuffer({', '.join(str(v) for v in values)})"


def scala_set(values: Collection[int]) -> str:
    """A Scala `Set`'s `toString` (Kafka's is in hash order; sorted here)."""
    return f"Set({', '.join(str(v) for v in sorted(values))})"


def validate_replicas(
    current: ReplicaAssignment, target: Sequence[int], live_broker_ids: Collection[int]
) -> ApiError | None:
    """`validateReplicas`: None when the target may be applied."""
    if not target:
        return _invalid("Empty replica list specified in partition reassignment.")
    if len(set(target)) != len(target):
        return _invalid(
            f"Duplicate replica ids in partition reassignment replica list: {scala_buffer(target)}"
        )
    if any(r < 0 for r in target):
        return _invalid(f"Invalid broker id in replica list: {scala_buffer(target)}")
    adding = current.reassign_to(target).adding
    if not set(adding) <= set(live_broker_ids):
        return _invalid(
            f"Replica assignment has brokers that are not alive. Replica list: {scala_buffer(adding)}, "
            f"live broker list: {scala_set(live_broker_ids)}"
        )
    return None


def _invalid(message: str) -> ApiError:
    return ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, message)


def reassignment_result(code: int) -> ApiError:
    """The ApiError `maybeTriggerPartitionReassignment` gives each partition it was handed."""
    if code == Errors.NONE:
        return ApiError(Errors.NONE, None)
    if code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
        return ApiError(code, PARTITION_DOES_NOT_EXIST)
    return ApiError.of(code)


def needs_preferred_election(leader: int, assignment: Sequence[int]) -> bool:
    return leader != assignment[0]


def needs_unclean_election(leader: int, live_broker_ids: Collection[int]) -> bool:
    return leader == NO_LEADER or leader not in live_broker_ids
