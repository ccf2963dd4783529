"""ADMIN-3/4/5 and ELECT-9 checks: config changes through the admin APIs (spec §13.4).

AlterConfigs/IncrementalAlterConfigs are served by the broker that receives them: its own
ZooKeeper session writes the config znode and the change notification (read from that node's
ZooKeeper request journal), and the controller only reacts to the notification. Topic configs go
through confluent-kafka's AdminClient (``broker=`` picks the receiving broker); BROKER resources
named by the empty string (the cluster default) cannot be sent by librdkafka and go as requests
built with kio (`admin_wire`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # re-exported without __all__
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)

from cluster import admin
from cluster.cluster import Cluster, ClusterFactory, wait_for
from conformance.checks import admin_wire as aw
from conformance.scenarios import create_topic, fmt, settle, wait_state, writes
from probes.zk_journal import ZkRequest

pytestmark = [
    pytest.mark.conformance,
    # AlterConfigs (the non-incremental API) is what these checks exercise on purpose: Kafka 2.5.1
    # serves it, and confluent-kafka's deprecation of its client method says nothing about that
    pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning"),
]
WRITE_OPS = ("create", "create2", "setData", "delete", "multi")
UNCLEAN = "unclean.leader.election.enable"
SET, DELETE = 0, 1


def _written(cluster: Cluster, bid: int, since: int) -> list[tuple[str, str | None, Any, str]]:
    """Broker ``bid``'s ZooKeeper writes since journal mark ``since``: (op, path, data, result)."""
    zj = cluster.zk_journal(bid)
    out: list[tuple[str, str | None, Any, str]] = []
    for req in zj.requests(op=WRITE_OPS, since=since):
        reply = zj.reply_to(req)
        result = "no reply" if reply is None else "OK" if reply.ok else f"err {reply.err}"
        out.append((req.name, req.path, _data(req), result))
    return out


def _data(req: ZkRequest) -> Any:
    raw = None if req.op is None else req.op.data
    return None if raw is None else json.loads(raw)


def _config_writes(
    entity: str, config: dict[str, str], *, first: bool = False
) -> list[tuple[str, str | None, Any, str]]:
    """AdminZkClient.changeEntityConfig's writes, as Kafka 2.5.1 sends them: setData of the config
    znode (``first``: NONODE, then its create), the create of /config/changes (NODEEXISTS) and the
    sequential notification."""
    data = {"version": 1, "config": config}
    znode = [("setData", f"/config/{entity}", data, "err -101"), ("create", f"/config/{entity}", data, "OK")]
    return [
        *(znode if first else [("setData", f"/config/{entity}", data, "OK")]),
        ("create", "/config/changes", None, "err -110"),
        ("create", "/config/changes/config_change_", {"version": 2, "entity_path": entity}, "OK"),
    ]


def _kafka_error(future: Any) -> tuple[int, str]:
    try:
        future.result(timeout=30)
    except KafkaException as exc:
        err = exc.args[0]
        return int(err.code()), str(err.str())
    return 0, ""


def _no_writes_but(cluster: Cluster, bids: tuple[int, ...], marks: dict[int, int], writer: int) -> None:
    for bid in bids:
        if bid != writer:
            got = [w for w in _written(cluster, bid, marks[bid]) if "settle" not in (w[1] or "")]
            assert not got, f"broker {bid} wrote while {writer} served the config change: {got}"


@pytest.mark.behaviour("ADMIN-3")
def test_topic_config_changes_are_written_by_the_receiving_broker(cluster: Cluster) -> None:
    cid = cluster.wait_controller()  # the fixture started every node past start-up
    create_topic(cluster, "c3", {0: [1, 2]}, config={"retention.ms": "100000"})
    other = next(b for b in cluster.broker_ids if b != cid)
    client = admin.admin_client(cluster)
    marks = {b: cluster.zk_journal(b).mark() for b in cluster.broker_ids}
    resource = ConfigResource(
        "TOPIC", "c3", set_config={"cleanup.policy": "compact", "min.insync.replicas": "2"}
    )
    _kafka_error(client.alter_configs([resource], broker=other)[resource])
    # AlterConfigs: exactly the request's entries (retention.ms is dropped), then the notification
    want = {"cleanup.policy": "compact", "min.insync.replicas": "2"}
    assert cluster.get_json("/config/topics/c3") == {"version": 1, "config": want}
    assert _written(cluster, other, marks[other]) == _config_writes("topics/c3", want), cluster.zk_journal(
        other
    ).dump(marks[other])
    changes = [c for c in cluster.zk.get_children("/config/changes") if c.startswith("config_change_")]
    assert all(len(c) == len("config_change_") + 10 for c in changes), changes
    # IncrementalAlterConfigs: the stored set with SET and DELETE applied
    marks = {b: cluster.zk_journal(b).mark() for b in cluster.broker_ids}
    ops = [
        ConfigEntry("min.insync.replicas", "1", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("segment.ms", "100000", incremental_operation=AlterConfigOpType.SET),
    ]
    resource = ConfigResource("TOPIC", "c3", incremental_configs=ops)
    assert _kafka_error(client.incremental_alter_configs([resource], broker=other)[resource]) == (0, "")
    want = {"min.insync.replicas": "1", "segment.ms": "100000"}
    assert cluster.get_json("/config/topics/c3") == {"version": 1, "config": want}
    assert _written(cluster, other, marks[other]) == _config_writes("topics/c3", want)
    # ValidateOnly and refused changes write nothing
    marks = {b: cluster.zk_journal(b).mark() for b in cluster.broker_ids}
    refused = {
        "validate only": (ConfigResource("TOPIC", "c3", set_config={"retention.ms": "5"}), True, 0),
        "unknown key": (ConfigResource("TOPIC", "c3", set_config={"no.such.config": "1"}), False, 40),
        "bad value": (ConfigResource("TOPIC", "c3", set_config={UNCLEAN: "maybe"}), False, 42),
        "topic not in ZooKeeper": (
            ConfigResource("TOPIC", "nosuch", set_config={"retention.ms": "5"}),
            False,
            -1,
        ),
    }
    for what, (res, validate_only, code) in refused.items():
        got = _kafka_error(client.alter_configs([res], broker=other, validate_only=validate_only)[res])
        assert got[0] == code, f"AlterConfigs ({what}): {got}, Kafka 2.5.1 answers {code}"
    err, message = aw.alter_configs(cluster, other, aw.TOPIC, "nosuch", {"retention.ms": "5"})
    assert (err, message) == (-1, 'Topic "nosuch" does not exist.'), (err, message)
    assert aw.alter_configs(cluster, other, aw.TOPIC, "c3", {UNCLEAN: "maybe"}) == (
        42,
        "Invalid config value for resource ConfigResource(type=TOPIC, name='c3'): Invalid value maybe for "
        "configuration unclean.leader.election.enable: Expected value to be either true or false",
    )
    assert aw.alter_configs(cluster, other, aw.TOPIC, "c3", {"no.such.config": "1"}) == (
        40,
        "Unknown topic config name: no.such.config",
    )
    assert cluster.get_json("/config/topics/c3") == {"version": 1, "config": want}
    assert _written(cluster, other, marks[other]) == [], "refused or validate-only changes wrote"
    # the controller does not write in reaction to a notification that enables nothing
    records = len(cluster.history())
    settle(cluster, cid)
    late = [
        (r, op)
        for r, op in writes(cluster.history()[records:])
        if not (op.path or "").startswith(("/brokers/topics/settle", "/config/topics/settle"))
    ]
    assert not late, "writes after the config changes:\n" + fmt([r for r, _ in late])


@pytest.mark.behaviour("ADMIN-4")
def test_broker_configs_go_to_the_named_broker_or_the_cluster_default(cluster: Cluster) -> None:
    cid = cluster.wait_controller()  # the fixture started every node past start-up
    a, b = [x for x in cluster.broker_ids if x != cid][:2]
    entries = [("log.retention.bytes", SET, "1048576"), ("custom.config.of.a.plugin", SET, "x")]
    stored = {"log.retention.bytes": "1048576", "custom.config.of.a.plugin": "x"}
    marks = {x: cluster.zk_journal(x).mark() for x in cluster.broker_ids}
    records = len(cluster.history())
    # broker a's own id, sent to another broker: refused, nothing written
    assert aw.incremental_alter_configs(cluster, b, aw.BROKER, str(a), entries) == (
        42,
        f"Unexpected broker id, expected {b}, but received {a}",
    )
    assert aw.alter_configs(cluster, b, aw.BROKER, str(a), dict(stored)) == (
        42,
        f"Unexpected broker id, expected {b}, but received {a}",
    )
    assert not writes(cluster.history()[records:]), "a refused BROKER resource wrote"
    # to broker a itself: /config/brokers/<a>, written by a
    assert aw.incremental_alter_configs(cluster, a, aw.BROKER, str(a), entries) == (0, None)
    assert cluster.get_json(f"/config/brokers/{a}") == {"version": 1, "config": stored}
    assert _written(cluster, a, marks[a]) == _config_writes(f"brokers/{a}", stored, first=True)
    _no_writes_but(cluster, cluster.broker_ids, marks, a)
    # the empty name (cluster default) through AlterConfigs, accepted by any broker
    marks = {x: cluster.zk_journal(x).mark() for x in cluster.broker_ids}
    assert aw.alter_configs(cluster, b, aw.BROKER, "", {"log.retention.bytes": "2097152"}) == (0, None)
    default = {"log.retention.bytes": "2097152"}
    assert cluster.get_json("/config/brokers/<default>") == {"version": 1, "config": default}
    assert _written(cluster, b, marks[b]) == _config_writes("brokers/<default>", default, first=True)
    _no_writes_but(cluster, cluster.broker_ids, marks, b)
    # refused broker configs: Kafka's INVALID_REQUEST with its reason, nothing written
    marks = {x: cluster.zk_journal(x).mark() for x in cluster.broker_ids}
    refused = {
        "broker.id": ("3", "Cannot update these configs dynamically: Set(broker.id)"),
        UNCLEAN: (
            "maybe",
            f"Invalid value maybe for configuration {UNCLEAN}: Expected value to be either true or false",
        ),
        "listeners": (
            "PLAINTEXT://127.0.0.1:1",
            "Cannot update these configs at default cluster level, broker id must be specified: "
            "Set(listeners)",
        ),
    }
    for key, (value, reason) in refused.items():
        got = aw.incremental_alter_configs(cluster, b, aw.BROKER, "", [(key, SET, value)])
        assert got == (
            42,
            f"Invalid config value for resource ConfigResource(type=BROKER, name=''): {reason}",
        ), got
    assert aw.incremental_alter_configs(cluster, b, aw.BROKER, "nan", entries) == (
        42,
        "Broker id must be an integer, but it is: nan",
    )
    for x in cluster.broker_ids:
        assert _written(cluster, x, marks[x]) == [], f"broker {x} wrote for a refused BROKER resource"


@pytest.mark.behaviour("ADMIN-5")
def test_describe_configs_reads_the_override_at_request_time_on_any_broker(cluster: Cluster) -> None:
    cid = cluster.wait_controller()
    create_topic(cluster, "d5", {0: [1, 2]})
    client = admin.admin_client(cluster)
    for bid in cluster.broker_ids:
        (err, _), configs = aw.describe_topic_config(cluster, bid, "d5", ["retention.ms"])
        assert (err, configs) == (0, {"retention.ms": ("604800000", 5)}), (bid, err, configs)
    for value in ("123456", "654321"):
        resource = ConfigResource("TOPIC", "d5", set_config={"retention.ms": value})
        assert _kafka_error(client.alter_configs([resource], broker=cid)[resource]) == (0, "")
        for bid in cluster.broker_ids:  # right after the response: every broker reads ZooKeeper
            (err, _), configs = aw.describe_topic_config(
                cluster, bid, "d5", ["retention.ms", "cleanup.policy"]
            )
            assert (err, configs) == (0, {"retention.ms": (value, 1), "cleanup.policy": ("delete", 5)}), (
                f"broker {bid} describes d5 as {err} {configs} after AlterConfigs retention.ms={value}"
            )
    described = client.describe_configs([ConfigResource("TOPIC", "d5")])
    entries = next(iter(described.values())).result(timeout=30)
    source = entries["retention.ms"].source  # librdkafka's DYNAMIC_TOPIC_CONFIG is Kafka's TOPIC_CONFIG (1)
    assert (entries["retention.ms"].value, getattr(source, "value", source)) == ("654321", 1), entries[
        "retention.ms"
    ]
    for bid in cluster.broker_ids:
        assert aw.describe_topic_config(cluster, bid, "nosuch") == ((3, None), {})


def _unclean_scenario(cluster: Cluster, topics: dict[str, dict[str, str]]) -> tuple[int, int, int]:
    """DynamicBrokerReconfigurationTest.testUncleanLeaderElectionEnable's set-up for each topic of
    ``topics`` (its config): replicas [leader, follower] on brokers other than the controller; the
    follower stops (leaves the ISR), then the leader; the follower starts again. The partitions
    are then leaderless with ISR [leader] and a live replica outside it."""
    cid = cluster.wait_controller()
    leader, follower = [b for b in cluster.broker_ids if b != cid][:2]
    for topic, config in topics.items():
        create_topic(cluster, topic, {0: [leader, follower]}, config=config)
    cluster.stop(follower)
    for topic in topics:
        wait_state(cluster, topic, 0, lambda s: s["isr"] == [leader], f"ISR [{leader}]")
    cluster.stop(leader)
    cluster.start([follower])
    for topic in topics:
        wait_state(cluster, topic, 0, lambda s: s["leader"] == -1 and s["isr"] == [leader], "leaderless")
    settle(cluster, cid, among=(cid, follower))
    for topic in topics:
        st = cluster.partition_state(topic, 0)
        assert st is not None, f"{topic}-0 has no state znode"
        assert st["leader"] == -1, f"{topic}-0 elected with unclean election disabled: {st}"
    return cid, leader, follower


@pytest.mark.behaviour("ELECT-9")
def test_cluster_default_unclean_true_elects_the_offline_partitions(cluster_factory: ClusterFactory) -> None:
    """DynamicBrokerReconfigurationTest.testUncleanLeaderElectionEnable (2.5.1 L633-690): the
    cluster-wide default set through IncrementalAlterConfigs elects the live follower; a topic
    override false keeps its partition clean."""
    cluster = cluster_factory(4)
    cid, leader, follower = _unclean_scenario(cluster, {"u1": {}, "u2": {UNCLEAN: "false"}})
    spare = next(b for b in cluster.broker_ids if b not in (cid, leader, follower))
    assert aw.incremental_alter_configs(cluster, spare, aw.BROKER, "", [(UNCLEAN, SET, "true")]) == (0, None)
    st = wait_state(cluster, "u1", 0, lambda s: s["leader"] == follower, f"follower {follower} elected")
    assert st["isr"] == [follower], st
    wait_for(
        lambda: "Unclean leader election has been enabled by default" in cluster.log_tail(cid, lines=400),
        cluster.deadline(10),
        f"controller {cid} to log that unclean election is enabled by default",
    )
    settle(cluster, cid, among=(cid, follower, spare))
    u2 = cluster.partition_state("u2", 0)
    assert u2 is not None, "u2-0 has no state znode"
    assert u2["leader"] == -1, f"u2 has unclean.leader.election.enable=false but: {u2}"


@pytest.mark.behaviour("ELECT-9")
def test_a_per_broker_unclean_true_counts_only_on_the_controller(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(4)
    cid, leader, follower = _unclean_scenario(cluster, {"u3": {}})
    spare = next(b for b in cluster.broker_ids if b not in (cid, leader, follower))
    assert aw.incremental_alter_configs(cluster, spare, aw.BROKER, str(spare), [(UNCLEAN, SET, "true")]) == (
        0,
        None,
    )
    settle(cluster, cid, among=(cid, follower, spare))
    st = cluster.partition_state("u3", 0)
    assert st is not None, "u3-0 has no state znode"
    assert st["leader"] == -1, f"broker {spare}'s own override elected u3-0: {st}"
    assert aw.incremental_alter_configs(cluster, cid, aw.BROKER, str(cid), [(UNCLEAN, SET, "true")]) == (
        0,
        None,
    )
    st = wait_state(cluster, "u3", 0, lambda s: s["leader"] == follower, f"follower {follower} elected")
    assert st["isr"] == [follower], st


def _entries(client: Any, resource: ConfigResource) -> dict[str, str | None]:
    described = client.describe_configs([resource])
    return {name: entry.value for name, entry in next(iter(described.values())).result(timeout=30).items()}


def _op(name: str, value: str | None, kind: Any) -> ConfigEntry:
    return ConfigEntry(name, value, incremental_operation=kind)


@pytest.mark.behaviour("ADMIN-3", "ADMIN-4", "ADMIN-5")
def test_incremental_alter_configs_kafka_ports(cluster: Cluster) -> None:
    """PlaintextAdminIntegrationTest.testValidIncrementalAlterConfigs, testInvalidIncrementalAlterConfigs,
    testIncrementalAlterConfigsDeleteAndSetBrokerConfigs and testIncrementalAlterConfigsDeleteBrokerConfigs
    (2.5.1 L1635-1888), through confluent-kafka as Kafka's tests use their AdminClient."""
    cluster.wait_controller()
    client = admin.admin_client(cluster)
    t1, t2 = "incremental-alter-configs-topic-1", "incremental-alter-configs-topic-2"
    create_topic(cluster, t1, {0: [1]}, config={"retention.ms": "60000000", "cleanup.policy": "compact"})
    create_topic(cluster, t2, {0: [2]})
    r1, r2 = ConfigResource("TOPIC", t1), ConfigResource("TOPIC", t2)

    def alter(ops: dict[str, list[ConfigEntry]], validate_only: bool = False) -> dict[str, tuple[int, str]]:
        resources = [ConfigResource("TOPIC", t, incremental_configs=o) for t, o in ops.items()]
        futures = client.incremental_alter_configs(resources, validate_only=validate_only)
        return {res.name: _kafka_error(f) for res, f in futures.items()}

    assert alter(
        {
            t1: [_op("flush.ms", "1000", AlterConfigOpType.SET),
                 _op("cleanup.policy", "delete", AlterConfigOpType.APPEND),
                 _op("retention.ms", "", AlterConfigOpType.DELETE)],
            t2: [_op("min.cleanable.dirty.ratio", "0.9", AlterConfigOpType.SET),
                 _op("compression.type", "lz4", AlterConfigOpType.SET)],
        }
    ) == {t1: (0, ""), t2: (0, "")}  # fmt: skip
    c1, c2 = _entries(client, r1), _entries(client, r2)
    assert (c1["flush.ms"], c1["cleanup.policy"], c1["retention.ms"]) == (
        "1000",
        "compact,delete",
        "604800000",
    )
    assert (c2["min.cleanable.dirty.ratio"], c2["compression.type"]) == ("0.9", "lz4")
    assert alter({t1: [_op("cleanup.policy", "compact", AlterConfigOpType.SUBTRACT)]}) == {t1: (0, "")}
    c1 = _entries(client, r1)
    assert (c1["cleanup.policy"], c1["flush.ms"]) == ("delete", "1000")
    assert alter({t1: [_op("cleanup.policy", "compact", AlterConfigOpType.APPEND)]}, validate_only=True) == {
        t1: (0, "")
    }
    assert _entries(client, r1)["cleanup.policy"] == "delete"
    code, message = alter({t1: [_op("compression.type", "zip", AlterConfigOpType.SET)]}, validate_only=True)[
        t1
    ]
    assert (code, message.startswith("Invalid config value for resource")) == (42, True), message
    # testInvalidIncrementalAlterConfigs; librdkafka refuses duplicate keys itself (-186, "Duplicate
    # ConfigEntry found"), so that resource goes as a request built with kio, through the controller
    cid = cluster.wait_controller()
    dup = [("min.cleanable.dirty.ratio", SET, "0.75"), ("min.cleanable.dirty.ratio", SET, "0.65"),
           ("compression.type", SET, "gzip")]  # fmt: skip
    got_dup = aw.incremental_alter_configs(cluster, cid, aw.TOPIC, t1, dup)
    assert got_dup == (42, "Error due to duplicate config keys : min.cleanable.dirty.ratio"), got_dup
    assert alter({t2: [_op("min.cleanable.dirty.ratio", "0.7", AlterConfigOpType.SET)]}) == {t2: (0, "")}
    c1, c2 = _entries(client, r1), _entries(client, r2)
    assert (c1["min.cleanable.dirty.ratio"], c1["compression.type"], c2["min.cleanable.dirty.ratio"]) == (
        "0.5",
        "producer",
        "0.7",
    )
    got = alter(
        {t1: [_op("compression.type", "gzip", AlterConfigOpType.APPEND)],
         t2: [_op("compression.type", "snappy", AlterConfigOpType.SUBTRACT)]}
    )  # fmt: skip
    assert got == {
        t1: (42, "Config value append is not allowed for config key: compression.type"),
        t2: (42, "Config value subtract is not allowed for config key: compression.type"),
    }
    code, message = alter({t1: [_op("min.cleanable.dirty.ratio", "1.1", AlterConfigOpType.SET)]})[t1]
    assert (code, message.startswith("Invalid config value for resource")) == (42, True), message
    # testIncrementalAlterConfigsDeleteAndSetBrokerConfigs / ...DeleteBrokerConfigs on broker 1
    broker = ConfigResource("BROKER", "1")
    rates = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
    alter_dir = "replica.alter.log.dirs.io.max.bytes.per.second"

    def alter_broker(ops: list[ConfigEntry]) -> None:
        res = ConfigResource("BROKER", "1", incremental_configs=ops)
        assert _kafka_error(client.incremental_alter_configs([res])[res]) == (0, "")

    def broker_values() -> tuple[str | None, ...]:
        entries = _entries(client, broker)
        return tuple(entries.get(k, "") for k in (*rates, alter_dir))

    alter_broker([_op(rates[0], "123", AlterConfigOpType.SET), _op(rates[1], "456", AlterConfigOpType.SET)])
    wait_for(lambda: broker_values() == ("123", "456", ""), cluster.deadline(10), "the rates just set")
    alter_broker(
        [_op(rates[0], "", AlterConfigOpType.DELETE), _op(rates[1], "654", AlterConfigOpType.SET),
         _op(alter_dir, "987", AlterConfigOpType.SET)]
    )  # fmt: skip
    wait_for(lambda: broker_values() == ("", "654", "987"), cluster.deadline(10), "the rates just modified")
    alter_broker([_op(k, "", AlterConfigOpType.DELETE) for k in (*rates, alter_dir)])
    wait_for(lambda: broker_values() == ("", "", ""), cluster.deadline(10), "the rates just deleted")
