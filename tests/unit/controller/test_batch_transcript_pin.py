"""Pin of the bytes the speed work (issue 13) must not disturb: every request and every log line
of a multi-broker cluster's failover, broker failures, controlled shutdown, reassignment, ISR
change and topic deletion, TRACE on and TRACE off.

The expected transcript `data/batch_transcript.txt` was recorded from the controller *before*
the optimisations of issue 13 (request-batch caching, set-free `is_replica_online`, lazy TRACE
formatting); this test fails on any byte of difference. Regenerate only for a deliberate,
reviewed behaviour change: `REGENERATE_BATCH_TRANSCRIPT=1 pytest <this file>`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafkawire.states import TopicPartition
from reference_controller import zkdata as zd
from reference_controller.controller.effects import SendRequest
from reference_controller.controller.events import ControlledShutdown, ControlledShutdownResult
from reference_controller.controller.ports import CreateOp
from reference_controller.logutil import STATE_CHANGE_LOGGER, TRACE
from tests.unit.controller.harness import Cluster

pytestmark = pytest.mark.unit

EXPECTED = Path(__file__).parent / "data" / "batch_transcript.txt"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=TRACE)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = f"{record.levelname} {record.name} {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            text += f" | {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        self.lines.append(text)


@contextmanager
def _capture(level: int) -> Iterator[_Collect]:
    handler = _Collect()
    loggers = [logging.getLogger(STATE_CHANGE_LOGGER), logging.getLogger("kafka")]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(level)
        lg.propagate = False
    try:
        yield handler
    finally:
        for lg, (lvl, prop) in zip(loggers, saved, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(lvl)
            lg.propagate = prop


def _scenario(out: list[str]) -> None:
    cluster = Cluster(auto_delete_responses=True)
    cluster.start(1, 2, 3, 4, 5)
    marks = dict.fromkeys(cluster.nodes, 0)

    def drain(step: str) -> None:
        out.append(f"=== {step}")
        for broker_id, node in sorted(cluster.nodes.items()):
            for effect in node.effects[marks[broker_id] :]:
                if isinstance(effect, SendRequest):
                    out.append(f"node {broker_id}: {effect.request!r}")
            marks[broker_id] = len(node.effects)

    drain("start")
    cluster.create_topic("alpha", {p: [1 + p % 5, 1 + (p + 1) % 5, 1 + (p + 2) % 5] for p in range(8)})
    cluster.create_topic("beta", {p: [1 + (p + 3) % 5, 1 + p % 5] for p in range(6)})
    cluster.create_topic("gamma", {0: [2], 1: [3, 4, 5, 1]})
    drain("topics created")
    cluster.expand_isr("gamma", 0, [2])
    cluster.kill(1)  # the controller dies: failover to another node
    drain("controller 1 killed")
    cluster.kill(3)  # a leader of several partitions dies
    drain("broker 3 killed")
    node = cluster.controller()
    replies: list[ControlledShutdownResult] = []
    cluster.process(
        node, ControlledShutdown(4, node.controller.context.live_broker_epochs[4], replies.append)
    )
    cluster.run()
    out.append(f"controlled shutdown replies: {replies!r}")
    drain("controlled shutdown of 4")
    cluster.admin.create_recursive(zd.delete_topic_path("beta"), None)
    cluster.run()
    drain("beta queued for deletion")
    cluster.start(1, 3)
    drain("brokers 1 and 3 back")
    cluster.admin.create(
        CreateOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment({TopicPartition("alpha", 2): [5, 1, 2]}))
    )
    cluster.run()
    drain("reassignment of alpha-2 started")
    cluster.expand_isr("alpha", 2, [3, 4, 5, 1, 2])
    drain("reassignment of alpha-2 completed")
    lai, epoch = cluster.state("alpha", 1)
    cluster.admin.set_data(
        zd.partition_state_path("alpha", 1),
        zd.encode_partition_state(zd.LeaderAndIsr(lai.leader, lai.leader_epoch, (lai.leader,), 0), epoch),
        lai.zk_version,
    )
    cluster.admin.create(
        CreateOp(
            zd.isr_change_path("isr_change_"),
            zd.encode_isr_change([TopicPartition("alpha", 1)]),
            sequential=True,
        )
    )
    cluster.run()
    drain("isr change notification")


def _transcript(level: int) -> list[str]:
    out: list[str] = []
    with _capture(level) as handler:
        _scenario(out)
    return [*out, "=== log", *handler.lines]


def _render() -> str:
    parts = ["##### TRACE on", *_transcript(TRACE), "##### TRACE off (INFO)", *_transcript(logging.INFO)]
    return "\n".join(parts) + "\n"


def test_requests_and_log_lines_are_byte_identical_to_the_recorded_transcript() -> None:
    actual = _render()
    if os.environ.get("REGENERATE_BATCH_TRANSCRIPT") == "1":
        EXPECTED.write_text(actual, encoding="utf-8")
    expected = EXPECTED.read_text(encoding="utf-8")
    assert actual.splitlines() == expected.splitlines()
