"""Why a check cannot hold on a split topology (conformance ring).

The reasons a check gives with ``@pytest.mark.combined_only(why)``: on a split-topology target
(a ``[controller]`` section: every node a broker-only process plus a controller process) the
check is skipped with ``why``. IDs all of whose checks need the combined topology are listed in
``catalogue/topology.toml`` and leave the selection as not applicable.
"""

from __future__ import annotations

__all__ = [
    "NO_ACTIVE_CONTROLLER_IN_A_BROKER",
    "NO_CONTROLLER_BROKER",
    "NO_CONTROLLER_ENDPOINT",
    "TWO_SESSIONS",
]

#: ZooKeeper-mode brokers look the controller up among the brokers (KafkaServer.controlledShutdown)
NO_CONTROLLER_ENDPOINT = (
    "a broker sends ControlledShutdown to the controller's broker endpoint; a controller process has none"
)
#: KafkaApis.handleCreateTopicsRequest answers NOT_CONTROLLER unless the broker's controller is active
NO_CONTROLLER_BROKER = "CreateTopics is answered by the broker whose controller is active; no broker's is"
#: KafkaController.processApiPartitionReassignment, processListPartitionReassignments and
#: preemptReplicaLeaderElection answer NOT_CONTROLLER unless the receiving broker's controller is active
NO_ACTIVE_CONTROLLER_IN_A_BROKER = (
    "the admin controller APIs (AlterPartitionReassignments, ListPartitionReassignments, ElectLeaders) are"
    " answered by the broker whose controller is active; no broker's is"
)
#: the controller and its broker share one session in Kafka; a split node has two
TWO_SESSIONS = "the +2 needs the controller and its broker to lose one ZooKeeper session together"
