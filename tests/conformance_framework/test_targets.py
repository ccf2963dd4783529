"""Unit: target definitions and the server.properties they generate (incl. the kafka target)."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from cluster.nodeconfig import Interpose, NodeSpec, listener_names, render_properties, server_properties
from cluster.target_schema import TARGET_KEYS, keys_markdown
from cluster.targets import (
    BUILTIN_DIR,
    KAFKA_DEFAULTS_SUFFIX,
    REPO_ROOT,
    SAFETY_DEFAULTS,
    SPEED_PROFILE,
    TargetError,
    builtin_targets,
    load_target,
    parse_target,
    profile_properties,
)

pytestmark = pytest.mark.unit


def _props(target_name: str, broker_id: int = 2, **kw: object) -> dict[str, str]:
    target = load_target(target_name)
    spec = NodeSpec(broker_id, (1, 2, 3), "127.0.0.1:2181/kzk/t1", ("/tmp/n2/data",), **kw)  # type: ignore[arg-type]
    return server_properties(spec, profile=profile_properties("2.5"), target_extra=target.extra_properties)


def test_builtin_targets_load() -> None:
    ref = load_target("reference")
    assert ref.command[1:3] == ("-m", "reference_controller.node")
    assert ref.has_probe("request_journal")
    kafka = load_target("kafka")
    assert not kafka.has_probe("request_journal")
    assert kafka.requires_env == ("KAFKA_HOME",)


def test_kafka_target_command_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKA_HOME", "/opt/kafka_2.12-2.5.1")
    kafka = load_target("kafka")
    cmd = kafka.render_command(tmp_path / "server.properties", tmp_path)
    assert cmd == ["/opt/kafka_2.12-2.5.1/bin/kafka-server-start.sh", str(tmp_path / "server.properties")]
    assert kafka.render_env(tmp_path)["LOG_DIR"] == str(tmp_path / "logs")
    assert kafka.log_path("state_change", tmp_path) == tmp_path / "logs" / "state-change.log"
    assert "does not exist" in (kafka.unavailable_reason() or "")


def test_kafka_target_unavailable_without_kafka_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    assert "KAFKA_HOME" in (load_target("kafka").unavailable_reason() or "")


def test_kafka_config_satisfies_kafka_validation_rules() -> None:
    props = _props("kafka")
    listeners = props["listeners"].split(",")
    names = [entry.split("://")[0] for entry in listeners]
    assert names == listener_names((1, 2, 3))
    assert len(set(names)) == len(names)
    advertised = [entry.split("://")[0] for entry in props["advertised.listeners"].split(",")]
    assert advertised == names
    # KafkaConfig: control plane listener differs from inter-broker, both advertised and mapped.
    assert props["inter.broker.listener.name"] == "FROM_2"
    assert props["control.plane.listener.name"] == "CTRL_2"
    mapped = dict(kv.split(":") for kv in props["listener.security.protocol.map"].split(","))
    assert set(mapped) == set(names)
    assert set(mapped.values()) == {"PLAINTEXT"}
    # port 0 everywhere: no pre-picked ports; Kafka registers the bound ports
    assert all(entry.endswith(":0") for entry in listeners)
    assert props["zookeeper.connect"].endswith("/kzk/t1")
    assert props["inter.broker.protocol.version"] == "2.5"
    assert int(props["replica.fetch.wait.max.ms"]) <= int(props["replica.lag.time.max.ms"])
    for key, value in SPEED_PROFILE.items():
        assert props[key] == value
    assert not any(k.startswith("reference.") for k in props)


def test_interposed_control_listener_advertises_the_proxy_port() -> None:
    props = _props("reference", interpose={"CTRL_1": Interpose(bind_port=40001, advertised_port=50001)})
    assert "CTRL_1://127.0.0.1:40001" in props["listeners"].split(",")
    assert "CTRL_1://127.0.0.1:50001" in props["advertised.listeners"].split(",")
    assert "CTRL_2://127.0.0.1:0" in props["advertised.listeners"].split(",")


def test_unknown_interpose_listener_rejected() -> None:
    with pytest.raises(ValueError, match="unknown listeners"):
        _props("reference", interpose={"NOPE": Interpose(1, 2)})


def test_render_properties_escapes() -> None:
    text = render_properties({"a:b": "x=y", "k": " lead\nline"}, header="generated")
    assert text.splitlines() == ["# generated", "a\\:b=x=y", "k=\\ lead\\nline"]


def test_parse_target_rejects_bad_definitions() -> None:
    with pytest.raises(TargetError, match="config"):
        parse_target({"name": "x", "command": ["run"]})
    with pytest.raises(TargetError, match="unknown key 'bogus'"):
        parse_target({"name": "x", "command": ["run", "{config}"], "bogus": 1})
    with pytest.raises(TargetError, match="no target 'no-such-target'"):
        load_target("no-such-target")
    with pytest.raises(TargetError, match="profile"):
        profile_properties("0.8")
    with pytest.raises(TargetError, match=r"unknown key 'stat_change' in \[logs\]"):
        parse_target({"name": "x", "command": ["r", "{config}"], "logs": {"stat_change": "x"}})
    with pytest.raises(TargetError, match="stop_timeout_s must be a number > 0, got True"):
        parse_target({"name": "x", "command": ["r", "{config}"], "stop_timeout_s": True})


def test_a_misspelt_builtin_name_gets_a_suggestion() -> None:
    with pytest.raises(TargetError, match="no target 'refrence' \\(did you mean 'reference'\\?\\)"):
        load_target("refrence")


def test_the_template_is_a_valid_target_that_mentions_every_key() -> None:
    path = BUILTIN_DIR / "TEMPLATE.toml"
    template = load_target(str(path))
    assert template.name == "my-broker"
    assert "TEMPLATE" not in builtin_targets()
    text = path.read_text(encoding="utf-8")
    for key in TARGET_KEYS:
        name = key.key.split()[-1]
        section = name.strip("[]")
        wanted = (
            [f"[{section}]", f"{section} =", f"[controller.{section}]"]
            if name.startswith("[") or " " in key.key
            else [f"{name} ="]
        )
        assert any(w in text for w in wanted), f"TEMPLATE.toml does not show {key.key}"


def test_the_split_target_pairs_a_controller_process_with_each_broker(tmp_path: Path) -> None:
    split = load_target("reference-split")
    assert split.topology == "split"
    assert split.extra_properties["reference.controller.enable"] == "false"
    assert split.controller is not None
    argv = split.render_command(tmp_path / "controller.properties", tmp_path, "controller")
    assert argv[1:3] == ["-m", "reference_controller.controller_node"]
    assert split.render_env(tmp_path, "controller")["LOG_DIR"] == str(tmp_path / "controller-logs")
    assert (
        split.log_path("state_change", tmp_path, "controller")
        == tmp_path / "controller-logs" / "state-change.log"
    )
    assert load_target("reference").topology == "combined"


def test_keys_markdown_lists_every_key_and_template_field() -> None:
    table = keys_markdown()
    for key in TARGET_KEYS:
        assert f"| `{key.key}` |" in table
    assert "| `{target_dir}` |" in table


def test_kafka_defaults_profile_omits_every_safety_key() -> None:
    plain = profile_properties("2.5")
    bare = profile_properties("2.5" + KAFKA_DEFAULTS_SUFFIX)
    assert set(SAFETY_DEFAULTS) == {
        "unclean.leader.election.enable",
        "delete.topic.enable",
        "auto.leader.rebalance.enable",
        "controlled.shutdown.enable",
    }
    assert set(SAFETY_DEFAULTS) <= set(plain)
    assert not set(SAFETY_DEFAULTS) & set(bare)
    assert {k: v for k, v in plain.items() if k not in SAFETY_DEFAULTS} == bare
    spec = NodeSpec(2, (1, 2, 3), "127.0.0.1:2181/kzk/t1", ("/tmp/n2/data",))
    props = server_properties(spec, profile=bare, target_extra=load_target("reference").extra_properties)
    assert not set(SAFETY_DEFAULTS) & set(props), "a safety key reached server.properties"
    with pytest.raises(TargetError, match="unknown profile"):
        profile_properties("2.5+no-such-variant")


@pytest.mark.integration
def test_reference_version_is_what_the_node_cli_prints() -> None:
    """The records' target_version: the node's own ``--version`` line (a real subprocess)."""
    assert load_target("reference").version() == f"2.5.1 (reference_controller {_kit_version()})"


@pytest.mark.integration
def test_a_failing_version_command_records_no_version() -> None:
    """A command that fails (exit 2 with a usage line, as a CLI without --version does) is not a
    version: the usage text must never land in the run records."""
    failing = parse_target(
        {
            "name": "x",
            "command": ["{python}", "{config}"],
            "version_command": ["{python}", "-c", "import sys; print('usage: x [-h] config'); sys.exit(2)"],
        }
    )
    assert failing.version() is None
    printing = ["{python}", "-c", "print('9.9 (y)')"]
    ok = parse_target({"name": "y", "command": ["{python}", "{config}"], "version_command": printing})
    assert ok.version() == "9.9 (y)"


def _kit_version() -> str:
    return importlib.metadata.version("kafka-zk-controller-kit")


def test_the_readme_key_table_is_generated_from_the_schema() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    begin = readme.index("<!-- target-keys:begin")
    body = readme[readme.index("\n", begin) + 1 : readme.index("<!-- target-keys:end -->")]
    assert body.strip() == keys_markdown().strip(), (
        "README.md's target-keys table is stale: replace it with python -m conformance doctor --keys"
    )


def test_warm_start_is_a_boolean_for_a_python_module_command_only() -> None:
    module = ["{python}", "-m", "some.node", "{config}"]
    assert parse_target({"name": "w", "command": module, "warm_start": True}).warm_module == "some.node"
    assert parse_target({"name": "w", "command": module}).warm_module is None
    assert load_target("reference").warm_module == "reference_controller.node"
    with pytest.raises(TargetError, match="warm_start must be true or false, got 'yes'"):
        parse_target({"name": "w", "command": module, "warm_start": "yes"})
    with pytest.raises(TargetError, match=r"warm_start = true needs a command of the form \["):
        parse_target({"name": "w", "command": ["/opt/broker/start.sh", "{config}"], "warm_start": True})
