"""A short real run for the checkers: 3 reference nodes on a real ZooKeeper, a controller kill (test helper).

:func:`run_failover_scenario` plays a fixed schedule as a chaos run would — admin ops recorded
in a :class:`~chaos.history.History`, the controller SIGKILLed and restarted by a "nemesis" —
then heals, waits for quiescence (the chroot's transaction log quiet, every node registered,
``/admin`` clean, each broker's Metadata view stable) and takes the final state with
:mod:`chaos.checkers.final_state`'s builders. ``python -m tests.chaos.checkers.real_scenario DIR`` writes a
capture (history, records, final state) that the unit tests replay.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]
from kio.schema.metadata.v1.request import MetadataRequest

from chaos.checkers import FinalState, final_state_to_json
from chaos.checkers.final_state import fetch_broker_metadata, journals_from_requests, read_zookeeper_state
from chaos.history import History
from conformance import admin
from conformance.cluster import Cluster, wait_for
from conformance.targets import load_target
from fixtures.probes import TxnRecord
from fixtures.probes.request_proxy import send_request
from tests.chaos.checkers.txnjson import dump_records

BROKERS = (1, 2, 3)
OVERRIDES = {"auto.leader.rebalance.enable": "false"}


@dataclass
class Capture:
    history: History
    records: list[TxnRecord]
    final_state: FinalState

    def dump(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.history.dump(directory / "history.jsonl")
        dump_records(self.records, directory / "records.jsonl")
        text = json.dumps(final_state_to_json(self.final_state), indent=1, sort_keys=True)
        (directory / "final_state.json").write_text(text + "\n", encoding="utf-8")


def _op(history: History, process: str, f: str, value: dict[str, Any], action: Callable[[], object]) -> None:
    op = history.invoke(process, f, value)
    try:
        action()
    except Exception as exc:
        history.complete(op, "info", error=f"{type(exc).__name__}: {exc}")
        raise
    history.complete(op, "ok")


def _metadata(cluster: Cluster) -> dict[int, Any]:
    return {b: fetch_broker_metadata(*cluster.endpoint(b)) for b in BROKERS}


def _named_controller(cluster: Cluster, broker: int) -> int:
    response = send_request(*cluster.endpoint(broker), MetadataRequest(topics=()))
    return int(response.controller_id)


def _metadata_names(cluster: Cluster, topics: set[str]) -> bool:
    return all(topics <= {t for t, parts in view.items() if parts} for view in _metadata(cluster).values())


def _quiesce(cluster: Cluster, deadline_s: float) -> dict[int, Any]:
    """Wait until the run is quiet; return each broker's (stable) Metadata view."""
    last: dict[str, Any] = {"count": -1, "since": time.monotonic(), "views": None}

    def quiet() -> dict[int, Any] | None:
        count = len(cluster.history())
        if count != last["count"]:
            last.update(count=count, since=time.monotonic())
            return None
        registered = all(cluster.zk.exists(f"/brokers/ids/{b}") for b in BROKERS)
        admin_clean = not (
            cluster.zk.exists("/admin/reassign_partitions")
            or cluster.zk.exists("/admin/preferred_replica_election")
            or cluster.zk.get_children("/admin/delete_topics")
        )
        if not (registered and admin_clean and cluster.controller_id() is not None):
            return None
        if time.monotonic() - last["since"] < 2.0:
            return None
        views, previous = _metadata(cluster), last["views"]
        last["views"] = views
        return views if views == previous else None

    return wait_for(
        quiet, cluster.deadline(deadline_s), lambda: f"quiescence; {cluster.summary()}", poll_s=0.5
    )


def run_failover_scenario(cluster: Cluster) -> Capture:
    """Topic ops, a controller SIGKILL and restart, heal and quiescence; the run's capture."""
    h = History()
    cluster.start()
    first = cluster.wait_controller()
    _op(h, "client-0", "create_topic", {"topic": "t1", "partitions": 2, "replication_factor": 3},
        lambda: admin.create_topic_zk(cluster, "t1", {0: [1, 2, 3], 1: [2, 3, 1]}))  # fmt: skip
    _op(h, "client-1", "create_topic", {"topic": "t2", "partitions": 1, "replication_factor": 2},
        lambda: admin.create_topic_zk(cluster, "t2", {0: [2, 3]}))  # fmt: skip
    # every broker hears of both topics from the first controller before it dies
    wait_for(
        lambda: _metadata_names(cluster, {"t1", "t2"}),
        cluster.deadline(30),
        "t1, t2 in every broker's Metadata",
    )
    _op(h, "client-0", "reassign", {"topic": "t1", "assignment": {"0": [3, 2]}},
        lambda: admin.reassign_zk(cluster, {("t1", 0): [3, 2]}))  # fmt: skip
    _op(h, "nemesis", "start_fault", {"fault": "kill", "broker_id": first}, lambda: cluster.kill(first))
    _op(h, "client-1", "delete_topic", {"topic": "t2"}, lambda: admin.delete_topic_zk(cluster, "t2"))
    second = cluster.wait_controller(not_in=[first], deadline_s=40)
    # the AdminClient sends CreateTopics to the controller a broker names: wait until both
    # survivors name the new one (their UpdateMetadata from it arrived)
    survivors = [b for b in BROKERS if b != first]
    wait_for(lambda: all(_named_controller(cluster, b) == second for b in survivors), cluster.deadline(30),
             f"brokers {survivors} to name controller {second}")  # fmt: skip
    client = admin.admin_client(cluster)
    _op(h, "client-0", "create_topic_admin", {"topic": "t3", "partitions": 1, "replication_factor": 2},
        lambda: client.create_topics([NewTopic("t3", 1, 2)])["t3"].result(timeout=30))  # fmt: skip
    _op(h, "client-1", "preferred_election", {"partitions": [{"topic": "t1", "partition": 1}]},
        lambda: admin.preferred_election_zk(cluster, [("t1", 1)]))  # fmt: skip
    _op(h, "nemesis", "stop_fault", {"fault": "kill", "broker_id": first}, lambda: cluster.restart(first))
    _op(h, "nemesis", "heal", {}, lambda: None)
    quiesce = h.invoke("nemesis", "quiesce", {"controller_before": first, "controller_after": second})
    views = _quiesce(cluster, deadline_s=90)
    h.complete(quiesce, "ok")
    assert cluster.journal is not None
    final = FinalState(
        **read_zookeeper_state(cluster.zk),
        metadata=views,
        journals=journals_from_requests(cluster.journal.requests()),
        quiesced=True,
    )
    return Capture(h, cluster.history(), final)


def main(out: Path) -> None:  # pragma: no cover - regenerates the checked-in capture
    from kazoo.client import KazooClient  # noqa: PLC0415

    from fixtures.zookeeper import ZooKeeperServer  # noqa: PLC0415

    with ZooKeeperServer(name="checkers-capture", tick_time_ms=500, max_session_timeout_ms=30000) as zk:
        root = KazooClient(hosts=zk.connect_string)
        root.start()
        root.ensure_path("/run")
        root.stop()
        cluster = Cluster(
            load_target("reference"),
            zk_connect_string=zk.connect_string,
            chroot="/run",
            txn_log_dir=Path(zk.txn_log_dir),
            base_dir=out / "nodes",
            overrides=OVERRIDES,
        )
        try:
            run_failover_scenario(cluster).dump(out)
        finally:
            cluster.close()


if __name__ == "__main__":  # pragma: no cover
    main(Path(sys.argv[1]))
