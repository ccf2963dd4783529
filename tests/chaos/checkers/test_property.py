"""Property: every checker accepts any run of a correct cluster.

:class:`CorrectCluster` is a small model of a 2.5 controller that follows the spec's rules — one
fenced multi per write under the current epoch, leader epochs bumped by the controller only,
ISR-only writes by leaders, reassignment and deletion in Kafka's order, brokers answering 0 to
what they apply — and emits the three inputs of a run at once: the history (with failed,
indeterminate and nemesis ops), the transaction log, and the final state with request journals
and Metadata views. Hypothesis drives it through random schedules; a checker that flags any of
them is too strict (or the model is wrong — either way a bug to look at).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaos.checkers import (
    FinalState,
    MetadataPartition,
    PartitionState,
    ReceivedRequest,
    RequestPartition,
    TopicState,
    check_all,
)
from chaos.history import History, OpType
from probes import TopicPartition
from tests.chaos.checkers.builders import (
    ADMIN,
    Log,
    create,
    delete,
    set_data,
    state_data,
    state_path,
    topic_data,
)

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

BROKERS = (1, 2, 3)
NAMES = ("a", "b", "c")


@dataclass
class CorrectCluster:
    log: Log = field(default_factory=Log)
    history: History = field(default_factory=lambda: History(clock=iter(range(0, 10**12, 7)).__next__))
    controller: int = 0
    topics: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    czxid: dict[str, int] = field(default_factory=dict)
    states: dict[tuple[str, int], tuple[int, int, list[int], int]] = field(default_factory=dict)
    journals: dict[int, list[ReceivedRequest]] = field(default_factory=dict)
    seq: int = 0

    @staticmethod
    def session(broker: int) -> int:
        return 0x2000 + broker

    def op(self, process: str, f: str, value: dict[str, object], outcome: OpType) -> None:
        self.history.complete(self.history.invoke(process, f, value), outcome)

    def send(
        self, broker: int, kind: str, parts: list[tuple[str, int, int]], delete: bool | None = None
    ) -> None:
        partitions = tuple(RequestPartition(t, p, None, e, 0) for t, p, e in parts)
        request = ReceivedRequest(
            self.seq, self.controller, kind, self.log.epoch, 0x30 + broker, 0, partitions, delete
        )
        self.journals.setdefault(broker, []).append(request)
        self.seq += 1

    def update_metadata(self) -> None:
        for b in BROKERS:
            self.send(b, "UpdateMetadata", [])

    # ---- steps -----------------------------------------------------------------------------------

    def elect(self, broker: int) -> None:
        if self.controller:
            self.op("nemesis", "start_fault", {"fault": "kill", "broker_id": self.controller}, "ok")
            self.log.failed_multi(self.session(self.controller))  # the deposed one's last try, fenced
        self.controller = broker
        self.log.elect(self.session(broker), broker)
        if len(self.log.records) > 3:
            self.op("nemesis", "stop_fault", {"fault": "kill"}, "info")
        self.update_metadata()

    def write_state(self, topic: str, p: int, leader: int, epoch: int, isr: list[int]) -> None:
        self.log.set_state(
            self.session(self.controller), topic, p, state_data(leader, epoch, isr, self.log.epoch)
        )
        self.states[(topic, p)] = (leader, epoch, isr, self.log.versions[state_path(topic, p)])

    def create_topic(self, name: str, assignment: dict[int, list[int]], outcome: OpType) -> None:
        if name in self.topics:
            self.op("client-0", "create_topic", {"topic": name}, "fail")
            return
        self.op(
            "client-0",
            "create_topic",
            {"topic": name, "assignment": {str(p): r for p, r in assignment.items()}},
            outcome,
        )
        if outcome == "info":
            return  # timed out before it wrote anything
        self.czxid[name] = self.log.create_topic(ADMIN, name, assignment).zxid
        self.topics[name] = assignment
        self.log.fenced(self.session(self.controller), create(f"/brokers/topics/{name}/partitions"))
        for p, replicas in assignment.items():
            self.log.fenced(self.session(self.controller), create(f"/brokers/topics/{name}/partitions/{p}"))
            self.write_state(name, p, replicas[0], 0, list(replicas))
            for b in replicas:
                self.send(b, "LeaderAndIsr", [(name, p, 0)])
        self.update_metadata()

    def elect_leader(self, name: str, p: int) -> None:
        """Kafka's shapes of a move away from a live leader: a preferred election (to the first
        replica, ISR kept) when that replica is in the ISR, else a controlled shutdown's (the
        next ISR member in ISR order, the old leader dropped)."""
        leader, epoch, isr, _ = self.states[(name, p)]
        first = self.topics[name][p][0]
        if first != leader and first in isr:
            self.write_state(name, p, first, epoch + 1, isr)
        else:
            new_leader = isr[(isr.index(leader) + 1) % len(isr)]
            new_isr = [b for b in isr if b != leader] if new_leader != leader else isr
            self.write_state(name, p, new_leader, epoch + 1, new_isr)
        for b in self.topics[name][p]:
            self.send(b, "LeaderAndIsr", [(name, p, epoch + 1)])

    def shrink_isr(self, name: str, p: int) -> None:
        leader, epoch, isr, _ = self.states[(name, p)]
        if len(isr) < 2:
            return
        smaller = [*[b for b in isr if b != leader][1:], leader]
        cepoch = self.log.epoch  # the epoch of the LeaderAndIsr that made it leader, near enough
        self.log.set_state(
            self.session(leader), name, p, state_data(leader, epoch, smaller, cepoch), fenced=False
        )
        self.states[(name, p)] = (leader, epoch, smaller, self.log.versions[state_path(name, p)])

    def reassign(self, name: str, p: int, target: list[int]) -> None:
        self.op("client-1", "reassign", {"topic": name, "assignment": {str(p): target}}, "ok")
        session, original = self.session(self.controller), self.topics[name][p]
        entry = {"topic": name, "partition": p, "replicas": target}
        self.log.write(
            ADMIN,
            create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [entry]}).encode()),
        )
        full = target + [b for b in original if b not in target]
        adding = {p: [b for b in target if b not in original]}
        self._set_topic(name, {**self.topics[name], p: full}, adding)
        leader, epoch, isr, _ = self.states[(name, p)]
        caught_up = [*isr, *(b for b in target if b not in isr)]  # the new replicas join the ISR
        self.log.set_state(
            self.session(leader), name, p, state_data(leader, epoch, caught_up, self.log.epoch), fenced=False
        )
        self.write_state(name, p, target[0], epoch + 1, list(target))
        for b in full:
            self.send(b, "LeaderAndIsr", [(name, p, epoch + 1)])
        for b in set(original) - set(target):
            self.send(b, "StopReplica", [(name, p, -1)], delete=True)
        self.topics[name] = {**self.topics[name], p: list(target)}
        self._set_topic(name, self.topics[name], {})
        self.log.fenced(session, delete("/admin/reassign_partitions"))

    def _set_topic(self, name: str, assignment: dict[int, list[int]], adding: dict[int, list[int]]) -> None:
        path = f"/brokers/topics/{name}"
        data = topic_data(assignment, adding)
        self.log.fenced(self.session(self.controller), set_data(path, data, self.log.next_version(path)))

    def delete_topic(self, name: str, outcome: OpType) -> None:
        self.op("client-1", "delete_topic", {"topic": name}, outcome)
        session = self.session(self.controller)
        self.log.write(ADMIN, create(f"/admin/delete_topics/{name}"))
        for p, replicas in sorted(self.topics[name].items()):
            _, epoch, isr, _ = self.states.pop((name, p))
            self.write_state(name, p, -1, epoch + 1, isr)
            del self.states[(name, p)]
            for b in replicas:
                self.send(b, "StopReplica", [(name, p, -1)], delete=True)
            self.log.fenced(session, delete(state_path(name, p)))
            self.log.fenced(session, delete(f"/brokers/topics/{name}/partitions/{p}"))
        for path in (
            f"/brokers/topics/{name}/partitions",
            f"/brokers/topics/{name}",
            f"/admin/delete_topics/{name}",
        ):
            self.log.fenced(session, delete(path))
        self.log.versions = {
            k: v for k, v in self.log.versions.items() if not k.startswith(f"/brokers/topics/{name}")
        }
        del self.topics[name]
        self.update_metadata()

    # ---- the end ---------------------------------------------------------------------------------

    def final_state(self) -> FinalState:
        states = {
            TopicPartition(t, p): PartitionState(leader, epoch, tuple(isr), self.log.epoch, version)
            for (t, p), (leader, epoch, isr, version) in self.states.items()
        }
        view = {
            t: {
                p: MetadataPartition(s.leader, tuple(self.topics[t][p]), s.isr)
                for (tt, p), s in _by_topic(states, t)
            }
            for t in self.topics
        }
        return FinalState(
            controller=self.controller,
            controller_epoch=self.log.epoch,
            controller_epoch_version=self.log.epoch_version,
            topics={
                t: TopicState(self.czxid[t], {p: tuple(r) for p, r in a.items()})
                for t, a in self.topics.items()
            },
            partition_states=states,
            reassign_partitions=None,
            preferred_replica_election=None,
            delete_topics=frozenset(),
            live_brokers=frozenset(BROKERS),
            metadata=dict.fromkeys(BROKERS, view),
            journals={b: tuple(rs) for b, rs in self.journals.items()},
        )


def _by_topic(
    states: dict[TopicPartition, PartitionState], topic: str
) -> list[tuple[tuple[str, int], PartitionState]]:
    return [((tp.topic, tp.partition), s) for tp, s in states.items() if tp.topic == topic]


brokers = st.sampled_from(BROKERS)
replica_lists = st.lists(brokers, min_size=1, max_size=3, unique=True)
outcomes: st.SearchStrategy[OpType] = st.sampled_from(["ok", "ok", "info"])


@st.composite
def runs(draw: st.DrawFn) -> CorrectCluster:
    cluster = CorrectCluster()
    cluster.elect(draw(brokers))
    for _ in range(draw(st.integers(1, 25))):
        step = draw(st.sampled_from(["create", "create", "leader", "isr", "reassign", "delete", "elect"]))
        partitions = [(t, p) for t, a in cluster.topics.items() for p in a]
        if step == "create":
            assignment = {p: draw(replica_lists) for p in range(draw(st.integers(1, 3)))}
            cluster.create_topic(draw(st.sampled_from(NAMES)), assignment, draw(outcomes))
        elif step == "elect":
            cluster.elect(draw(brokers))
        elif partitions and step == "leader":
            cluster.elect_leader(*draw(st.sampled_from(partitions)))
        elif partitions and step == "isr":
            cluster.shrink_isr(*draw(st.sampled_from(partitions)))
        elif partitions and step == "reassign":
            cluster.reassign(*draw(st.sampled_from(partitions)), draw(replica_lists))
        elif cluster.topics and step == "delete":
            cluster.delete_topic(draw(st.sampled_from(sorted(cluster.topics))), draw(outcomes))
    return cluster


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_every_checker_accepts_every_run_of_a_correct_cluster(run: CorrectCluster) -> None:
    verdicts = check_all(run.history, run.log.records, run.final_state())
    assert [v.to_json() for v in verdicts if not v.is_valid] == []


@settings(max_examples=60, deadline=None)
@given(runs(), st.data())
def test_dropping_an_acknowledged_topic_from_the_end_state_is_always_caught(
    run: CorrectCluster, data: st.DataObject
) -> None:
    acked = {
        p.invoke.value["topic"]
        for p in run.history.pairs()
        if p.invoke.f == "create_topic" and p.outcome == "ok" and p.invoke.value.get("topic") in run.topics
    }
    deleted_later = {p.invoke.value["topic"] for p in run.history.pairs() if p.invoke.f == "delete_topic"}
    candidates = sorted(acked - deleted_later)
    if not candidates:
        return
    victim = data.draw(st.sampled_from(candidates))
    state = run.final_state()
    lost = FinalState(
        **{**state.__dict__, "topics": {t: s for t, s in state.topics.items() if t != victim}},
    )
    verdicts = {v.checker: v for v in check_all(run.history, run.log.records, lost)}
    assert verdicts["acknowledged_creations_survive"].validity == "invalid"
    assert repr(victim) in verdicts["acknowledged_creations_survive"].message
