"""The split topology: the reference controller as its own process beside broker-only reference
nodes (``reference-split``), on a real ZooKeeper with real processes, and through the gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import catalogue
from cluster.cluster import Cluster
from cluster.server_pair import ServerPair
from cluster.targets import REPO_ROOT, load_target
from conformance.ahead import cluster_on
from harness.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.integration


@pytest.fixture
def split_cluster(zk_server: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    cluster = cluster_on(load_target("reference-split"), zk_server, zk_chroot, tmp_path)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


def test_each_node_is_a_broker_only_process_and_a_controller_process(split_cluster: Cluster) -> None:
    cluster = split_cluster
    cid = cluster.wait_controller()
    for bid, node in cluster.nodes.items():
        assert isinstance(node.proc, ServerPair), bid
        assert node.proc.broker.poll() is None
        assert node.proc.controller.poll() is None
        # the broker runs broker-only; the controller process has the node's broker id
        assert "reference.controller.enable=false" in node.config_path.read_text(encoding="utf-8")
        controller_props = node.controller_config_path.read_text(encoding="utf-8")
        assert f"broker.id={bid}" in controller_props
        assert "reference.controller.enable" not in controller_props
    # /controller is owned by the controller process's session, not by its broker's
    stat = cluster.zk.exists("/controller")
    assert stat is not None
    assert stat.ephemeralOwner == cluster.controller_session(cid) != cluster.broker_session(cid)


def test_killing_a_node_kills_its_controller_and_the_controller_moves(split_cluster: Cluster) -> None:
    cluster = split_cluster
    cid = cluster.wait_controller()
    epoch = cluster.controller_epoch()
    assert epoch is not None
    pair = cluster.nodes[cid].proc
    assert isinstance(pair, ServerPair)
    cluster.kill(cid)
    assert pair.controller.poll() is not None
    new = cluster.wait_controller(not_in=[cid])
    assert new != cid
    assert cluster.controller_epoch() == (epoch[0] + 1, epoch[1] + 1)


def test_the_gate_on_the_split_topology(tmp_path: Path) -> None:
    results = tmp_path / "r"
    env = {k: v for k, v in os.environ.items() if k != "KZK_LAUNCHER"}
    out = subprocess.run(
        [sys.executable, "-m", "conformance", "--target", "reference-split", "--areas", "EPOCH,SHUTDOWN",
         "-n", "0", "--results-dir", str(results)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    cert: dict[str, Any] = json.loads((results / "certificate.json").read_text(encoding="utf-8"))
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-2000:]
    na = catalogue.not_applicable("split")
    assert cert["selection"]["topology"] == "split"
    assert set(cert["selection"]["not_applicable"]) == {
        i for i in catalogue.ids_in_areas(["SHUTDOWN"]) if i in na
    }
    assert {b for b, v in cert["verdicts"].items() if v["verdict"] == "n/a"} == set(
        cert["selection"]["not_applicable"]
    )
    assert all(v["verdict"] == "pass" for b, v in cert["verdicts"].items() if b.startswith("EPOCH-")), cert[
        "verdicts"
    ]
    assert cert["conformant"] is True
