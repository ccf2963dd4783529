"""ZooKeeper standalone and a 3-node ensemble as containers, with pause/kill/restart
(ring: tests, integration).

Also the docker launcher's handle semantics: ``pid`` is the container's main process on the host,
pause is the cgroup freezer (the server keeps its socket but answers nothing), kill is SIGKILL.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from harness.containers.launcher import DockerHandle, DockerLauncher
from harness.zookeeper import FourLetterWordError, ZooKeeperEnsemble, ZooKeeperServer
from tests.containers.docker_helpers import inspect

pytestmark = pytest.mark.integration


def _client(connect: str) -> KazooClient:
    client = KazooClient(hosts=connect, timeout=10.0)
    client.start(timeout=30.0)
    return client


def test_standalone_in_a_container_pause_kill_restart(no_leftovers: None) -> None:
    server = ZooKeeperServer(name="ctr-standalone", launcher=DockerLauncher())
    with server:
        handle = server._jvm
        assert isinstance(handle, DockerHandle)
        name = handle.name
        assert inspect(name, "{{.HostConfig.NetworkMode}}") == "host"
        assert inspect(name, "{{.Config.User}}") == f"{os.getuid()}:{os.getgid()}"
        assert inspect(name, '{{index .Config.Labels "kzk.owner.pid"}}') == str(os.getpid())
        # pid: the host pid of the container's main process, which is the ZooKeeper JVM
        pid = server.pid
        assert pid is not None
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[0].endswith(b"java")
        assert b"org.apache.zookeeper.server.ZooKeeperServerMain" in cmdline
        # the data dir is the host's: the transaction log appears there
        client = _client(server.connect_string)
        client.create("/survives", b"v1")
        client.stop()
        client.close()
        assert any(server.txn_log_dir.glob("log.*"))
        # pause: frozen, still running, answers nothing; unpause: answers again
        server.pause()
        assert inspect(name, "{{.State.Paused}}") == "true"
        assert handle.poll() is None
        with pytest.raises(FourLetterWordError):
            server.four_letter("ruok", timeout_s=1.0)
        server.resume()
        assert server.four_letter("ruok") == "imok"
        # kill: SIGKILL, exit 137, the container is removed
        code = server.kill()
        assert code == 128 + signal.SIGKILL
        assert "no such container" in inspect(name, "{{.State.Status}}")
        # restart on the same data dir: the znode is still there
        server.start()
        client = _client(server.connect_string)
        assert client.get("/survives")[0] == b"v1"
        client.stop()
        client.close()
        # graceful stop: SIGTERM to the JVM
        assert server.stop() in (0, 128 + signal.SIGTERM, 143)
        assert not server.is_running()


def test_ensemble_of_three_containers_survives_leader_kill_and_restart(no_leftovers: None) -> None:
    with ZooKeeperEnsemble(size=3, name="ctr-ens", launcher=DockerLauncher()) as ensemble:
        assert sorted(m or "" for m in ensemble.modes()) == ["follower", "follower", "leader"]
        client = _client(ensemble.connect_string)
        client.create("/ens", b"x")
        old = ensemble.kill_leader()
        new = ensemble.leader()
        assert new != old
        assert client.retry(client.get, "/ens")[0] == b"x"  # the client reconnects to a survivor
        ensemble.start_member(old)
        ensemble.wait_for_quorum()
        paused = ensemble.followers()[0]
        ensemble.pause_member(paused)
        assert ensemble.member(paused).mode() is None  # frozen: no answer
        client.retry(client.set, "/ens", b"y")  # the two others are a quorum
        ensemble.resume_member(paused)
        ensemble.wait_for_quorum()
        assert sorted(m or "" for m in ensemble.modes()) == ["follower", "follower", "leader"]
        assert client.retry(client.get, "/ens")[0] == b"y"
        client.stop()
        client.close()
