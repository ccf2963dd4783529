"""Run a controller-only process: the reference controller without a broker, from server.properties.

The split topology's controller process (ring: drivers).

    python -m reference_controller.controller_node CONFIG [--override key=value ...]

For the split topology (a vendor's separate controller driving broker-only nodes, or this one
driving reference brokers started with ``reference.controller.enable=false``). It reads the same
``server.properties`` as a node — ``broker.id`` is the id it writes into ``/controller``,
``control.plane.listener.name`` (else ``inter.broker.listener.name``) the listener it looks up in
every broker's registration — connects to ZooKeeper (creating the chroot and Kafka's top-level
paths, as a Kafka server does before its controller starts), and runs the same controller
component as a node: it contends for ``/controller`` and, when elected, drives the brokers. It
registers no ``/brokers/ids/<id>`` and binds no listener; so brokers find no endpoint to send
ControlledShutdown to (in ZooKeeper mode a broker looks the controller up among the brokers) and
clients find no broker that is the controller for CreateTopics.

On session expiry it resigns (the controller's ``Expire``) and re-enters the election on the new
session. SIGTERM/SIGINT: the controller component shuts down, the session closes (``/controller``
goes with it), exit 0. Exit 2: bad configuration; 1: ZooKeeper unreachable at start-up. Logs go to
``$LOG_DIR`` (``server.log``, ``state-change.log`` at TRACE, Kafka's layout).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

if __name__ == "__main__":  # the program: keep hypothesis out before kio is imported (as the node does)
    from reference_controller.node.__main__ import skip_test_libraries

    skip_test_libraries()

from kazoo.client import KazooClient, KazooState
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from reference_controller import zkdata
from reference_controller.config import KafkaConfig
from reference_controller.controller.driver.kazoo_handler import LeanThreadingHandler
from reference_controller.controller.driver.service import ControllerService
from reference_controller.errors import ConfigError
from reference_controller.logutil import configure_node_logging
from reference_controller.node.__main__ import VersionAction, parse_overrides, warn_unknown_keys
from reference_controller.node.zk_driver import KazooNodeZk
from reference_controller.node.zk_port import create_if_absent

EXIT_OK, EXIT_FATAL, EXIT_CONFIG = 0, 1, 2
log = logging.getLogger("kafka.controller.ControllerProcess")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m reference_controller.controller_node", description=__doc__.split("\n")[0]
    )
    parser.add_argument("config", help="server.properties (broker.id = this controller's id)")
    parser.add_argument("--version", action=VersionAction, help="show the version and exit")
    parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="override a property (repeat it)"
    )
    return parser.parse_args(argv)


def connect(config: KafkaConfig) -> KazooClient:
    """A started client (chroot and top-level paths created); ``TimeoutError`` if unreachable."""
    zk = KazooClient(
        hosts=config.zookeeper_connect,
        timeout=config.zookeeper_session_timeout_ms / 1000,
        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
        handler=LeanThreadingHandler(),
    )
    try:
        zk.start(timeout=config.zookeeper_connection_timeout_ms / 1000)
    except KazooTimeoutError:
        zk.close()
        raise TimeoutError(
            f"Timed out waiting for connection to ZooKeeper at {config.zookeeper_connect}"
            f" (zookeeper.connection.timeout.ms={config.zookeeper_connection_timeout_ms})"
        ) from None
    chroot, zk.chroot = zk.chroot, ""
    try:
        if chroot:
            create_if_absent(KazooNodeZk(zk), chroot, None)
    finally:
        zk.chroot = chroot
    for path in zkdata.PERSISTENT_PATHS:
        create_if_absent(KazooNodeZk(zk), path, None)
    return zk


def run(config: KafkaConfig) -> int:
    stop = threading.Event()

    def on_signal(_sig: int, _frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    try:
        zk = connect(config)
    except TimeoutError as exc:
        log.error(f"Fatal error during controller start-up: {exc}")  # noqa: TRY400 - the message says it
        print(f"reference controller: {exc}", file=sys.stderr)
        return EXIT_FATAL
    # no broker registration: the broker epoch is unknown to a controller that is not a broker
    service = ControllerService(config, zk, broker_epoch=-1)
    lost = threading.Event()

    def on_state(state: str) -> None:  # kazoo's thread: never call ZooKeeper here
        if state == KazooState.LOST:
            lost.set()
        elif state == KazooState.CONNECTED and lost.is_set():
            lost.clear()
            service.on_broker_registered(-1)  # a new session: re-enter the election

    zk.add_listener(on_state)
    service.startup()
    log.info(f"[ControllerProcess id={config.broker_id}] started")
    stop.wait()
    log.info(f"[ControllerProcess id={config.broker_id}] shutting down")
    service.shutdown()
    zk.stop()
    zk.close()
    log.info(f"[ControllerProcess id={config.broker_id}] shut down completed")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        config = KafkaConfig.from_file(args.config, parse_overrides(args.override))
    except ConfigError as exc:
        print(f"reference controller: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if config.broker_id < 0:
        print("reference controller: broker.id must be set (>= 0): it goes into /controller", file=sys.stderr)
        return EXIT_CONFIG
    configure_node_logging(Path(os.environ.get("LOG_DIR", "./logs")))
    warn_unknown_keys(config, "reference controller")
    code = run(config)
    logging.shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
