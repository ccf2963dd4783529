"""Run a reference node: a Kafka 2.5.1 broker with its ZooKeeper-mode controller, from server.properties.

The node's command line (ring: drivers).

    python -m reference_controller.node CONFIG [--override key=value ...]
    python -m reference_controller.node --version

`--version` prints the Kafka release whose controller this models and the kit's version, in the
shape of Kafka's own `--version` (``2.5.1 (reference_controller 0.1.0)``).

CONFIG is a Kafka-style `server.properties`; `--override` (repeatable) replaces a key, as Kafka's
`kafka-server-start.sh config --override k=v`. Logs go to `$LOG_DIR` (default `./logs`):
`server.log`, `state-change.log`, `controller-requests.jsonl`. An unknown key is ignored (as
Kafka does) with a warning in server.log and on stderr naming the closest known key.

Exit codes: 0 after SIGTERM/SIGINT (controlled shutdown first when enabled); 2 for a bad command
line or configuration (the message names the key: a value of the wrong type or out of Kafka's
range, an existing log dir that is not a writable directory, a config file that is not
properties text); 1 when start-up fails (ZooKeeper unreachable
within `zookeeper.connection.timeout.ms`, a port in use, an inconsistent log dir) or on a fatal
error while running (including a halt because every log dir failed). Messages go to stderr and to server.log.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import difflib
import gc
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reference_controller.config import KNOWN_IGNORED_KEYS, KafkaConfig
from reference_controller.errors import ConfigError
from reference_controller.logutil import configure_node_logging

if TYPE_CHECKING:
    from collections.abc import Sequence

EXIT_OK, EXIT_FATAL, EXIT_CONFIG = 0, 1, 2
MODELLED_KAFKA_VERSION = "2.5.1"
log = logging.getLogger("kafka.Kafka")


def version_line() -> str:
    import importlib.metadata  # noqa: PLC0415 - only for --version, not on every start

    try:
        kit = importlib.metadata.version("kafka-zk-controller-kit")
    except importlib.metadata.PackageNotFoundError:
        kit = "unknown"
    return f"{MODELLED_KAFKA_VERSION} (reference_controller {kit})"


class VersionAction(argparse.Action):
    """``--version``: prints :func:`version_line` and exits; the package metadata is read only
    when asked (reading it costs every start a tenth of a second; Kafka's start reads no version)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kw: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=kw.get("help"))

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option: str | None = None,
    ) -> None:
        print(version_line())
        parser.exit()


def skip_test_libraries() -> None:
    """Keep hypothesis out of the node's process. kio's phantom types register hypothesis
    strategies at import time whenever hypothesis is importable (it is, in the kit's test
    environment): about a second of every node start, under load more, that a Kafka broker never
    spends, for a library the node never uses. A ``None`` entry in ``sys.modules`` makes the
    import fail, and kio then goes without it. Called only when the node is the program, before
    the server (and with it kio) is imported."""
    if "hypothesis" not in sys.modules:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]  # importlib's "not importable" mark


def warm_up() -> None:
    """What a warm interpreter imports before it forks nodes (``warm_start`` in the reference's
    target; :mod:`harness.warm_server`): the server's modules, with hypothesis kept out as when
    the node is the program, and the controller component, which a node loads on demand once it
    has registered (so a node forked from here contends for ``/controller`` without importing it
    then). Each forked node then runs this module as ``__main__``."""
    skip_test_libraries()
    import reference_controller.node.server  # noqa: PLC0415

    reference_controller.node.server.load_controller_service()


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m reference_controller.node", description=__doc__.split("\n")[0]
    )
    parser.add_argument("config", help="server.properties")
    parser.add_argument("--version", action=VersionAction, help="show the version and exit")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a property (repeatable)",
    )
    return parser.parse_args(argv)


def check_log_dirs(config: KafkaConfig) -> None:
    """Every `log.dirs` entry that exists must be a directory this process can write (checked with
    access(2), which also sees read-only mounts and immutable dirs for root); else ConfigError
    naming the key and the path. Entries that do not exist yet are created at start-up."""
    for d in config.log_dirs:
        if not d.exists():
            continue
        if not d.is_dir():
            raise ConfigError("log.dirs", f"{d} exists and is not a directory")
        if not os.access(d, os.W_OK | os.X_OK):
            raise ConfigError(
                "log.dirs", f"{d} is not writable by this process; make it writable or choose another"
            )


def _known_keys() -> list[str]:
    """Keys the node reads (KafkaConfig's field names are Kafka's keys with `.` → `_`) and the
    Kafka keys it accepts and ignores: the candidates a misspelt key is matched against."""
    fields = [f.name.replace("_", ".") for f in dataclasses.fields(KafkaConfig) if f.name != "unknown_keys"]
    return sorted({*fields, *KNOWN_IGNORED_KEYS})


def warn_unknown_keys(config: KafkaConfig, who: str) -> None:
    """Kafka's warning for each unknown key in server.log, and on stderr too, with the closest
    known key: a misspelt key is otherwise silently ignored (its default applies)."""
    for key in config.unknown_keys:
        logging.getLogger("kafka.server.KafkaConfig").warning(
            f"The configuration '{key}' was supplied but isn't a known config."
        )
        close = difflib.get_close_matches(key, _known_keys(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        print(f"{who}: warning: unknown config key {key!r} is ignored{hint}", file=sys.stderr)


def parse_overrides(items: list[str]) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(item, "--override expects key=value")
        result[key.strip()] = value.strip()
    return result


async def run_node(config: KafkaConfig, log_dir: Path) -> int:
    # imported here, after skip_test_libraries() when this is the program (the server imports kio)
    from reference_controller.node.server import KafkaNode, NodeHalted, StartupError  # noqa: PLC0415

    node = KafkaNode(config, log_dir)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, node.request_shutdown)
    code = EXIT_OK
    try:
        await node.startup()
        await node.serve()
    except StartupError as exc:
        log.error(  # noqa: TRY400 - the message is the diagnosis
            f"Fatal error during KafkaServer startup. Prepare to shutdown: {exc}"
        )
        print(f"reference node: {exc}", file=sys.stderr)
        code = EXIT_FATAL
    except NodeHalted as exc:
        print(f"reference node: halted: {exc}", file=sys.stderr)
        code = EXIT_FATAL
    except Exception as exc:
        log.exception("Fatal error in the reference node")
        print(f"reference node: fatal error: {exc!r}", file=sys.stderr)
        code = EXIT_FATAL
    finally:
        await node.shutdown()
    return code


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # the server's modules load before the first log line, as a JVM loads its classes before
    # log4j writes (the suite's benchmark reads that line as the end of the process start)
    import reference_controller.node.server  # noqa: F401, PLC0415

    try:
        config = KafkaConfig.from_file(args.config, parse_overrides(args.override))
        check_log_dirs(config)
    except ConfigError as exc:
        print(f"reference node: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if config.broker_id < 0:
        print("reference node: Invalid value for configuration key 'broker.id': must be set (>= 0); "
              "broker id generation is not supported", file=sys.stderr)  # fmt: skip
        return EXIT_CONFIG
    log_dir = Path(os.environ.get("LOG_DIR", "./logs"))
    configure_node_logging(log_dir)
    warn_unknown_keys(config, "reference node")
    log.info(f"Starting reference node broker.id={config.broker_id} (pid {os.getpid()})")
    # Young-generation collections every 100k allocations instead of 700: a failover of 100k
    # partitions allocates millions of short-lived objects (bench/README.md: 7.1 s -> 4.8 s).
    gc.set_threshold(100_000, 50, 100)
    code = asyncio.run(run_node(config, log_dir))
    logging.shutdown()
    return code


if __name__ == "__main__":
    skip_test_libraries()
    sys.exit(main())
