"""Transcript tests of the admin-API events against the in-memory ZooKeeper: ApiPartitionReassignment,
ListPartitionReassignments, admin-triggered ReplicaLeaderElection and the dynamic unclean default
(spec §13.1-13.4). Expected values are Kafka 2.5.1's, from the spec's worked examples and Kafka's
own tests (brokers 100-102 of ReassignPartitionsClusterTest are 1-3 here)."""

from __future__ import annotations

import json

import pytest

from kafkawire.api_error import ApiError
from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller.events import (
    ApiPartitionReassignment,
    ElectionResults,
    ElectionTrigger,
    ElectionType,
    ListPartitionReassignments,
    ReplicaLeaderElection,
    UncleanLeaderElectionEnable,
)
from reference_controller.controller.ports import CreateOp, SetDataOp
from reference_controller.zkdata import ReplicaAssignment
from tests.unit.controller.harness import (
    Cluster,
    Node,
    leader_and_isr_requests,
    stop_replica_requests,
    update_metadata_requests,
)

pytestmark = pytest.mark.unit
TP = TopicPartition("t", 0)
Reply = dict[TopicPartition, ApiError] | ApiError


def alter(cluster: Cluster, node: Node, *entries: tuple[tuple[str, int], tuple[int, ...] | None]) -> Reply:
    replies: list[Reply] = []
    cluster.process(
        node, ApiPartitionReassignment(tuple((TopicPartition(*tp), t) for tp, t in entries), replies.append)
    )
    assert len(replies) == 1, replies
    return replies[0]


def listed(cluster: Cluster, node: Node, partitions: frozenset[tuple[str, int]] | None = None) -> object:
    replies: list[object] = []
    wanted = None if partitions is None else frozenset(TopicPartition(*tp) for tp in partitions)
    cluster.process(node, ListPartitionReassignments(wanted, replies.append))
    assert len(replies) == 1
    return replies[0]


def elect(cluster: Cluster, node: Node, kind: ElectionType, *tps: tuple[str, int]) -> list[ElectionResults]:
    replies: list[ElectionResults] = []
    event = ReplicaLeaderElection(
        frozenset(TopicPartition(*tp) for tp in tps),
        kind,
        ElectionTrigger.ADMIN_CLIENT_TRIGGERED,
        replies.append,
    )
    cluster.process(node, event)
    return replies


def topic_writes(cluster: Cluster, since: int) -> list[dict[str, object]]:
    return [
        json.loads(op.data or b"{}")
        for t in cluster.zk.history[since:]
        for op in t.ops
        if isinstance(op, SetDataOp) and op.path == zd.topic_path("t")
    ]


def ok() -> ApiError:
    return ApiError(0, None)


# ---- ApiPartitionReassignment ----------------------------------------------------------------------
def test_a_non_controller_answers_not_controller_and_writes_nothing() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("t", {0: [1]})
    other = next(n for n in cluster.nodes.values() if not n.controller.is_active)
    before = len(cluster.zk.history)
    assert alter(cluster, other, (TP, (2,))) == ApiError.of(41)
    assert listed(cluster, other) == ApiError.of(41)
    assert cluster.zk.history[before:] == []


def test_an_api_reassignment_writes_only_the_topic_znode_then_a1_and_answers_before_completion() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("t", {0: [1]})
    node = cluster.controller()
    before, effects_before = len(cluster.zk.history), len(node.effects)
    assert alter(cluster, node, (TP, (2,))) == {TP: ok()}
    assert cluster.zk.get(zd.REASSIGN_PARTITIONS) is None
    created = [op.path for t in cluster.zk.history[before:] for op in t.ops if isinstance(op, CreateOp)]
    assert zd.REASSIGN_PARTITIONS not in created
    assert topic_writes(cluster, before) == [
        {
            "version": 2,
            "partitions": {"0": [2, 1]},
            "adding_replicas": {"0": [2]},
            "removing_replicas": {"0": [1]},
        }
    ]
    lai, _ = cluster.state("t", 0)
    assert (lai.leader, lai.leader_epoch, lai.isr) == (1, 1, (1,))  # A1, not yet B
    a1 = [
        r for r in leader_and_isr_requests(node.effects[effects_before:]) if not r.partition_states[0].is_new
    ]
    assert sorted(r.broker_id for r in a1) == [1, 2]
    assert listed(cluster, node) == {TP: ReplicaAssignment((2, 1), (2,), (1,))}
    cluster.expand_isr("t", 0, [1, 2])
    lai, _ = cluster.state("t", 0)
    assert (lai.leader, lai.leader_epoch, lai.isr) == (2, 3, (2,))
    assert cluster.topic_assignment("t")[0] == ReplicaAssignment((2,))
    assert listed(cluster, node) == {}


def test_validation_results_per_entry_and_only_valid_entries_written() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("t", {0: [1], 1: [1], 2: [1], 3: [1], 4: [1]})
    node = cluster.controller()
    before = len(cluster.zk.history)
    result = alter(
        cluster,
        node,
        (("t", 0), ()),
        (("t", 1), (1, 2, 2)),
        (("t", 2), (-1, 2)),
        (("t", 3), (7,)),
        (("t", 4), None),
        (("nosuch", 0), (1,)),
        (("nosuch", 1), (7,)),
    )
    assert isinstance(result, dict)
    assert {tp: e.error for tp, e in result.items()} == {
        ("t", 0): 39, ("t", 1): 39, ("t", 2): 39, ("t", 3): 39, ("t", 4): 85,
        ("nosuch", 0): 3, ("nosuch", 1): 39,
    }  # fmt: skip
    assert result[TopicPartition("t", 0)].message == "Empty replica list specified in partition reassignment."
    assert result[TopicPartition("t", 1)].message == (
        "Duplicate replica ids in partition reassignment replica list: ArrayBuffer(1, 2, 2)"
    )
    assert result[TopicPartition("t", 2)].message == "Invalid broker id in replica list: ArrayBuffer(-1, 2)"
    assert result[TopicPartition("t", 3)].message == (
        "Replica assignment has brokers that are not alive. Replica list: ArrayBuffer(7), live broker list: "
        "Set(1, 2)"
    )
    assert result[TopicPartition("t", 4)] == ApiError.of(85)
    assert result[TopicPartition("nosuch", 0)] == ApiError(3, "The partition does not exist.")
    assert cluster.zk.history[before:] == []


def test_cancellation_reverts_to_the_original_replicas_in_rs_order() -> None:
    """ReassignPartitionsClusterTest.shouldBeAbleToCancelThroughApi: [1,2] → [3,2], cancel."""
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.create_topic("t", {0: [1, 2]})
    node = cluster.controller()
    assert alter(cluster, node, (TP, (3, 2))) == {TP: ok()}
    assert cluster.topic_assignment("t")[0] == ReplicaAssignment((3, 2, 1), (3,), (1,))
    before, effects_before = len(cluster.zk.history), len(node.effects)
    assert alter(cluster, node, (TP, None)) == {TP: ok()}
    plain = {"version": 2, "partitions": {"0": [2, 1]}, "adding_replicas": {}, "removing_replicas": {}}
    assert topic_writes(cluster, before) == [plain, plain]
    lai, _ = cluster.state("t", 0)
    assert (lai.leader, lai.leader_epoch, lai.isr) == (1, 2, (1, 2))
    stops = [(r.broker_id, r.delete_partitions) for r in stop_replica_requests(node.effects[effects_before:])]
    assert stops == [(3, False), (3, True)]
    assert listed(cluster, node) == {}
    assert alter(cluster, node, (TP, None)) == {TP: ApiError.of(85)}


def test_the_same_target_again_bumps_the_epoch_without_a_topic_write() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.create_topic("t", {0: [1]})
    node = cluster.controller()
    alter(cluster, node, (TP, (2,)))
    before, effects_before = len(cluster.zk.history), len(node.effects)
    assert alter(cluster, node, (TP, (2,))) == {TP: ok()}
    assert topic_writes(cluster, before) == []
    assert cluster.state("t", 0)[0].leader_epoch == 2
    assert all(
        not s.is_new
        for r in leader_and_isr_requests(node.effects[effects_before:])
        for s in r.partition_states
    )


def test_a_different_target_is_rebased_on_the_original_replicas_and_stops_the_old_adding_one() -> None:
    """testCancelAndSetSomeReassignments, tp1: [1] → [2] then → [3] writes [3,1] and stops 2."""
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.create_topic("t", {0: [1]})
    node = cluster.controller()
    alter(cluster, node, (TP, (2,)))
    effects_before = len(node.effects)
    assert alter(cluster, node, (TP, (3,))) == {TP: ok()}
    assert cluster.topic_assignment("t")[0] == ReplicaAssignment((3, 1), (3,), (1,))
    stops = [(r.broker_id, r.delete_partitions) for r in stop_replica_requests(node.effects[effects_before:])]
    assert stops == [(2, False), (2, True)]


def test_the_api_removes_its_partitions_from_the_znode_and_rewrites_it_whenever_it_exists() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.create_topic("t", {0: [1], 1: [1], 2: [1]})
    node = cluster.controller()
    cluster.admin.create(
        CreateOp(
            zd.REASSIGN_PARTITIONS,
            zd.encode_reassignment({TopicPartition("t", 0): [2], TopicPartition("t", 1): [2]}),
        )
    )
    cluster.run()
    assert alter(cluster, node, (TP, (3,))) == {TP: ok()}
    found = cluster.zk.get(zd.REASSIGN_PARTITIONS)
    assert found is not None
    assert zd.decode_reassignment(found[0]) == {("t", 1): [2]}
    assert cluster.topic_assignment("t")[0] == ReplicaAssignment((3, 1), (3,), (1,))
    version = found[1].version
    empty = ApiError(39, "Empty replica list specified in partition reassignment.")
    assert alter(cluster, node, (("t", 2), ())) == {("t", 2): empty}
    again = cluster.zk.get(zd.REASSIGN_PARTITIONS)
    assert again is not None
    assert (again[0], again[1].version) == (found[0], version + 1)  # rewritten, content unchanged


def test_an_unparsable_znode_is_deleted_by_the_next_api_reassignment() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("t", {0: [1]})
    node = cluster.controller()
    cluster.admin.create(CreateOp(zd.REASSIGN_PARTITIONS, b"{not json"))
    cluster.run()
    assert cluster.zk.get(zd.REASSIGN_PARTITIONS) is not None
    assert alter(cluster, node, (TP, None)) == {TP: ApiError.of(85)}
    assert cluster.zk.get(zd.REASSIGN_PARTITIONS) is None


def test_a_znode_created_later_supersedes_the_api_reassignment() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.create_topic("t", {0: [1]})
    node = cluster.controller()
    alter(cluster, node, (TP, (2,)))
    cluster.admin.create(CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TP: [3]})))
    cluster.run()
    assert cluster.topic_assignment("t")[0] == ReplicaAssignment((3, 1), (3,), (1,))
    cluster.expand_isr("t", 0, [1, 3])
    assert cluster.topic_assignment("t")[0] == ReplicaAssignment((3,))
    assert cluster.zk.get(zd.REASSIGN_PARTITIONS) is None


def test_a_new_controller_resumes_an_api_reassignment_from_the_topic_znode_alone() -> None:
    cluster = Cluster()
    cluster.start(9, 1, 2)
    cluster.create_topic("t", {0: [1]})
    alter(cluster, cluster.controller(), (TP, (2,)))
    assert cluster.state("t", 0)[0].leader_epoch == 1
    before = len(cluster.zk.history)
    cluster.kill(9)
    new = cluster.controller()
    assert topic_writes(cluster, before) == []
    assert cluster.state("t", 0)[0].leader_epoch == 2  # one bump at the failover
    assert zd.partition_state_path("t", 0) in new.client.data_watches
    assert listed(cluster, new) == {TP: ReplicaAssignment((2, 1), (2,), (1,))}
    cluster.expand_isr("t", 0, [1, 2])
    assert cluster.topic_assignment("t")[0] == ReplicaAssignment((2,))


def test_list_named_partitions_omits_unknown_and_idle_ones() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("t", {0: [1], 1: [1]})
    node = cluster.controller()
    alter(cluster, node, (TP, (2,)))
    named = frozenset({TP, ("t", 1), ("nosuch", 0)})
    assert listed(cluster, node, named) == {TP: ReplicaAssignment((2, 1), (2,), (1,))}


# ---- ElectLeaders (AdminClientTriggered) ---------------------------------------------------------------
def test_preferred_admin_election_answers_per_partition_and_never_touches_the_znode() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("t", {0: [1, 2], 1: [2, 1]})
    cluster.kill(1)
    cluster.start(1)
    cluster.expand_isr("t", 0, [2, 1])
    node = cluster.controller()
    reads_before = len(cluster.zk.reads)
    effects_before = len(node.effects)
    [result] = elect(cluster, node, ElectionType.PREFERRED, ("t", 0), ("t", 1), ("nosuch", 0))
    assert result == {
        ("t", 0): 1,
        ("t", 1): ApiError.of(84),
        ("nosuch", 0): ApiError(3, "The partition does not exist."),
    }
    assert not any(path == zd.PREFERRED_REPLICA_ELECTION for _, _, path in cluster.zk.reads[reads_before:])
    assert cluster.state("t", 0)[0].leader == 1
    assert update_metadata_requests(node.effects[effects_before:])


def test_preferred_admin_election_of_a_preferred_replica_outside_the_isr_fails_with_80() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.create_topic("t", {0: [1, 2]})
    cluster.kill(1)
    cluster.start(1)
    node = cluster.controller()
    [result] = elect(cluster, node, ElectionType.PREFERRED, TP)
    strategy = "PreferredReplicaPartitionLeaderElectionStrategy"
    assert result == {TP: ApiError(80, f"Failed to elect leader for partition t-0 under strategy {strategy}")}


def test_unclean_admin_election_ignores_the_configs_and_needs_a_dead_leader() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.create_topic("t", {0: [2, 3], 1: [1, 3]})
    cluster.expand_isr("t", 0, [2])
    cluster.kill(2)
    node = cluster.controller()
    assert cluster.state("t", 0)[0].leader == -1
    [result] = elect(cluster, node, ElectionType.UNCLEAN, ("t", 0), ("t", 1))
    assert result == {("t", 0): 3, ("t", 1): ApiError.of(84)}
    lai, _ = cluster.state("t", 0)
    assert (lai.leader, lai.isr) == (3, (3,))


def test_a_partition_without_leadership_is_never_answered() -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.create_topic("t", {0: [2]})  # no live replica: no state znode
    node = cluster.controller()
    assert elect(cluster, node, ElectionType.PREFERRED, TP) == []


def test_a_non_controller_answers_not_controller_per_partition_with_a_null_message() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    other = next(n for n in cluster.nodes.values() if not n.controller.is_active)
    [result] = elect(cluster, other, ElectionType.PREFERRED, TP)
    assert result == {TP: ApiError(41, None)}


# ---- the dynamic unclean default (ELECT-9) -------------------------------------------------------------
class DynamicDefault:
    def __init__(self) -> None:
        self.value = False

    def unclean_leader_election_enable(self) -> bool:
        return self.value


def test_unclean_leader_election_enable_uses_the_dynamic_default() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.create_topic("t", {0: [2, 3]})
    cluster.expand_isr("t", 0, [2])
    cluster.kill(2)
    node = cluster.controller()
    dynamic = DynamicDefault()
    node.controller.dynamic_config = dynamic
    cluster.process(node, UncleanLeaderElectionEnable())
    assert cluster.state("t", 0)[0].leader == -1
    dynamic.value = True
    cluster.process(node, UncleanLeaderElectionEnable())
    lai, _ = cluster.state("t", 0)
    assert (lai.leader, lai.isr) == (3, (3,))
