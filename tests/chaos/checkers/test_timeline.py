"""The transaction log is replayed once into the timeline every checker reads; a growing log is
replayed incrementally; one table classifies the paths."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.checkers import ALL_CHECKERS, LIVENESS_CHECKERS, Timeline, check_all
from chaos.checkers.paths import Kind, classify
from chaos.checkers.timeline import Election, TimelineOrderError, follow
from probes import TxnRecord
from tests.chaos.checkers.builders import load_capture

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

DATA = Path(__file__).parent / "data"


class Passes(list[TxnRecord]):
    """A record list that counts the passes made over it."""

    passes = 0

    def __iter__(self) -> Iterator[TxnRecord]:
        self.passes += 1
        return super().__iter__()


@pytest.mark.parametrize("capture", ["failover", "deadlock", "deadlock-replay"])
def test_check_all_passes_over_the_transaction_log_once(capture: str) -> None:
    history, records, state = load_capture(DATA / capture)
    log = Passes(records)
    verdicts = check_all(history, log, state)
    assert log.passes == 1
    assert len(verdicts) == len(ALL_CHECKERS)
    liveness = Passes(records)
    check_all(history, liveness, state, LIVENESS_CHECKERS)
    assert liveness.passes == 1


def test_a_growing_log_is_replayed_incrementally_and_ends_as_one_replay() -> None:
    _, records, _ = load_capture(DATA / "deadlock")
    timeline = None
    for end in range(0, len(records) + 1, 17):
        timeline = follow(timeline, records[:end])
        assert timeline.record_count == end
    timeline = follow(timeline, records)
    whole = Timeline.of(records)
    assert timeline.events == whole.events
    assert timeline.controller_writes == whole.controller_writes
    assert timeline.registered_brokers == whole.registered_brokers


def test_follow_extends_the_same_timeline_and_replays_afresh_only_when_the_log_was_re_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, records, _ = load_capture(DATA / "failover")
    replayed: list[int] = []
    step = Timeline._step

    def counted(self: Timeline, record: TxnRecord) -> None:
        replayed.append(record.zxid)
        step(self, record)

    monkeypatch.setattr(Timeline, "_step", counted)
    first = follow(None, records[:50])
    assert follow(first, records) is first
    assert first.record_count == len(records)
    assert replayed == [r.zxid for r in records]  # each record replayed once
    other = follow(first, records[:40])  # a shorter log: not an extension of what was replayed
    assert other is not first
    assert other.record_count == 40


def test_records_out_of_order_are_refused() -> None:
    _, records, _ = load_capture(DATA / "failover")
    timeline = Timeline.of(records[10:20])
    with pytest.raises(TimelineOrderError, match="is not after"):
        timeline.extend(records[:5])


def test_the_replay_of_a_real_failover_shows_its_two_elections() -> None:
    _, records, state = load_capture(DATA / "failover")
    timeline = Timeline.of(records)
    assert [(e.epoch, e.epoch_zk_version) for e in timeline.elections] == [(0, 0), (1, 1), (2, 2)]
    assert all(isinstance(e, Election) for e in timeline.of_type(Election))
    assert timeline.epoch_zk_version == state.controller_epoch_version
    assert {w.role for w in timeline.controller_writes} == {"election", "fenced"}


@pytest.mark.parametrize(
    ("path", "kind", "names"),
    [
        ("/controller", Kind.CONTROLLER, {}),
        ("/controller_epoch", Kind.CONTROLLER_EPOCH, {}),
        ("/brokers/ids/3", Kind.BROKER, {"broker": 3}),
        ("/brokers/topics/t.x", Kind.TOPIC, {"topic": "t.x"}),
        ("/brokers/topics/t/partitions", Kind.PARTITIONS, {"topic": "t"}),
        ("/brokers/topics/t/partitions/12", Kind.PARTITION, {"topic": "t", "partition": 12}),
        ("/brokers/topics/t/partitions/1/state", Kind.PARTITION_STATE, {"topic": "t", "partition": 1}),
        ("/config/topics/t", Kind.TOPIC_CONFIG, {"topic": "t"}),
        ("/admin/reassign_partitions", Kind.REASSIGN_PARTITIONS, {}),
        ("/admin/preferred_replica_election", Kind.PREFERRED_REPLICA_ELECTION, {}),
        ("/admin/delete_topics/t", Kind.DELETE_TOPIC_REQUEST, {"topic": "t"}),
        ("/isr_change_notification/isr_change_0000000001", Kind.ISR_CHANGE_NOTIFICATION, {}),
        ("/log_dir_event_notification/log_dir_event_0000000001", Kind.LOG_DIR_EVENT_NOTIFICATION, {}),
        ("/brokers/topics/t/partitions/x", Kind.OTHER, {}),
        ("/admin/delete_topics", Kind.OTHER, {}),
        ("/brokers/ids", Kind.OTHER, {}),
    ],
)
def test_one_table_classifies_every_path(path: str, kind: Kind, names: dict[str, object]) -> None:
    z = classify(path)
    assert z.kind == kind
    assert {
        k: v
        for k, v in (("topic", z.topic), ("partition", z.partition), ("broker", z.broker))
        if v is not None
    } == names
