"""Controller benchmark on a real local ZooKeeper (a script that prints figures; not a test).

Usage: python -m bench.controller_bench [--small] [--modes default,batch]

The controller runs in-process (ControllerService + the real core + KazooZkPort) with a fake
channel: broker requests are counted, not sent, so the figures isolate the controller's ZooKeeper
work. Brokers are `/brokers/ids/<id>` znodes held by their own kazoo sessions. Scenarios, per mode
(default = Kafka's one `multi[check, op]` per write; batch = `reference.controller.zk.batch.writes`):

  (a) topics totalling 1k and 10k partitions written to `/brokers/topics` → every state znode exists;
  (b) failover with 10k partitions: `/controller` deleted (session closed) → "Ready to serve as the
      new controller with epoch E";
  (c) a broker leading 5k partitions dies → every affected partition has a new leader in ZooKeeper;
  (d) kazoo's raw pipelined throughput in the same run (create, setData, getData, multi[check,set])
      and each scenario's ZooKeeper ops/s as a ratio of the raw pipelined multi[check,set] rate.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient

from fixtures.zookeeper import ZooKeeperServer
from reference_controller.config import KafkaConfig
from reference_controller.controller.core import KafkaController
from reference_controller.controller.effects import BrokerRequest
from reference_controller.controller.events import ControllerEvent
from reference_controller.controller.ports import (
    ChildHandler,
    Clock,
    CreateOp,
    DataResult,
    NodeHandler,
    OpResult,
    Stat,
    ZkOp,
    ZkPort,
)
from reference_controller.controller.service import ControllerService
from reference_controller.zkdata import (
    PERSISTENT_PATHS,
    BrokerInfo,
    EndPoint,
    ReplicaAssignment,
    decode_partition_state,
    encode_broker,
    encode_topic,
    partition_state_path,
)

PARTITIONS_PER_TOPIC = 100


# ---- instrumentation ------------------------------------------------------------------------------
@dataclass
class Counters:
    reads: int = 0
    read_s: float = 0.0
    writes: int = 0
    write_s: float = 0.0
    requests: int = 0
    process_s: float = 0.0
    events: int = 0

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


@dataclass
class TimedPort:
    """A ZkPort that counts ZooKeeper ops and the time spent waiting for them."""

    inner: ZkPort
    c: Counters

    def register_node_handler(self, handler: NodeHandler) -> None:
        self.inner.register_node_handler(handler)

    def unregister_node_handler(self, path: str) -> None:
        self.inner.unregister_node_handler(path)

    def register_child_handler(self, handler: ChildHandler) -> None:
        self.inner.register_child_handler(handler)

    def unregister_child_handler(self, path: str) -> None:
        self.inner.unregister_child_handler(path)

    def _timed(self, kind: str, n: int, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        try:
            return fn()
        finally:
            elapsed = time.perf_counter() - start
            if kind == "r":
                self.c.reads, self.c.read_s = self.c.reads + n, self.c.read_s + elapsed
            else:
                self.c.writes, self.c.write_s = self.c.writes + n, self.c.write_s + elapsed

    def get_data(self, paths: Sequence[str]) -> list[DataResult]:
        return self._timed("r", len(paths), lambda: self.inner.get_data(paths))  # type: ignore[no-any-return]

    def get_children(self, path: str) -> list[str] | None:
        return self._timed("r", 1, lambda: self.inner.get_children(path))  # type: ignore[no-any-return]

    def exists(self, path: str) -> Stat | None:
        return self._timed("r", 1, lambda: self.inner.exists(path))  # type: ignore[no-any-return]

    def fenced(self, ops: Sequence[ZkOp], epoch_zk_version: int) -> list[OpResult]:
        return self._timed("w", len(ops), lambda: self.inner.fenced(ops, epoch_zk_version))  # type: ignore[no-any-return]

    def multi(self, ops: Sequence[ZkOp]) -> list[OpResult]:
        return self._timed("w", len(ops), lambda: self.inner.multi(ops))  # type: ignore[no-any-return]

    def create(self, op: CreateOp) -> OpResult:
        return self._timed("w", 1, lambda: self.inner.create(op))  # type: ignore[no-any-return]

    def session_id(self) -> int:
        return self.inner.session_id()


class CountingChannel:
    def __init__(self, c: Counters) -> None:
        self.c = c

    def add_broker(self, broker: BrokerInfo) -> None:
        pass

    def remove_broker(self, broker_id: int) -> None:
        pass

    def send(self, request: BrokerRequest) -> None:
        self.c.requests += 1

    def shutdown(self) -> None:
        pass


class ReadyWatcher(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.ready = threading.Event()
        self.at = 0.0

    def emit(self, record: logging.LogRecord) -> None:
        if "Ready to serve as the new controller" in record.getMessage():
            self.at = time.perf_counter()
            self.ready.set()


# ---- cluster ----------------------------------------------------------------------------------------
@dataclass
class Bench:
    connect: str
    batch: bool
    counters: Counters = field(default_factory=Counters)
    sessions: list[KazooClient] = field(default_factory=list)
    services: list[ControllerService] = field(default_factory=list)

    def client(self) -> KazooClient:
        zk = KazooClient(self.connect, timeout=30)
        zk.start(timeout=15)
        self.sessions.append(zk)
        return zk

    def register_broker(self, broker_id: int) -> KazooClient:
        zk = self.client()
        info = BrokerInfo(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id),))
        zk.ensure_path("/brokers/ids")
        zk.create(f"/brokers/ids/{broker_id}", encode_broker(info), ephemeral=True)
        return zk

    def start_controller(self, broker_id: int) -> tuple[ControllerService, KazooClient]:
        zk = self.client()
        props = {"broker.id": str(broker_id), "zookeeper.connect": self.connect,
                 "listeners": "PLAINTEXT://127.0.0.1:0", "auto.leader.rebalance.enable": "false",
                 "reference.controller.zk.batch.writes": str(self.batch).lower()}  # fmt: skip
        config = KafkaConfig.from_properties(props)
        c = self.counters

        def core(cfg: KafkaConfig, port: ZkPort, clock: Clock, epoch: int) -> Any:
            controller = KafkaController(cfg, TimedPort(port, c), clock, epoch)
            process = controller.process

            def timed(event: ControllerEvent) -> Any:
                start = time.perf_counter()
                try:
                    return process(event)
                finally:
                    c.process_s += time.perf_counter() - start
                    c.events += 1

            controller.process = timed  # type: ignore[method-assign]
            return controller

        epoch = zk.exists(f"/brokers/ids/{broker_id}").czxid
        channel = CountingChannel(c)
        service = ControllerService(
            config, zk, broker_epoch=epoch, core_factory=core, channel_factory=lambda _cfg, _enq: channel
        )
        service.startup()
        self.services.append(service)
        return service, zk

    def close(self) -> None:
        for s in self.services:
            s.shutdown()
        for zk in self.sessions:
            zk.stop()
            zk.close()


def wait_idle(service: ControllerService, timeout_s: float = 600) -> None:
    assert service.events is not None
    deadline = time.monotonic() + timeout_s
    stable = 0
    last = -1
    while time.monotonic() < deadline:
        processed = service.events.processed
        if service.events.queue_size() == 0 and processed == last:
            stable += 1
            if stable >= 3:
                return
        else:
            stable = 0
        last = processed
        time.sleep(0.05)
    raise TimeoutError("controller did not become idle")


def wait_until(service: ControllerService, check: Callable[[], bool], timeout_s: float = 900) -> None:
    """Wait for the controller to go idle with `check()` true (the watch event may still be on its way)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        wait_idle(service)
        if check():
            return
        time.sleep(0.05)
    raise TimeoutError("condition not reached")


def write_topics(zk: KazooClient, prefix: str, partitions: int, replicas: tuple[int, ...]) -> list[str]:
    topics = [f"{prefix}-{i}" for i in range(max(1, partitions // PARTITIONS_PER_TOPIC))]
    assignment = {p: ReplicaAssignment(replicas) for p in range(min(partitions, PARTITIONS_PER_TOPIC))}
    data = encode_topic(assignment)
    for result in [zk.create_async(f"/brokers/topics/{t}", data) for t in topics]:
        result.get()
    return topics


def read_states(zk: KazooClient, topics: list[str], partitions: int) -> list[Any]:
    paths = [partition_state_path(t, p) for t in topics for p in range(partitions)]
    out: list[Any] = []
    for path, res in [(p, zk.get_async(p)) for p in paths]:
        try:
            data, stat = res.get()
            out.append(decode_partition_state(data, stat.version, path).leader_and_isr)
        except Exception:
            out.append(None)
    return out


# ---- raw kazoo -----------------------------------------------------------------------------------
def raw_throughput(connect: str, n: int) -> dict[str, float]:
    zk = KazooClient(connect, timeout=30)
    zk.start(timeout=15)
    zk.ensure_path("/raw")
    zk.create("/raw_epoch", b"0")
    rates: dict[str, float] = {}

    def rate(name: str, submit: Callable[[int], Any]) -> None:
        start = time.perf_counter()
        for r in [submit(i) for i in range(n)]:
            r.get()
        rates[name] = n / (time.perf_counter() - start)

    rate("create", lambda i: zk.create_async(f"/raw/{i}", b"x" * 80))
    rate("setData", lambda i: zk.set_async(f"/raw/{i}", b"y" * 80))
    rate("getData", lambda i: zk.get_async(f"/raw/{i}"))

    def fenced_set(i: int) -> Any:
        t = zk.transaction()
        t.check("/raw_epoch", 0)
        t.set_data(f"/raw/{i}", b"z" * 80)
        return t.commit_async()

    rate("multi[check,set]", fenced_set)
    start = time.perf_counter()
    t = zk.transaction()
    for i in range(1000):
        t.set_data(f"/raw/{i % n}", b"w" * 80)
    t.commit()
    rates["multi of 1000 setData (ops)"] = 1000 / (time.perf_counter() - start)
    zk.stop()
    zk.close()
    return rates


# ---- scenarios -----------------------------------------------------------------------------------
def report(label: str, elapsed_s: float, c: Counters, partitions: int, raw: float) -> None:
    ops = c.reads + c.writes
    ops_rate = ops / elapsed_s if elapsed_s else 0.0
    other = max(0.0, c.process_s - c.read_s - c.write_s)
    print(f"  {label}: {elapsed_s:.2f} s ({elapsed_s / max(1, partitions) * 1000:.3f} s per 1k partitions); "
          f"ZooKeeper ops {ops} ({ops_rate:,.0f}/s, ratio {ops_rate / raw:.2f} of raw multi[check,set]); "
          f"breakdown: reads {c.reads} in {c.read_s:.2f} s, writes {c.writes} in {c.write_s:.2f} s, "
          f"core other {other:.2f} s, requests {c.requests}, events {c.events}")  # fmt: skip


def run_mode(
    connect_base: str, admin: KazooClient, batch: bool, *, raw: float, sizes: Sequence[int], dead_n: int
) -> None:
    mode = "batch" if batch else "default"
    chroot = f"/bench-{mode}"
    admin.ensure_path(chroot)
    bench = Bench(connect_base + chroot, batch)
    print(f"mode {mode} (reference.controller.zk.batch.writes={str(batch).lower()}):")
    try:
        setup = bench.client()
        for path in PERSISTENT_PATHS:  # what every broker creates at start-up
            setup.ensure_path(path)
        brokers = {b: bench.register_broker(b) for b in (1, 2, 3, 4)}
        first, first_zk = bench.start_controller(1)
        wait_idle(first)
        zk = bench.client()
        zk.ensure_path("/brokers/topics")
        for size in sizes:  # (a)
            bench.counters.reset()
            start = time.perf_counter()
            topics = write_topics(zk, f"a{size}", size, (1, 2, 3))
            n = min(size, PARTITIONS_PER_TOPIC)
            last = partition_state_path(topics[-1], n - 1)
            wait_until(first, lambda: zk.exists(last) is not None)  # noqa: B023 - called in this iteration
            wait_until(first, lambda: all(s is not None for s in read_states(zk, topics, n)))  # noqa: B023
            elapsed = time.perf_counter() - start
            report(f"(a) create {size} partitions", elapsed, bench.counters, size, raw)
        dead_topics = write_topics(zk, "c", dead_n, (4, 1, 2))  # led by broker 4, for (c)
        n_dead = min(dead_n, PARTITIONS_PER_TOPIC)
        wait_until(first, lambda: all(s is not None for s in read_states(zk, dead_topics, n_dead)))
        total = sum(sizes) + dead_n
        # (b) failover
        second, _ = bench.start_controller(2)
        wait_idle(second)
        watcher = ReadyWatcher()
        logging.getLogger("kafka.controller.KafkaController").addHandler(watcher)
        bench.counters.reset()
        first.shutdown()
        start = time.perf_counter()
        first_zk.stop()  # the session (and /controller) goes
        watcher.ready.wait(600)
        report(f"(b) failover with {total} partitions (to 'Ready to serve')", watcher.at - start,
               bench.counters, total, raw)  # fmt: skip
        logging.getLogger("kafka.controller.KafkaController").removeHandler(watcher)
        wait_idle(second)
        # (c) the leader of dead_n partitions dies
        bench.counters.reset()
        start = time.perf_counter()
        brokers[4].stop()

        def moved() -> int:
            return sum(
                1 for s in read_states(zk, dead_topics, n_dead) if s is not None and s.leader in (1, 2)
            )

        wait_until(second, lambda: zk.exists("/brokers/ids/4") is None and moved() == dead_n)
        elapsed = time.perf_counter() - start
        report(
            f"(c) leader of {dead_n} partitions dies (all re-elected)", elapsed, bench.counters, dead_n, raw
        )
    finally:
        bench.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", action="store_true", help="1k/2k/1k partitions instead of 1k+10k/10k/5k")
    parser.add_argument("--modes", default="default,batch")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    sizes = (1000,) if args.small else (1000, 9000)
    dead_n = 1000 if args.small else 5000
    with ZooKeeperServer(name="bench", heap_mb=1024) as server:
        server.start()
        print(f"ZooKeeper {server.connect_string}; controller in-process with a fake channel "
              "(requests counted, not sent)")  # fmt: skip
        raw = raw_throughput(server.connect_string, 5000)
        print("(d) raw kazoo pipelined throughput (one Python process): "
              + ", ".join(f"{k} {v:,.0f}/s" for k, v in raw.items()))  # fmt: skip
        admin = KazooClient(server.connect_string, timeout=30)
        admin.start(timeout=15)
        try:
            for mode in args.modes.split(","):
                run_mode(
                    server.connect_string,
                    admin,
                    mode == "batch",
                    raw=raw["multi[check,set]"],
                    sizes=sizes,
                    dead_n=dead_n,
                )
        finally:
            admin.stop()
            admin.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
