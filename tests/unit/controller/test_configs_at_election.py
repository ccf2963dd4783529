"""ELECT-6: the controller reads topic configs from ZooKeeper when it elects (ring: tests, unit).

ZkPartitionStateMachine.collectUncleanLeaderElectionState@2.5.1 calls `getLogConfigs` for the
partitions with no live ISR member, so a topic-level `unclean.leader.election.enable` written
before a controller failover (no config-change notification) applies under the next controller.
Story (in-memory ZooKeeper, deterministic): brokers 1 (first controller), 2, 3, 4; u-0 = [2, 3];
3 dies (ISR [2]) and comes back outside the ISR; the config is written; the controller and then 2
die, so a controller that never saw any notification elects for u-0.
"""

from __future__ import annotations

import pytest

from reference_controller import zkdata as zd
from tests.unit.controller.harness import Cluster

pytestmark = pytest.mark.unit
UNCLEAN = "unclean.leader.election.enable"


def story(config: dict[str, str] | bytes | None, **broker_overrides: str) -> Cluster:
    cluster = Cluster(False, **broker_overrides)
    cluster.start(1)
    cluster.start(2, 3, 4)
    assert cluster.controller().broker_id == 1
    cluster.create_topic("u", {0: [2, 3]})
    cluster.kill(3)
    lai, _ = cluster.state("u", 0)
    assert (lai.leader, lai.leader_epoch, lai.isr) == (2, 1, (2,))
    cluster.start(3)  # back, outside the ISR (nobody fetches in this harness)
    if config is not None:
        data = config if isinstance(config, bytes) else zd.encode_topic_config(config)
        assert cluster.admin.set_data(zd.config_topic_path("u"), data, -1).ok
    cluster.kill(1)  # failover: the new controller never saw a notification
    assert cluster.controller().broker_id in (2, 3, 4)
    lai, _ = cluster.state("u", 0)
    assert (lai.leader, lai.leader_epoch, lai.isr) == (2, 1, (2,))
    cluster.kill(2)  # the last ISR member dies
    return cluster


@pytest.mark.parametrize("value", ["true", "TRUE", " true "])
def test_a_topic_override_written_before_failover_elects_the_out_of_sync_replica(value: str) -> None:
    cluster = story({UNCLEAN: value})
    lai, controller_epoch = cluster.state("u", 0)
    assert (lai.leader, lai.isr) == (3, (3,))
    assert lai.leader_epoch in (2, 3)  # +1, or +2 when 2 was the controller (§11)
    found = cluster.zk.get(zd.CONTROLLER_EPOCH)
    assert found is not None
    assert controller_epoch == int(found[0] or b"0") >= 2  # written by a controller after the failover


@pytest.mark.parametrize(
    "config",
    [
        None,
        {UNCLEAN: "false"},
        {},
        {UNCLEAN: "yes"},
        b'{"version":1,"config":{"unclean.leader.election.enable":true}}',
    ],
    ids=["absent", "false", "no-override", "not-a-boolean", "not-a-string"],
)
def test_without_a_valid_true_override_the_partition_stays_leaderless_with_its_isr(
    config: dict[str, str] | bytes | None,
) -> None:
    cluster = story(config)
    lai, _ = cluster.state("u", 0)
    assert (lai.leader, lai.isr) == (-1, (2,))


def test_the_broker_default_applies_when_the_topic_has_no_override() -> None:
    cluster = story({}, **{UNCLEAN: "true"})
    lai, _ = cluster.state("u", 0)
    assert (lai.leader, lai.isr) == (3, (3,))


def test_a_topic_override_false_beats_a_broker_default_true() -> None:
    cluster = story({UNCLEAN: "false"}, **{UNCLEAN: "true"})
    lai, _ = cluster.state("u", 0)
    assert (lai.leader, lai.isr) == (-1, (2,))


@pytest.mark.parametrize("data", [b"not json", b'{"version":1}', b'{"version":1,"config":[]}'])
def test_an_undecodable_config_reads_as_no_override_like_kafka(data: bytes) -> None:
    """ConfigEntityZNode.decode: `Json.parseBytes` ⇒ None, or no `config` object ⇒ empty properties."""
    assert story(data, **{UNCLEAN: "true"}).state("u", 0)[0].leader == 3
    assert story(data).state("u", 0)[0].leader == -1
