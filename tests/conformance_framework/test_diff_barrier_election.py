"""The barrier's view of a preferred election that Kafka 2.5.1 leaves pending (real ZooKeeper)."""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient

from conformance.diff.barrier import _election_stuck

pytestmark = pytest.mark.integration

ELECTION = "/admin/preferred_replica_election"


def _elect(zk: KazooClient, *tps: tuple[str, int]) -> None:
    body = {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in tps]}
    zk.create(ELECTION, json.dumps(body).encode(), makepath=True)


def test_an_election_naming_a_partition_without_state_is_left_by_kafka(zk_client: KazooClient) -> None:
    """s1-284 of seed 1: t0's only replica is a broker that never registered, so its partitions
    have no state znode; Kafka's election event throws on them and the znode stays."""
    zk_client.create("/brokers/topics/t0/partitions/0/state", b"{}", makepath=True)
    _elect(zk_client, ("t0", 0))
    assert not _election_stuck(zk_client), "every named partition has a state: the controller must act"
    zk_client.delete(ELECTION)
    _elect(zk_client, ("t0", 0), ("t0", 1))
    assert _election_stuck(zk_client)


def test_an_absent_or_malformed_election_znode_is_not_taken_as_stuck(zk_client: KazooClient) -> None:
    assert not _election_stuck(zk_client)
    zk_client.create(ELECTION, b"{not json", makepath=True)
    assert not _election_stuck(zk_client)
