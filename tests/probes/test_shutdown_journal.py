"""A broker's ControlledShutdown recorded on its inter-broker link (integration, real nodes).

With ``record_shutdowns`` every node's ``FROM_<x>`` listener sits behind a recording proxy that
journals only ControlledShutdown: the request a broker sends to the controller when it is stopped
gracefully (Kafka 2.5.1 KafkaServer.controlledShutdown: the controller's endpoint on the broker's
own inter-broker listener) and the controller's answer. Replica fetches cross the same proxies and
are not journalled. Expected values are Kafka's: one attempt answered NONE when the controller
knows the broker; when its registration is gone, three attempts answered UNKNOWN_SERVER_ERROR (-1:
KafkaController.doControlledShutdown looks the broker's epoch up first and the lookup fails), one
``controlled.shutdown.retry.backoff.ms`` apart (the kit's profile sets 0.2 s instead of 5 s).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.admin import create_topic_zk
from cluster.cluster import Cluster, wait_for
from cluster.nodeconfig import inter_broker_listener
from harness.zookeeper import ZooKeeperServer
from tests.probes.nodes import reference_cluster

pytestmark = pytest.mark.integration


@pytest.fixture
def three(zk_server: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    with reference_cluster(zk_server, zk_chroot, tmp_path, (1, 2, 3), record_shutdowns=True) as cluster:
        yield cluster


def _isr(cluster: Cluster, topic: str) -> list[int]:
    data, _ = cluster.zk.get(f"/brokers/topics/{topic}/partitions/0/state")
    return sorted(json.loads(data)["isr"])


def test_a_graceful_stop_is_journalled_and_fetches_pass_unrecorded(three: Cluster) -> None:
    cluster = three
    assert cluster.journal is not None
    cluster.start()
    c = cluster.wait_controller()
    f = next(b for b in (1, 2, 3) if b != c)
    for dest in (1, 2, 3):  # every FROM_<x> of every node, its own included, is interposed
        for source in (1, 2, 3):
            listener = inter_broker_listener(source)
            advertised = cluster.endpoint(dest, listener)[1]
            assert advertised == cluster.shutdown_proxies[(source, dest)].port
            assert cluster.bind_port(dest, listener) != advertised
    create_topic_zk(cluster, "t", {0: [c, f]})
    wait_for(lambda: cluster.zk.exists("/brokers/topics/t/partitions/0/state"), 20.0, "t's state")
    epoch = cluster.broker_epoch(f)

    cluster.stop(f)
    (asked,) = cluster.journal.requests(api="ControlledShutdown")
    assert (asked.source, asked.dest, asked.api_version) == (f, c, 3)
    assert (asked.broker_id, asked.broker_epoch) == (f, epoch)
    assert (asked.error_code, asked.remaining) == (0, ())  # f led nothing: nothing remains

    # f back: it rejoins t's ISR only by fetching from c, through c's FROM_<f> proxy
    cluster.start([f])
    wait_for(lambda: _isr(cluster, "t") == sorted((c, f)), 30.0, f"{f} back in t's ISR")
    apis = {r.api for r in cluster.journal.requests()}
    assert apis <= {"LeaderAndIsr", "UpdateMetadata", "StopReplica", "ControlledShutdown"}, apis


def test_a_broker_whose_registration_is_gone_is_refused_three_times_one_backoff_apart(
    three: Cluster,
) -> None:
    cluster = three
    assert cluster.journal is not None
    cluster.start()
    c = cluster.wait_controller()
    f = next(b for b in (1, 2, 3) if b != c)
    epoch = cluster.broker_epoch(f)
    cluster.zk.delete(f"/brokers/ids/{f}")  # the process keeps running
    mark = cluster.journal.mark()

    backoff_s = int(cluster.nodes[f].properties["controlled.shutdown.retry.backoff.ms"]) / 1000
    cluster.stop(f)
    asked = cluster.journal.requests(api="ControlledShutdown", since=mark)
    assert [(r.source, r.dest, r.broker_id, r.broker_epoch) for r in asked] == [(f, c, f, epoch)] * 3
    assert [r.error_code for r in asked] == [-1, -1, -1]
    gaps = [b.time_s - a.time_s for a, b in itertools.pairwise(asked)]
    assert all(backoff_s <= g <= backoff_s + 2.0 for g in gaps), (gaps, backoff_s)
