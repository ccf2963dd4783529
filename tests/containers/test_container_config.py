"""The container configuration the docker launcher generates, without a daemon (ring: tests, unit).

Covers the targets' ``[container]`` recipes — including the ``kafka`` target's Apache Kafka
ZooKeeper-mode image, which cannot run on the kit's machines (no registry) — and the ``docker run``
options built from a :class:`~harness.launcher.LaunchSpec`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.targets import TargetError, load_target, parse_target
from harness.containers.launcher import ENTRYPOINT, run_options
from harness.launcher import LaunchSpec

pytestmark = pytest.mark.unit

NODE_DIR = Path("/tmp/kzk-test/cluster-0/node-2")
CONFIG = NODE_DIR / "server.properties"
LABELS = {"kzk.kit": "1", "kzk.owner.pid": "4242", "kzk.owner.start": "99"}


def node_spec(target_name: str) -> LaunchSpec:
    """What :meth:`cluster.cluster.Cluster.launch_spec` builds for node 2 under docker."""
    target = load_target(target_name)
    inside = target.render_container(CONFIG, NODE_DIR)
    return LaunchSpec(
        role="node",
        name="node-2",
        argv=target.render_command(CONFIG, NODE_DIR),
        cwd=target.render_cwd(NODE_DIR),
        log_path=NODE_DIR / "stdout.log",
        env={"PATH": "/host/venv/bin", **target.render_env(NODE_DIR)},
        mounts=[NODE_DIR],
        container_argv=inside.argv,
        container_cwd=inside.cwd,
        container_env=inside.env,
        image=inside.image,
    )


def test_kafka_target_runs_kafka_server_start_from_the_image_on_the_bind_mounted_config() -> None:
    spec = node_spec("kafka")
    assert spec.image == "kzk-kafka:2.5.1"
    opts = run_options(spec, name="kzk-node-2-1-abc", labels=LABELS, user="1000:1000")
    assert opts["command"] == ["/opt/kafka/bin/kafka-server-start.sh", str(CONFIG)]
    # the image's own entrypoint is bypassed
    assert opts["entrypoint"] == ["/bin/sh", "-c", 'exec "$@" >>"$KZK_LOG_PATH" 2>&1', "sh"]
    assert opts["environment"] == {
        "LOG_DIR": str(NODE_DIR / "logs"),
        "KAFKA_HEAP_OPTS": "-Xmx512m -Xms128m",
        "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
        "KZK_LOG_PATH": str(NODE_DIR / "stdout.log"),
    }
    # the node dir holds config, data dirs and $LOG_DIR: one same-path mount covers every probe
    assert opts["mounts"] == [str(NODE_DIR)]
    assert opts["working_dir"] == str(NODE_DIR)
    assert opts["network_mode"] == "host"
    assert opts["user"] == "1000:1000"
    assert opts["stop_signal"] == "SIGTERM"
    assert opts["labels"] == {**LABELS, "kzk.name": "node-2", "kzk.container": "kzk-node-2-1-abc"}


def test_reference_target_runs_the_kit_node_image_without_the_host_environment() -> None:
    spec = node_spec("reference")
    assert spec.image is None  # the kit's node image (or $KZK_NODE_IMAGE)
    opts = run_options(spec, name="n", labels=LABELS, user="0:0")
    assert opts["command"] == ["python3", "-m", "reference_controller.node", str(CONFIG)]
    assert opts["working_dir"] == "/opt/kit"
    assert "PATH" not in opts["environment"]  # the host's venv means nothing in the image
    assert opts["environment"]["LOG_DIR"] == str(NODE_DIR / "logs")
    assert opts["mounts"] == [str(NODE_DIR)]  # the repository is not mounted: the image has the node


def test_without_container_argv_the_host_command_cwd_and_env_are_used() -> None:
    spec = LaunchSpec(
        role="zookeeper",
        name="zk",
        argv=["java", "-cp", "/usr/share/zookeeper/x.jar", "Main", "/run/zk/zoo.cfg"],
        cwd=Path("/run/zk"),
        log_path=Path("/run/zk/logs/zk.log"),
        env={"A": "1"},
        mounts=[Path("/run/zk"), Path("/opt/kit/jars")],
    )
    opts = run_options(spec, name="kzk-zk", labels=LABELS, user="5:6")
    assert opts["command"] == list(spec.argv)
    assert opts["working_dir"] == "/run/zk"
    assert opts["environment"] == {"A": "1", "KZK_LOG_PATH": "/run/zk/logs/zk.log"}
    assert opts["mounts"] == ["/run/zk", "/run/zk/logs"]  # /opt/kit is the image's own
    assert tuple(opts["entrypoint"]) == ENTRYPOINT


def test_target_without_container_section_says_how_to_fix_it() -> None:
    target = parse_target({"name": "x", "command": ["run", "{config}"]}, "x.toml")
    with pytest.raises(TargetError, match=r"no \[container\] section.*x\.toml.*--launcher process"):
        target.render_container(CONFIG, NODE_DIR)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"command": ["run"]}, r"must pass the generated server.properties as \{config\}"),
        ({"command": ["run", "{config}"], "imag": "x"}, r"unknown key 'imag' in \[container\]; known keys:"),
        (
            {"command": ["run", "{config}"], "image_role": "broker"},
            r"image_role 'broker' unknown; valid: node",
        ),
        ("python3", r"\[container\] must be a table"),
    ],
)
def test_bad_container_section_is_refused(section: object, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        parse_target({"name": "x", "command": ["run", "{config}"], "container": section}, "x.toml")
