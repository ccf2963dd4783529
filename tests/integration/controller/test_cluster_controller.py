"""The controller proved black-box through real reference nodes on a real ZooKeeper (ring: tests).

Every node contends for `/controller`; the tests act only as Kafka's admin does (writing znodes)
and observe three channels: ZooKeeper's transaction log (the exact write history, via
`probes.TxnLogCursor` restricted to this test's chroot), the znodes themselves, and each
node's `controller-requests.jsonl` journal (what it received from the controller). Order is only
compared within one channel (spec §11). Covered: election on a fresh chroot (§2.1), failover after
SIGKILL of the controller in §2.2 order, topic creation (§5.2), reassignment (§4, leader epochs of
§11) and deletion (§6.9). Every wait has a deadline and a failure prints what was observed.

Topic creation, failover, reassignment and deletion also run in batching mode
(`reference.controller.zk.batch.writes=true`, not Kafka): there the "one `multi[check, op]` per
write" of Kafka becomes "every write in a multi that starts with the epoch check", and every order
asserted on the flattened writes is unchanged (issue item 15: batching keeps order and fencing).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from harness.zookeeper import ZooKeeperServer
from kafkawire.states import TopicPartition
from probes import ChrootView, TxnLogCursor, TxnOp, TxnRecord
from probes.logdirs import scan_log_dir
from reference_controller import zkdata
from tests.node.helpers import NodeFactory, NodeProcess
from tests.polling import wait_for

pytestmark = [
    pytest.mark.integration,
]

T = TypeVar("T")
# Deterministic leaderships: no preferred-leader rebalance 5 s after a failover.
OVERRIDES = {"auto.leader.rebalance.enable": "false"}
BATCH_KEY = "reference.controller.zk.batch.writes"  # not Kafka: several fenced writes per multi
both_modes = pytest.mark.parametrize("batch_writes", [False, True], ids=["default", "batched"])
DELETE_TOPIC_MARKER_DATA = None  # AdminZkClient.deleteTopic writes null data


# ---- observation ----------------------------------------------------------------------------------
@dataclass
class Observer:
    """The three channels of one test, and a dump of all of them for failure messages."""

    zk: KazooClient
    chroot: str
    cursor: TxnLogCursor
    nodes: list[NodeProcess] = field(default_factory=list)
    records: list[TxnRecord] = field(default_factory=list)
    batched: bool = False  # the nodes run with reference.controller.zk.batch.writes=true

    def poll(self) -> list[TxnRecord]:
        self.records += ChrootView(self.chroot).filter(self.cursor.read())
        return self.records

    def writes_of(self, session_id: int, after_zxid: int = -1) -> list[TxnRecord]:
        return [r for r in self.poll() if r.session_id == session_id and r.zxid > after_zxid]

    def report(self, topic: str | None = None) -> str:
        lines = ["--- txn log (this chroot) ---"]
        lines += [r.describe() for r in self.poll()[-80:]]
        lines.append("--- znodes ---")
        for path in (zkdata.CONTROLLER, zkdata.CONTROLLER_EPOCH, zkdata.REASSIGN_PARTITIONS):
            lines.append(f"{path}: {self._get(path)}")
        for path in _tree(self.zk, "/brokers/topics") + _tree(self.zk, "/admin/delete_topics"):
            lines.append(f"{path}: {self._get(path)}")
        for node in self.nodes:
            lines.append(f"--- journal of broker {node.broker_id} (last 12) ---")
            lines += [json.dumps(e, separators=(",", ":")) for e in node.journal()[-12:]]
            dirs = sorted(p.path.name for p in scan_log_dir(node.data_dir).partitions)
            lines.append(f"log dirs of broker {node.broker_id}: {dirs}")
            if err := node.stderr().strip():
                lines.append(f"stderr of broker {node.broker_id}: {err[-800:]}")
        return "\n".join(lines)

    def _get(self, path: str) -> str:
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            return "<none>"
        return f"{data!r} (version {stat.version}, owner 0x{stat.ephemeralOwner:x})"

    def wait(self, check: Callable[[], T | None], timeout_s: float, what: str) -> T:
        try:
            return wait_for(check, timeout_s, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.report()}") from None


def _tree(zk: KazooClient, path: str) -> list[str]:
    try:
        children = sorted(zk.get_children(path))
    except NoNodeError:
        return []
    out: list[str] = []
    for child in children:
        sub = f"{path.rstrip('/')}/{child}"
        out += [sub, *_tree(zk, sub)]
    return out


@pytest.fixture
def observer(zk_server: ZooKeeperServer, zk_chroot: str, zk_client: KazooClient) -> Observer:
    return Observer(zk_client, zk_chroot, TxnLogCursor.at_end(zk_server.txn_log_dir))


def start_cluster(
    factory: NodeFactory, obs: Observer, broker_ids: Iterable[int], batch_writes: bool = False
) -> dict[int, NodeProcess]:
    obs.batched = batch_writes
    overrides = {**OVERRIDES, BATCH_KEY: "true"} if batch_writes else OVERRIDES
    nodes = {b: factory.start(b, overrides) for b in broker_ids}
    obs.nodes = list(nodes.values())
    for b in nodes:
        obs.wait(partial(obs.zk.exists, zkdata.broker_path(b)), 20, f"/brokers/ids/{b}")
    obs.wait(partial(obs.zk.exists, zkdata.CONTROLLER), 20, "/controller")
    return nodes


def controller_id(zk: KazooClient) -> int:
    return zkdata.decode_controller(zk.get(zkdata.CONTROLLER)[0])


def state(zk: KazooClient, topic: str, partition: int) -> dict[str, Any] | None:
    try:
        data, stat = zk.get(zkdata.partition_state_path(topic, partition))
    except NoNodeError:
        return None
    return {**json.loads(data), "zk_version": stat.version}


def admin_create_topic(zk: KazooClient, topic: str, assignment: Mapping[int, Sequence[int]]) -> None:
    """AdminZkClient.createTopicWithAssignment@2.5.1: config (setData, NONODE ⇒ create), topic znode."""
    config = zkdata.encode_topic_config({})
    try:
        zk.set(zkdata.config_topic_path(topic), config)
    except NoNodeError:
        zk.create(zkdata.config_topic_path(topic), config)
    parts = {p: zkdata.ReplicaAssignment(tuple(r)) for p, r in assignment.items()}
    zk.create(zkdata.topic_path(topic), zkdata.encode_topic(parts))


def partition_dirs(node: NodeProcess, topic: str) -> set[str]:
    """Every directory of `topic` in the node's log dir, live or renamed for deletion."""
    return {p.path.name for p in scan_log_dir(node.data_dir).partitions if p.topic == topic}


def dirs_are(node: NodeProcess, topic: str, expected: set[str]) -> bool:
    return partition_dirs(node, topic) == expected


def fenced(record: TxnRecord, epoch_zk_version: int, batched: bool = False) -> tuple[TxnOp, ...] | None:
    """The writes of a fenced multi, else None: Kafka's `multi[check /controller_epoch @v, op]`,
    or in batching mode `multi[check @v, op, op, ...]` (one check, first; the writes in order)."""
    ops = record.ops
    if record.op != "multi" or len(ops) < 2 or (len(ops) > 2 and not batched):
        return None
    check, *writes = ops
    if (check.op, check.path, check.version) != ("check", zkdata.CONTROLLER_EPOCH, epoch_zk_version):
        return None
    if any(op.op in ("check", "error") for op in writes):
        return None
    return tuple(writes)


def fenced_writes(obs: Observer, records: Iterable[TxnRecord], epoch_zk_version: int) -> list[TxnOp]:
    """The writes of the fenced multis among `records`, flattened in log order."""
    return [op for r in records for op in (fenced(r, epoch_zk_version, obs.batched) or ())]


def assert_batched(obs: Observer, records: Iterable[TxnRecord], epoch_zk_version: int) -> None:
    """In batching mode, at least one multi carried several writes (the mode is really on)."""
    if obs.batched:
        sizes = [len(w) for r in records if (w := fenced(r, epoch_zk_version, True)) is not None]
        assert max(sizes, default=0) > 1, f"no batched multi: {sizes}\n{obs.report()}"


def election_record(obs: Observer, epoch: int) -> TxnRecord | None:
    """The successful election multi that set `/controller_epoch` to `epoch`."""
    for r in obs.poll():
        if r.op != "multi" or r.failed:
            continue
        if any(o.op == "setData" and o.path == zkdata.CONTROLLER_EPOCH and o.data == str(epoch).encode()
               for o in r.ops):  # fmt: skip
            return r
    return None


def journal(node: NodeProcess, api: str, controller_epoch: int | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in node.journal()
        if e["api"] == api and (controller_epoch is None or e["controller_epoch"] == controller_epoch)
    ]


def partitions_of(entries: Iterable[dict[str, Any]], topic: str) -> list[dict[str, Any]]:
    return [p for e in entries for p in e["partitions"] if p["topic"] == topic]


def received(node: NodeProcess, api: str, topic: str, **fields: Any) -> list[dict[str, Any]]:
    """Partition entries of `topic` in the node's `api` lines whose fields match `fields`."""
    found = partitions_of(journal(node, api), topic)
    return [p for p in found if all(p.get(k) == v for k, v in fields.items())]


def received_partitions(node: NodeProcess, api: str, topic: str, expected: set[int], **fields: Any) -> bool:
    return {p["partition"] for p in received(node, api, topic, **fields)} == expected


# ---- election ------------------------------------------------------------------------------------
def test_election_on_a_fresh_chroot(node_factory: NodeFactory, observer: Observer) -> None:
    zk = observer.zk
    start_cluster(node_factory, observer, (1, 2, 3))
    data, stat = zk.get(zkdata.CONTROLLER_EPOCH)
    assert (data, stat.version) == (b"1", 1), observer.report()
    cid = controller_id(zk)
    _, cstat = zk.get(zkdata.CONTROLLER)
    _, bstat = zk.get(zkdata.broker_path(cid))
    assert cstat.ephemeralOwner != 0, observer.report()
    assert cstat.ephemeralOwner == bstat.ephemeralOwner, observer.report()  # the controller's session
    # txn log: "0" created first, then one successful multi[create /controller, setData epoch @0]
    election = observer.wait(partial(election_record, observer, 1), 10, "the election multi")
    assert election.session_id == cstat.ephemeralOwner, observer.report()
    assert [(o.op, o.path, o.ephemeral) for o in election.ops] == [
        ("create", zkdata.CONTROLLER, True),
        ("setData", zkdata.CONTROLLER_EPOCH, False),
    ], observer.report()
    assert election.ops[1].version == 1, observer.report()
    creates = [r for r in observer.records if r.op.startswith("create") and r.path == zkdata.CONTROLLER_EPOCH]
    assert [r.data for r in creates] == [b"0"], observer.report()
    assert creates[0].zxid < election.zxid, observer.report()
    won = [r for r in observer.records if r.op == "multi" and not r.failed and election.ops[0] in r.ops]
    assert won == [election], observer.report()
    for node in observer.nodes:  # every broker hears from the controller of epoch 1
        observer.wait(partial(journal, node, "UpdateMetadata", 1), 10, f"UpdateMetadata on {node.broker_id}")
        assert {e["controller_id"] for e in node.journal()} == {cid}, observer.report()


# ---- failover ------------------------------------------------------------------------------------
@both_modes
def test_failover_after_sigkill_of_the_controller(
    node_factory: NodeFactory, observer: Observer, batch_writes: bool
) -> None:
    zk = observer.zk
    nodes = start_cluster(node_factory, observer, (1, 2, 3), batch_writes)
    old = controller_id(zk)
    a, b = sorted(set(nodes) - {old})
    admin_create_topic(zk, "fo", {0: [old, a, b], 1: [a, b, old]})
    before = {p: observer.wait(partial(state, zk, "fo", p), 15, f"fo-{p} state") for p in (0, 1)}
    assert before[0]["leader"] == old, observer.report()
    assert before[1]["leader"] == a, observer.report()
    for n in nodes.values():
        observer.wait(partial(dirs_are, n, "fo", {"fo-0", "fo-1"}), 10, f"fo dirs on {n.broker_id}")

    nodes[old].kill()  # SIGKILL: /controller goes only when its session expires
    log_dir_event = zk.create(
        "/log_dir_event_notification/log_dir_event_", zkdata.encode_log_dir_event(a), sequence=True
    )
    isr_change = zk.create(
        "/isr_change_notification/isr_change_",
        zkdata.encode_isr_change([TopicPartition("fo", 1)]),
        sequence=True,
    )

    election = observer.wait(partial(election_record, observer, 2), 20, "the election of epoch 2")
    new = controller_id(zk)
    assert new in (a, b), observer.report()
    data, stat = zk.get(zkdata.CONTROLLER_EPOCH)
    assert (data, stat.version) == (b"2", 2), observer.report()
    assert zk.get(zkdata.CONTROLLER)[1].ephemeralOwner == election.session_id, observer.report()
    elected = before[0]["leader_epoch"] + 2  # §11: replica SM writes leader -1, partition SM elects
    observer.wait(
        partial(received_partitions, nodes[a], "LeaderAndIsr", "fo", {0}, leader=a, leader_epoch=elected),
        15,
        f"LeaderAndIsr electing {a} for fo-0 at leader epoch {elected}",
    )
    final = state(zk, "fo", 0)
    assert final is not None, observer.report()
    assert (final["leader"], final["leader_epoch"]) == (a, elected), observer.report()

    # -- txn log: §2.2 steps 3-4 (notification deletions) before 9 (replica SM) before 10 (partition SM)
    writes = observer.writes_of(election.session_id, after_zxid=election.zxid)
    ops = [(i, op) for i, op in enumerate(fenced_writes(observer, writes, 2)) if op.path]
    unfenced = [r.describe() for r in writes if fenced(r, 2, observer.batched) is None]
    assert not unfenced, f"unfenced controller writes: {unfenced}\n{observer.report()}"
    assert_batched(observer, writes, 2)
    deletes = {str(op.path): i for i, op in ops if op.op == "delete"}
    assert log_dir_event in deletes, observer.report()
    assert isr_change in deletes, observer.report()
    assert deletes[log_dir_event] < deletes[isr_change], observer.report()  # step 3 before step 4
    state_writes = [(i, op) for i, op in ops if op.op == "setData" and str(op.path).endswith("/state")]
    note_deletes = [i for path, i in deletes.items() if "notification" in path]
    assert state_writes, observer.report()
    assert max(note_deletes) < min(i for i, _ in state_writes), observer.report()
    previous = {zkdata.partition_state_path("fo", p): before[p]["leader"] for p in (0, 1)}
    leaders = [(i, json.loads(op.data or b"{}")["leader"], previous[str(op.path)]) for i, op in state_writes]
    replica_sm = [i for i, leader, prev in leaders if leader in (-1, prev)]  # no election: ISR shrink
    partition_sm = [i for i, leader, prev in leaders if leader not in (-1, prev)]  # elections
    assert replica_sm, observer.report()
    assert partition_sm, observer.report()
    assert max(replica_sm) < min(partition_sm), observer.report()
    p0_state = zkdata.partition_state_path("fo", 0)
    first_p0 = next(json.loads(op.data or b"{}") for _, op in state_writes if op.path == p0_state)
    assert (first_p0["leader"], first_p0["isr"]) == (-1, [a, b]), observer.report()

    # -- journals: per broker, UpdateMetadata with the broker list only first, then LeaderAndIsr
    for bid in (a, b):
        lines = [e for e in nodes[bid].journal() if e["controller_epoch"] == 2]
        assert len(lines) >= 2, observer.report()
        assert {e["controller_id"] for e in lines} == {new}, observer.report()
        first, second = lines[0], lines[1]
        assert (first["api"], first["partitions"]) == ("UpdateMetadata", []), observer.report()
        assert sorted(x["id"] for x in first["live_brokers"]) == [a, b], observer.report()
        assert second["api"] == "LeaderAndIsr", observer.report()


# ---- topic creation ------------------------------------------------------------------------------
@both_modes
def test_topic_creation(node_factory: NodeFactory, observer: Observer, batch_writes: bool) -> None:
    zk = observer.zk
    nodes = start_cluster(node_factory, observer, (1, 2, 3), batch_writes)
    session = zk.get(zkdata.CONTROLLER)[1].ephemeralOwner
    start = observer.poll()[-1].zxid
    # broker 9 is never registered: leader = first live replica, ISR = live replicas
    admin_create_topic(zk, "created", {0: [9, 2, 1], 1: [3, 1]})
    expected = {0: (2, [2, 1]), 1: (3, [3, 1])}
    for p, (leader, isr) in expected.items():
        s = observer.wait(partial(state, zk, "created", p), 15, f"created-{p} state")
        want = {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 0, "isr": isr}
        assert s == {**want, "zk_version": 0}, observer.report()

    # txn log: partitions, partitions/<p> (all p), partitions/<p>/state, each multi[check, create]
    # (batching mode: one multi[check, create...] per step)
    base = zkdata.topic_path("created")
    writes = [r for r in observer.writes_of(session, start) if any(base in p for p in r.paths())]
    groups = [fenced(r, 1, observer.batched) for r in writes]
    assert None not in groups, observer.report()
    ops = fenced_writes(observer, writes, 1)
    creates = [op for op in ops if op.op == "create"]
    assert len(creates) == len(ops) == 5, observer.report()
    expected_groups = [1, 2, 2] if observer.batched else [1] * 5
    assert [len(g or ()) for g in groups] == expected_groups, observer.report()
    paths = [str(op.path) for op in creates]
    assert paths[0] == f"{base}/partitions", observer.report()
    assert sorted(paths[1:3]) == [f"{base}/partitions/0", f"{base}/partitions/1"], observer.report()
    assert sorted(paths[3:]) == [f"{base}/partitions/0/state", f"{base}/partitions/1/state"], (
        observer.report()
    )
    assert all(op.data in (None, b"") for op in creates[:3]), observer.report()

    # journals: LeaderAndIsr(isNew=true) to exactly the ISR brokers; UpdateMetadata to all;
    # log dirs on exactly the ISR brokers
    for bid, node in nodes.items():
        mine = {p for p, (_, isr) in expected.items() if bid in isr}
        observer.wait(
            partial(received_partitions, node, "LeaderAndIsr", "created", mine),
            10,
            f"LeaderAndIsr {mine} on {bid}",
        )
        for x in received(node, "LeaderAndIsr", "created"):
            leader, isr = expected[x["partition"]]
            got = (
                x["is_new"],
                x["leader"],
                x["isr"],
                x["leader_epoch"],
                x["zk_version"],
                x["controller_epoch"],
            )
            assert got == (True, leader, isr, 0, 0, 1), observer.report()
        observer.wait(
            partial(dirs_are, node, "created", {f"created-{p}" for p in mine}), 10, f"dirs on {bid}"
        )
        observer.wait(
            partial(received_partitions, node, "UpdateMetadata", "created", {0, 1}),
            10,
            f"UpdateMetadata on {bid}",
        )


# ---- reassignment --------------------------------------------------------------------------------
def controller_writes(obs: Observer, path: str, after_zxid: int) -> list[dict[str, Any]]:
    """The data of the active controller's fenced setData writes of `path` after `after_zxid`."""
    session = obs.zk.get(zkdata.CONTROLLER)[1].ephemeralOwner
    ops = fenced_writes(obs, obs.writes_of(session, after_zxid), 1)
    return [json.loads(op.data or b"{}") for op in ops if op.op == "setData" and op.path == path]


def reassignment_done(zk: KazooClient, topic: str, target: Sequence[int], final_epoch: int) -> bool:
    if zk.exists(zkdata.REASSIGN_PARTITIONS):
        return False
    assignment = zkdata.decode_topic(topic, zk.get(zkdata.topic_path(topic))[0]).partitions
    s = state(zk, topic, 0)
    return assignment[0].replicas == tuple(target) and s is not None and s["leader_epoch"] >= final_epoch


def reassign(obs: Observer, topic: str, target: Sequence[int], final_epoch: int, timeout_s: float) -> None:
    zk = obs.zk
    start = obs.poll()[-1].zxid
    zk.create(
        zkdata.REASSIGN_PARTITIONS, zkdata.encode_reassignment({TopicPartition(topic, 0): list(target)})
    )
    obs.wait(
        partial(reassignment_done, zk, topic, target, final_epoch), timeout_s, f"{topic}-0 → {list(target)}"
    )
    data = json.loads(zk.get(zkdata.topic_path(topic))[0])
    assert data["partitions"] == {"0": list(target)}, obs.report()
    assert data.get("adding_replicas", {}) == {}, obs.report()
    assert data.get("removing_replicas", {}) == {}, obs.report()
    s = state(zk, topic, 0)
    assert s is not None, obs.report()
    assert (s["leader"], s["leader_epoch"]) == (target[0], final_epoch), obs.report()
    assert sorted(s["isr"]) == sorted(target), obs.report()
    # txn log: U1 writes RS = TRS + ORS with AR/RR (§4.2 reassignTo), B6 writes RS = TRS; the
    # state writes are A1, B3, then one B4 write per removed ISR member, +1 each (§11)
    topics = controller_writes(obs, zkdata.topic_path(topic), start)
    assert len(topics) == 2, obs.report()
    origin = [r for r in topics[0]["partitions"]["0"] if r not in target]
    assert topics[0]["partitions"] == {"0": [*target, *origin]}, obs.report()
    assert topics[0]["adding_replicas"] == {"0": list(target)}, obs.report()
    assert topics[0]["removing_replicas"] == {"0": origin}, obs.report()
    assert topics[1] == data, obs.report()
    epochs = [w["leader_epoch"] for w in controller_writes(obs, zkdata.partition_state_path(topic, 0), start)]
    assert epochs == list(range(1, final_epoch + 1)), obs.report()


@both_modes
def test_reassignment_of_all_replicas_on_six_nodes(
    node_factory: NodeFactory, observer: Observer, batch_writes: bool
) -> None:
    zk = observer.zk
    nodes = start_cluster(node_factory, observer, range(1, 7), batch_writes)
    admin_create_topic(zk, "moved", {0: [1, 2, 3]})
    observer.wait(partial(state, zk, "moved", 0), 15, "moved-0 state")
    for b in (1, 2, 3):
        observer.wait(partial(dirs_are, nodes[b], "moved", {"moved-0"}), 10, f"moved-0 on {b}")
    reassign(observer, "moved", [4, 5, 6], final_epoch=5, timeout_s=30)  # §11: {1,2,3}→{4,5,6} ends at 5
    for b in (1, 2, 3):
        observer.wait(
            partial(received_partitions, nodes[b], "StopReplica", "moved", {0}, delete_partition=True),
            10,
            f"StopReplica(delete=true) for moved-0 on broker {b}",
        )
        observer.wait(partial(dirs_are, nodes[b], "moved", set()), 10, f"moved-0 dir gone from {b}")
    for b in (4, 5, 6):
        assert partition_dirs(nodes[b], "moved") == {"moved-0"}, observer.report()
        assert not received(nodes[b], "StopReplica", "moved", delete_partition=True), observer.report()


@both_modes
def test_reassignment_of_a_single_replica_on_two_nodes(
    node_factory: NodeFactory, observer: Observer, batch_writes: bool
) -> None:
    zk = observer.zk
    nodes = start_cluster(node_factory, observer, (0, 1), batch_writes)
    admin_create_topic(zk, "single", {0: [0]})
    observer.wait(partial(state, zk, "single", 0), 15, "single-0 state")
    reassign(observer, "single", [1], final_epoch=3, timeout_s=30)  # §11: [0]→[1] ends at 3
    observer.wait(partial(dirs_are, nodes[0], "single", set()), 10, "single-0 dir gone from broker 0")
    assert partition_dirs(nodes[1], "single") == {"single-0"}, observer.report()


# ---- deletion ------------------------------------------------------------------------------------
def topic_gone(zk: KazooClient, topic: str) -> bool:
    return not zk.exists(zkdata.delete_topic_path(topic)) and not zk.exists(zkdata.topic_path(topic))


@both_modes
def test_topic_deletion(node_factory: NodeFactory, observer: Observer, batch_writes: bool) -> None:
    zk = observer.zk
    nodes = start_cluster(node_factory, observer, (1, 2, 3), batch_writes)
    session = zk.get(zkdata.CONTROLLER)[1].ephemeralOwner
    replicas = {1: {0}, 2: {0, 1}, 3: {1}}
    admin_create_topic(zk, "doomed", {0: [1, 2], 1: [2, 3]})
    for p in (0, 1):
        observer.wait(partial(state, zk, "doomed", p), 15, f"doomed-{p} state")
    for b, mine in replicas.items():
        observer.wait(
            partial(dirs_are, nodes[b], "doomed", {f"doomed-{p}" for p in mine}), 10, f"dirs on {b}"
        )
    start = observer.poll()[-1].zxid
    before = set(_tree(zk, "/"))
    marker = zkdata.delete_topic_path("doomed")
    zk.create(marker, DELETE_TOPIC_MARKER_DATA)

    observer.wait(partial(topic_gone, zk, "doomed"), 20, "deletion of doomed")
    topic_tree = {
        p for p in before if p == zkdata.topic_path("doomed") or p.startswith("/brokers/topics/doomed/")
    }
    gone = before - set(_tree(zk, "/"))
    assert gone == topic_tree | {zkdata.config_topic_path("doomed")}, observer.report()  # + the marker

    writes = observer.writes_of(session, start)
    unfenced = [r.describe() for r in writes if fenced(r, 1, observer.batched) is None]
    assert not unfenced, f"unfenced controller writes: {unfenced}\n{observer.report()}"
    deletes = [str(op.path) for op in fenced_writes(observer, writes, 1) if op.op == "delete"]
    assert set(deletes) == topic_tree | {zkdata.config_topic_path("doomed"), marker}, observer.report()
    assert deletes[-1] == marker, observer.report()

    for b, node in nodes.items():
        observer.wait(
            partial(received_partitions, node, "UpdateMetadata", "doomed", {0, 1}, leader=-2),
            10,
            f"UpdateMetadata with leader -2 for doomed-0/1 on broker {b}",
        )
        observer.wait(
            partial(received_partitions, node, "StopReplica", "doomed", replicas[b], delete_partition=True),
            10,
            f"StopReplica(delete=true) for doomed-{sorted(replicas[b])} on broker {b}",
        )
        observer.wait(partial(dirs_are, node, "doomed", set()), 10, f"doomed dirs gone from {b}")
