"""Bad configuration through the node's command line: exit 2 and a message naming the key (ring: tests).

Kafka's ConfigDef types: INT keys must fit 32 bits (broker.id=2147483648 is refused), LONG keys
64 bits; an existing log dir the node cannot write is named with its key; a binary file is
reported as not being properties text. The node exits before it connects to anything (the
connect string below points at a closed port: a config that slipped through would end in exit 1
after the connection timeout, failing the test).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node.helpers import REPO, NodeFactory

pytestmark = pytest.mark.integration
NOWHERE = "127.0.0.1:1"


def run_cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reference_controller.node", str(config), *args],
        cwd=config.parent,
        env={"PYTHONPATH": str(REPO), "LOG_DIR": str(config.parent / "logs"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def factory(tmp_path: Path) -> NodeFactory:
    return NodeFactory(tmp_path, NOWHERE)


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("broker.id", "2147483648", "is not a number of type INT"),
        ("zookeeper.session.timeout.ms", "99999999999", "is not a number of type INT"),
        ("replica.lag.time.max.ms", "9223372036854775808", "is not a number of type LONG"),
        ("num.partitions", "1_000", "is not an integer"),
        ("controlled.shutdown.max.retries", "٣", "is not an integer"),  # not ASCII digits
    ],
)
def test_numbers_outside_kafkas_types_exit_2_naming_the_key(
    factory: NodeFactory, key: str, value: str, says: str
) -> None:
    result = run_cli(factory.write_config(1, {key: value}))
    assert result.returncode == 2, result.stderr
    assert f"Invalid value for configuration key '{key}':" in result.stderr, result.stderr
    assert value in result.stderr, result.stderr
    assert says in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_the_largest_int_broker_id_passes_validation(factory: NodeFactory) -> None:
    """2147483647 is a valid INT: the node gets past validation and fails only on ZooKeeper (exit 1)."""
    config = factory.write_config(2147483647, {"zookeeper.connection.timeout.ms": "500"})
    result = run_cli(config)
    assert result.returncode == 1, result.stderr
    assert NOWHERE in result.stderr


@pytest.fixture
def immutable_dir(tmp_path: Path) -> Iterator[Path]:
    """A log dir that even root cannot write (chattr +i); the attribute is always cleared."""
    d = tmp_path / "read-only-logs"
    d.mkdir()
    made = subprocess.run(["chattr", "+i", str(d)], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is not available here: {made.stderr.strip()}")
    try:
        yield d
    finally:
        subprocess.run(["chattr", "-i", str(d)], check=True)


def test_an_existing_read_only_log_dir_exits_2_naming_the_key_and_path(
    factory: NodeFactory, immutable_dir: Path
) -> None:
    result = run_cli(factory.write_config(1, {"log.dirs": str(immutable_dir)}))
    assert result.returncode == 2, result.stderr
    assert "'log.dirs'" in result.stderr, result.stderr
    assert str(immutable_dir) in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert "PermissionError" not in result.stderr


def test_a_log_dir_that_is_a_file_exits_2_naming_the_key_and_path(
    factory: NodeFactory, tmp_path: Path
) -> None:
    file = tmp_path / "not-a-dir"
    file.write_text("x")
    result = run_cli(factory.write_config(1, {"log.dirs": str(file)}))
    assert result.returncode == 2, result.stderr
    assert "'log.dirs'" in result.stderr, result.stderr
    assert str(file) in result.stderr, result.stderr


@pytest.mark.parametrize(
    "content",
    [
        bytes(range(256)),
        b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 64,
        b"broker.id=1\nzookeeper.connect=x:1\x00\n",
    ],
    ids=["all-bytes", "elf-header", "nul-in-value"],
)
def test_a_binary_config_file_is_reported_as_not_properties(tmp_path: Path, content: bytes) -> None:
    config = tmp_path / "server.properties"
    config.write_bytes(content)
    result = run_cli(config)
    assert result.returncode == 2, result.stderr
    assert f"cannot read {config} as properties" in result.stderr, result.stderr
    assert "zookeeper.connect" not in result.stderr
    assert "Traceback" not in result.stderr


def test_a_latin_1_config_file_still_reads_like_java_properties(factory: NodeFactory) -> None:
    """Java reads properties as ISO-8859-1: a comment with é (0xE9) is not binary."""
    config = factory.write_config(1, {"zookeeper.connection.timeout.ms": "500"})
    config.write_bytes(b"# caf\xe9\n" + config.read_bytes())
    result = run_cli(config)
    assert result.returncode == 1, result.stderr  # past validation: ZooKeeper is unreachable
    assert NOWHERE in result.stderr


def test_a_misspelt_key_is_warned_on_stderr_with_the_closest_known_key(factory: NodeFactory) -> None:
    """Kafka only logs an unknown key; the node says it on the console too, so a typo (its default
    silently applying) is seen by whoever starts it."""
    config = factory.write_config(
        1, {"zookeeper.connection.timeout.ms": "500", "delete.topic.enabel": "false"}
    )
    result = run_cli(config)
    assert result.returncode == 1, result.stderr  # past validation: only ZooKeeper is missing
    assert (
        "reference node: warning: unknown config key 'delete.topic.enabel' is ignored"
        " (did you mean 'delete.topic.enable'?)"
    ) in result.stderr
    server_log = (config.parent / "logs" / "server.log").read_text(encoding="utf-8")
    assert "The configuration 'delete.topic.enabel' was supplied but isn't a known config." in server_log


def _imports_of(module: str, config: Path) -> tuple[int, str, set[str]]:
    """Run ``python -X importtime -m module config`` for real: its exit code, its stderr and the
    modules its ``-X importtime`` lines name."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", module, str(config)],
        cwd=config.parent,
        env={"PYTHONPATH": str(REPO), "LOG_DIR": str(config.parent / "logs"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    loaded = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    return result.returncode, result.stderr, loaded


def test_the_node_process_loads_its_server_without_test_libraries(factory: NodeFactory) -> None:
    """The node's start-up imports its server (kio included) but not hypothesis, which kio would
    otherwise load and register strategies with on every start (``skip_test_libraries``); the
    ``-X importtime`` lines of the real process say which modules it loaded."""
    config = factory.write_config(1, {"broker.id": "2147483648"})  # refused after the imports
    code, stderr, loaded = _imports_of("reference_controller.node", config)
    assert code == 2, stderr[-2000:]
    assert "reference_controller.node.server" in loaded
    assert "kio.static.primitive" in loaded
    # kio's ``import hypothesis.strategies`` is attempted (and logged) but fails at the package
    assert not {"hypothesis", "hypothesis.core"} & loaded, sorted(m for m in loaded if "hypothesis" in m)


def test_the_split_controller_process_loads_without_test_libraries(factory: NodeFactory) -> None:
    """The split topology's controller process (``reference_controller.controller_node``) imports
    kio with its controller driver at module level: its entry point keeps hypothesis out first,
    as the node's does; the ``-X importtime`` lines of the real process say what it loaded."""
    config = factory.write_config(1, {"broker.id": "-1"})  # refused after the imports
    code, stderr, loaded = _imports_of("reference_controller.controller_node", config)
    assert code == 2, stderr[-2000:]
    assert "broker.id must be set" in stderr
    assert "kio.static.primitive" in loaded
    assert not {"hypothesis", "hypothesis.core"} & loaded, sorted(m for m in loaded if "hypothesis" in m)
