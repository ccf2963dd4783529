"""Transcript: a topic deleted while a partition of it is being reassigned (Kafka 2.5.1), against the
in-memory ZooKeeper.

Kafka 2.5.1 does not halt a *first* deletion request for such a topic: ``processTopicDeletion``
(KafkaController.scala@2.5.1 L1510-1518) calls ``markTopicIneligibleForDeletion`` before
``enqueueTopicsForDeletion``, and the former only halts topics already queued
(TopicDeletionManager.scala@2.5.1 L170-177). ``completeDeleteTopic`` (L240-250) and
``ControllerContext.removeTopic`` (L276-283) leave ``/admin/reassign_partitions`` alone, so the
entry stays — also when the name is created again — until a new controller's failover finds the
partition unknown and removes it (``processZkPartitionReassignment`` L1527-1551). The chaos
checker ``admin_znodes_cleaned`` excuses exactly this (quirk ``reassignment_stranded_by_deletion``).
"""

from __future__ import annotations

import pytest

from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller.ports import CreateOp
from tests.unit.controller.harness import Cluster

pytestmark = pytest.mark.unit


def reassign_entries(cluster: Cluster) -> dict[tuple[str, int], list[int]] | None:
    found = cluster.zk.get(zd.REASSIGN_PARTITIONS)
    if found is None:
        return None
    return {tp: list(r) for tp, r in zd.decode_reassignment(found[0]).items()}


def test_deleting_a_topic_mid_reassignment_strands_its_entry_until_failover() -> None:
    cluster = Cluster(auto_delete_responses=True)
    cluster.start(1, 2, 3)
    cluster.create_topic("foo", {0: [1], 1: [1]})
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("foo", 1): [2]}))
    )
    cluster.run()
    assert cluster.topic_assignment("foo")[1].adding == (2,)  # pending: 2 never joins the ISR

    cluster.admin.create(CreateOp(zd.delete_topic_path("foo"), None))
    cluster.run()
    assert cluster.zk.get(zd.topic_path("foo")) is None  # not halted by the reassignment
    assert cluster.zk.get(zd.delete_topic_path("foo")) is None
    assert reassign_entries(cluster) == {("foo", 1): [2]}

    cluster.create_topic("foo", {0: [3]})  # the name again, smaller
    assert reassign_entries(cluster) == {("foo", 1): [2]}

    cluster.kill(cluster.controller().broker_id)  # failover: foo-1 is unknown, removed
    assert reassign_entries(cluster) is None
