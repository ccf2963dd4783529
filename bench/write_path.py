"""Write-path micro-benchmark of the controller's ZooKeeper driver (a script that prints figures; not a test).

Usage: python -m bench.write_path [COUNT] [ROUNDS]

COUNT (default 5000) pipelined `multi[check /controller_epoch, setData]` against a local ZooKeeper,
by four writers taking turns for ROUNDS rounds (default 4; the first is warm-up and not counted):
kazoo's own `transaction().commit_async()` on kazoo's stock handler (the baseline), and the driver's
`KazooZkPort.fenced` (lean pre-encoded multis, `driver/multiwrite.py`) on the stock,
`PollingThreadingHandler` and `LeanThreadingHandler` kazoo handlers (`driver/kazoo_handler.py`).
Per writer: best and median rate, and the CPU time per multi of this Python process (client) and
of the ZooKeeper JVM (server, from /proc). Load average on every line.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.serialization import CheckVersion, SetData

from harness.zookeeper import ZooKeeperServer
from reference_controller.controller.driver.kazoo_handler import LeanThreadingHandler, PollingThreadingHandler
from reference_controller.controller.driver.zk_driver import KazooZkPort
from reference_controller.controller.ports import SetDataOp

PAYLOAD = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}'
HANDLERS: dict[str, Callable[[], Any] | None] = {
    "stock": None,
    "poll": PollingThreadingHandler,
    "lean": LeanThreadingHandler,
}


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _jvm_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str]) -> int:
    try:
        count = int(argv[0]) if argv else 5000
        rounds = int(argv[1]) if len(argv) > 1 else 4
    except ValueError:
        print("usage: python -m bench.write_path [COUNT] [ROUNDS] (whole numbers)", file=sys.stderr)
        return 2
    if count < 1 or rounds < 2:
        print("COUNT must be >= 1 and ROUNDS >= 2 (the first round is warm-up)", file=sys.stderr)
        return 2
    print(f"load {_load()} (1/5/15 min, {os.cpu_count()} CPUs); {count} multis per writer and round")
    with ZooKeeperServer(name="bench-writes", heap_mb=1024) as server:
        assert server.pid is not None
        admin = KazooClient(server.connect_string, timeout=30)
        admin.start(timeout=15)
        for name in HANDLERS:
            admin.create(f"/{name}/controller_epoch", b"0", makepath=True)
            for result in [admin.create_async(f"/{name}/n{i}", PAYLOAD) for i in range(count)]:
                result.get(timeout=60)
        admin.stop()
        admin.close()
        clients = {
            name: KazooClient(f"{server.connect_string}/{name}", timeout=30, handler=make() if make else None)
            for name, make in HANDLERS.items()
        }
        for client in clients.values():
            client.start(timeout=15)
        ports = {name: KazooZkPort(client, lambda _e: None) for name, client in clients.items()}
        try:
            writers = _writers(clients, ports, count)
            figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in writers}
            for rnd in range(rounds):
                for name, write in writers.items():
                    cpu, jvm, start = _own_cpu_s(), _jvm_cpu_s(server.pid), time.perf_counter()
                    write()
                    elapsed = time.perf_counter() - start
                    if rnd:
                        figures[name].append(
                            (
                                count / elapsed,
                                (_own_cpu_s() - cpu) / count,
                                (_jvm_cpu_s(server.pid) - jvm) / count,
                            )
                        )
            for name, runs in figures.items():
                rates = sorted(r for r, _c, _j in runs)
                client_us = sum(c for _r, c, _j in runs) / len(runs) * 1e6
                server_us = sum(j for _r, _c, j in runs) / len(runs) * 1e6
                median = rates[len(rates) // 2]
                print(
                    f"{name:52} best {rates[-1]:7,.0f}/s median {median:7,.0f}/s; CPU per multi: "
                    f"client {client_us:4.0f} us, ZooKeeper {server_us:4.0f} us; load {_load()}"
                )
        finally:
            for port in ports.values():
                port.close()
            for client in clients.values():
                client.stop()
                client.close()
    return 0


def _writers(
    clients: dict[str, KazooClient], ports: dict[str, KazooZkPort], count: int
) -> dict[str, Callable[[], None]]:
    def kazoo_raw() -> None:
        zk = clients["stock"]
        pending = []
        for i in range(count):
            tx = zk.transaction()
            tx.operations.extend(
                [CheckVersion(f"{zk.chroot}/controller_epoch", 0), SetData(f"{zk.chroot}/n{i}", PAYLOAD, -1)]
            )
            pending.append(tx.commit_async())
        for result in pending:
            if any(isinstance(r, Exception) for r in result.get(timeout=120)):
                raise RuntimeError("a kazoo multi failed")

    def driver(handler: str) -> Callable[[], None]:
        def write() -> None:
            results = ports[handler].fenced([SetDataOp(f"/n{i}", PAYLOAD) for i in range(count)], 0)
            if not all(r.ok for r in results):
                raise RuntimeError(f"a driver multi failed: {next(r for r in results if not r.ok)}")

        return write

    return {
        "kazoo transaction, stock handler (driver before)": kazoo_raw,
        "driver lean multis, stock handler": driver("stock"),
        "driver lean multis, poll handler": driver("poll"),
        "driver lean multis, lean handler": driver("lean"),
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
