"""Bad input to the admin APIs of spec §13 against a real node: Kafka 2.5.1's error codes, nothing
written, the node keeps serving (ring: integration tests)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooClient
from kio.index import load_request_schema

from kafkawire.framing import build, encode_request
from tests.node.helpers import NodeFactory, send
from tests.polling import wait_for

pytestmark = pytest.mark.integration
TOPIC, BROKER, UNKNOWN_TYPE = 2, 4, 3
SET, DELETE, APPEND = 0, 1, 2


def _answers(address: tuple[str, int], frame: bytes, timeout_s: float) -> bool:
    """Whether the node answers `frame` within `timeout_s` (False: no answer, connection open)."""
    with socket.create_connection(address, timeout=timeout_s) as s:
        s.sendall(frame)
        try:
            return len(s.recv(4)) == 4
        except TimeoutError:
            return False


def _incremental(
    address: tuple[str, int], kind: int, name: str, ops: list[tuple[str, int, str | None]]
) -> tuple[int, str | None]:
    def body(schema: type[Any]) -> Any:
        mod = __import__(schema.__module__, fromlist=["_"])
        configs = tuple(build(mod.AlterableConfig, name=k, config_operation=op, value=v) for k, op, v in ops)
        res = build(mod.AlterConfigsResource, resource_type=kind, resource_name=name, configs=configs)
        return schema(resources=(res,), validate_only=False)

    (r,) = send(address, 44, 1, body).responses
    return int(r.error_code), r.error_message


def _alter(
    address: tuple[str, int], kind: int, name: str, configs: dict[str, str | None]
) -> tuple[int, str | None]:
    def body(schema: type[Any]) -> Any:
        mod = __import__(schema.__module__, fromlist=["_"])
        entries = tuple(build(mod.AlterableConfig, name=k, value=v) for k, v in configs.items())
        res = build(mod.AlterConfigsResource, resource_type=kind, resource_name=name, configs=entries)
        return schema(resources=(res,), validate_only=False)

    (r,) = send(address, 33, 1, body).responses
    return int(r.error_code), r.error_message


def test_bad_admin_requests_get_kafkas_errors_and_write_nothing(
    node_factory: NodeFactory, zk_client: KazooClient
) -> None:
    node = node_factory.start(1)
    address = node.endpoint(zk_client)
    wait_for(lambda: zk_client.exists("/controller"), 20, "the node to become controller")
    zk_client.create("/config/topics/t", b'{"version":1,"config":{}}', makepath=True)
    zk_client.create(
        "/brokers/topics/t",
        b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}',
    )
    wait_for(lambda: zk_client.exists("/brokers/topics/t/partitions/0/state"), 20, "t-0 online")
    changes_before = zk_client.get_children("/config/changes")

    assert _alter(address, TOPIC, "t", {"retention.ms": None}) == (
        -1,
        None,
    )  # Properties.setProperty(k, null)
    assert _alter(address, UNKNOWN_TYPE, "t", {"retention.ms": "1"}) == (
        42,
        "Unexpected resource type UNKNOWN",
    )
    assert _incremental(address, TOPIC, "t", [("retention.ms", 9, "1")]) == (-1, "null")  # unknown operation
    assert _incremental(
        address, TOPIC, "t", [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)]
    ) == (
        42,
        "Error due to duplicate config keys : retention.ms",
    )
    assert _incremental(address, TOPIC, "t", [("cleanup.policy", APPEND, "compact")]) == (
        -1,
        None,
    )  # KAFKA-9644
    assert _incremental(address, TOPIC, "t", [("no.such", APPEND, "x")]) == (-1, "key not found: no.such")
    assert _incremental(address, TOPIC, "t", [("retention.ms", APPEND, "x")]) == (
        42,
        "Config value append is not allowed for config key: retention.ms",
    )
    assert _incremental(address, TOPIC, "t", [("retention.ms", SET, "soon")]) == (
        42,
        "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): Invalid value soon for "
        "configuration retention.ms: Not a number of type LONG",
    )
    assert _incremental(address, TOPIC, "bad/name", [("retention.ms", SET, "1")])[0] == 17
    assert _incremental(address, BROKER, "1", [("broker.id", SET, "2")])[0] == 42
    assert zk_client.get_children("/config/changes") == changes_before, "a refused config change wrote"
    assert zk_client.get("/config/topics/t")[0] == b'{"version":1,"config":{}}'

    # ElectLeaders with an ElectionType Kafka does not know: UNKNOWN_SERVER_ERROR for the request and
    # each named partition; with TopicPartitions null Kafka's error response itself fails: no answer
    def elect(election_type: int, named: bool) -> Callable[[type[Any]], Any]:
        def body(schema: type[Any]) -> Any:
            mod = __import__(schema.__module__, fromlist=["_"])
            tps = (build(mod.TopicPartitions, topic="t", partitions=(0,)),) if named else None
            return build(schema, election_type=election_type, topic_partitions=tps)

        return body

    resp = send(address, 43, 2, elect(2, True))
    part = resp.replica_election_results[0].partition_result[0]
    assert (int(resp.error_code), int(part.error_code), part.error_message) == (
        -1,
        -1,
        "Value 2 must be one of [PREFERRED, UNCLEAN]",
    )
    schema = load_request_schema(43, 2)
    frame = encode_request(schema, 9, "t", elect(2, False)(schema))
    assert not _answers(address, frame, 3.0), "Kafka 2.5.1 never answers this request"
    assert _answers(address, encode_request(schema, 10, "t", elect(0, True)(schema)), 10.0)
    assert node.proc.poll() is None
