"""Nodes that are broken on purpose, for the preflight and target-error tests (ring: test support).

    python broken_nodes.py wrong-port CONFIG       registers /brokers/ids/<id> with port 1 everywhere
    python broken_nodes.py port-zero CONFIG        registers /brokers/ids/<id> with port 0 everywhere
    python broken_nodes.py die-on-leader-and-isr BROKER_ID CONFIG
                                                   a reference node that, when it is BROKER_ID, dies
                                                   (exit 7, a line on stderr) on its first LeaderAndIsr
    python broken_nodes.py die-in-chroot PREFIX CONFIG
                                                   a reference node, unless its zookeeper.connect
                                                   chroot starts with PREFIX: then it exits (code 9,
                                                   a line on stderr) before it registers

The first two are what a node that does not register its bound ports looks like from outside:
a registration whose ports nothing listens on. The third is a node that crashes in the middle of
a check; the fourth one whose start fails only for some clusters (those of a chroot).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from reference_controller.config import parse_properties


def _register(config: Path, port: int) -> None:
    props = parse_properties(config.read_text(encoding="utf-8"))
    broker_id = int(props["broker.id"])
    endpoints = [
        f"{entry.split('://', 1)[0]}://127.0.0.1:{port}" for entry in props["advertised.listeners"].split(",")
    ]
    protocols = dict(kv.split(":") for kv in props["listener.security.protocol.map"].split(","))
    registration = {
        "version": 4,
        "host": "127.0.0.1",
        "port": -1,
        "jmx_port": -1,
        "timestamp": str(int(time.time() * 1000)),
        "endpoints": endpoints,
        "listener_security_protocol_map": protocols,
        "rack": None,
    }
    zk = KazooClient(hosts=props["zookeeper.connect"])
    zk.start(timeout=10)
    zk.create(f"/brokers/ids/{broker_id}", json.dumps(registration).encode(), ephemeral=True, makepath=True)
    print(f"broken node {broker_id}: registered port {port} for every listener", flush=True)
    threading.Event().wait()  # until killed


def _die_on_leader_and_isr(broker_id: str, config: Path) -> int:
    from reference_controller.node import __main__ as node  # noqa: PLC0415 - after argv checks
    from reference_controller.node.apis import KafkaApis  # noqa: PLC0415
    from reference_controller.node.partition import leader_and_isr_states  # noqa: PLC0415

    props = parse_properties(config.read_text(encoding="utf-8"))
    if props.get("broker.id") == broker_id:
        original = KafkaApis.handle_leader_and_isr

        async def dying(self: KafkaApis, ctx: Any, request: Any) -> Any:
            if leader_and_isr_states(request):
                print(f"broken node {broker_id}: dying on purpose at its first LeaderAndIsr", file=sys.stderr)
                sys.stderr.flush()
                os._exit(7)
            return await original(self, ctx, request)

        KafkaApis.handle_leader_and_isr = dying  # type: ignore[method-assign]
    return node.main([str(config)])


def _die_in_chroot(prefix: str, config: Path) -> int:
    from reference_controller.node import __main__ as node  # noqa: PLC0415 - after argv checks

    connect = parse_properties(config.read_text(encoding="utf-8"))["zookeeper.connect"]
    chroot = "/" + connect.split("/", 1)[1] if "/" in connect else "/"
    if chroot.startswith(prefix):
        print(f"broken node: exiting on purpose at start in chroot {chroot}", file=sys.stderr, flush=True)
        return 9
    return node.main([str(config)])


def main(argv: list[str]) -> int:
    match argv:
        case ["wrong-port", config]:
            _register(Path(config), 1)
        case ["port-zero", config]:
            _register(Path(config), 0)
        case ["die-on-leader-and-isr", broker_id, config]:
            return _die_on_leader_and_isr(broker_id, Path(config))
        case ["die-in-chroot", prefix, config]:
            return _die_in_chroot(prefix, Path(config))
        case _:
            print(__doc__, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
