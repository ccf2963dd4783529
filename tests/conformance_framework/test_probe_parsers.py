"""Unit: state-change-log parser, log-dir scanner and request-proxy frame decoding (kio bytes)."""

from __future__ import annotations

import io
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.leader_and_isr.v4 import response as lai4r
from kio.serial import entity_writer
from kio.static.primitive import i32

from cluster import crafted
from probes import request_proxy as rp
from probes.logdirs import parse_leader_epoch_checkpoint, scan_log_dir
from probes.state_change_log import (
    invalid_transitions,
    parse_lines,
    parse_tp,
    partition_transitions,
    replica_transitions,
)

pytestmark = pytest.mark.unit

LOG = (
    "\n".join(
        [
            (
                "[2024-05-11 12:00:00,123] TRACE [Controller id=1 epoch=3] Changed state of replica 2 for "
                "partition foo-bar-0 from NewReplica to OnlineReplica (state.change.logger)"
            ),
            (
                "[2024-05-11 12:00:00,124] TRACE [Controller id=1 epoch=3] Changed partition foo-0 state "
                "from NewPartition to OnlinePartition with state LeaderAndIsr(leader=1, leaderEpoch=0, "
                "isr=List(1, 2), zkVersion=0) (state.change.logger)"
            ),
            (
                "[2024-05-11 12:00:00,125] TRACE [Controller id=1 epoch=3] Changed partition foo-1 from "
                "OnlinePartition to OfflinePartition (state.change.logger)"
            ),
            (
                "[2024-05-11 12:00:01,000] ERROR [Controller id=1 epoch=3] Controller 1 epoch 3 initiated "
                "state change of replica 2 for partition foo-0 from ReplicaDeletionSuccessful to "
                "ReplicaDeletionIneligible failed (state.change.logger)"
            ),
            (
                "java.lang.IllegalStateException: Replica [Topic=foo,Partition=0,Replica=2] should be in "
                "the OfflineReplica,ReplicaDeletionStarted states before moving to "
                "ReplicaDeletionIneligible state. Instead it is in ReplicaDeletionSuccessful state"
            ),
            (
                "[2024-05-11 12:00:02,000] ERROR [Controller id=1 epoch=3] Controller 1 epoch 3 failed to "
                "change state for partition foo-0 from OnlinePartition to NewPartition "
                "(state.change.logger)"
            ),
            (
                "java.lang.IllegalStateException: Partition foo-0 should be in one of "
                "NonExistentPartition states before moving to NewPartition state. Instead it is in "
                "OnlinePartition state"
            ),
            (
                "[2024-05-11 12:00:03,000] WARN [Broker id=2] Ignoring LeaderAndIsr request from "
                "controller 1 with correlation id 5 since its controller epoch 2 is old. Latest known "
                "controller epoch is 3 (state.change.logger)"
            ),
        ]
    )
    + "\n"
)


def test_state_change_log_entries_and_prefixes() -> None:
    entries = parse_lines(LOG.splitlines())
    assert len(entries) == 6
    assert (entries[0].level, entries[0].controller_id, entries[0].controller_epoch) == ("TRACE", 1, 3)
    assert entries[0].logger == "state.change.logger"
    assert entries[5].broker_id == 2
    assert entries[5].message.startswith("Ignoring LeaderAndIsr")
    assert entries[3].detail[0].startswith("java.lang.IllegalStateException: Replica [Topic=foo")


def test_state_change_log_typed_matchers() -> None:
    entries = parse_lines(LOG.splitlines())
    (rt,) = replica_transitions(entries)
    assert (rt.replica, rt.topic, rt.partition, rt.from_state, rt.to_state) == (
        2,
        "foo-bar",
        0,
        "NewReplica",
        "OnlineReplica",
    )
    pts = partition_transitions(entries)
    assert [(p.partition, p.from_state, p.to_state) for p in pts] == [
        (0, "NewPartition", "OnlinePartition"),
        (1, "OnlinePartition", "OfflinePartition"),
    ]
    inv = invalid_transitions(entries)
    assert [(i.kind, i.from_state, i.to_state, i.replica) for i in inv] == [
        ("replica", "ReplicaDeletionSuccessful", "ReplicaDeletionIneligible", 2),
        ("partition", "OnlinePartition", "NewPartition", None),
    ]
    assert inv[1].cause.startswith("java.lang.IllegalStateException: Partition foo-0")


def test_parse_tp_both_styles() -> None:
    assert parse_tp("a-b-12") == ("a-b", 12)
    assert parse_tp("[foo,3]") == ("foo", 3)


def test_leader_epoch_checkpoint() -> None:
    assert parse_leader_epoch_checkpoint("0\n1\n0 0\n") == [(0, 0)]
    assert parse_leader_epoch_checkpoint("") == []
    with pytest.raises(ValueError):
        parse_leader_epoch_checkpoint("0\n2\n0 0\n")


def test_scan_log_dir(tmp_path: Path) -> None:
    live = tmp_path / "foo-0"
    live.mkdir()
    for name in ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex"):
        (live / name).touch()
    (live / "leader-epoch-checkpoint").write_text("0\n1\n2 0\n")
    (tmp_path / ("foo-1." + "a" * 32 + "-delete")).mkdir()
    (tmp_path / "meta.properties").touch()
    scan = scan_log_dir(tmp_path)
    assert set(scan.live()) == {("foo", 0)}
    assert scan.live()[("foo", 0)].has_segment_files
    assert scan.live()[("foo", 0)].leader_epochs() == [(2, 0)]
    assert [(d.topic, d.partition) for d in scan.deleted()] == [("foo", 1)]
    assert "meta.properties" in scan.files
    assert scan_log_dir(tmp_path / "absent").partitions == ()


def _lai() -> Any:
    return crafted.leader_and_isr_request(
        [
            crafted.PartitionSpec(
                "foo", 0, 1, 2, (1, 2), (1, 2), zk_version=5, controller_epoch=3, is_new=True
            )
        ],
        controller_id=1,
        controller_epoch=3,
        broker_epoch=77,
        live_leaders=[(1, "127.0.0.1", 9)],
    )


def test_decode_leader_and_isr_frame() -> None:
    frame = rp.encode_request_frame(_lai(), correlation_id=9)
    header, req = rp.decode_request_frame(frame[4:])
    item = rp.normalise(0, 1, 2, header, req)
    assert (item.api, item.api_version, item.correlation_id, item.broker_epoch) == ("LeaderAndIsr", 4, 9, 77)
    (p,) = item.partitions
    assert (p.topic, p.leader, p.leader_epoch, p.isr, p.zk_version, p.is_new) == (
        "foo",
        1,
        2,
        (1, 2),
        5,
        True,
    )
    assert item.live_leaders == (1,)


def test_decode_update_metadata_and_stop_replica() -> None:
    um = crafted.update_metadata_request(
        [],
        [crafted.BrokerSpec(3, ()), crafted.BrokerSpec(1, ())],
        controller_id=1,
        controller_epoch=2,
        broker_epoch=5,
    )
    item = rp.normalise(0, 1, 3, *rp.decode_request_frame(rp.encode_request_frame(um, 1)[4:]))
    assert (item.api, item.live_brokers) == ("UpdateMetadata", (1, 3))
    sr = crafted.stop_replica_request(
        [("t", 0), ("t", 1)], delete=True, controller_id=1, controller_epoch=2, broker_epoch=5
    )
    item = rp.normalise(0, 1, 3, *rp.decode_request_frame(rp.encode_request_frame(sr, 2)[4:]))
    assert [(p.topic, p.partition, p.delete_partition) for p in item.partitions] == [
        ("t", 0, True),
        ("t", 1, True),
    ]


def _fake_broker(server: socket.socket, response: bytes, seen: list[bytes]) -> None:
    conn, _ = server.accept()
    with conn:
        size = int.from_bytes(rp._recv_exact(conn, 4), "big")
        seen.append(rp._recv_exact(conn, size))
        conn.sendall(response)


def test_proxy_forwards_bytes_and_records_exchange() -> None:
    buf = io.BytesIO()
    hdr_t = lai4r.LeaderAndIsrResponse.__header_schema__
    entity_writer(hdr_t)(buf, hdr_t(correlation_id=i32(4242)))
    entity_writer(lai4r.LeaderAndIsrResponse)(
        buf, lai4r.LeaderAndIsrResponse(error_code=ErrorCode(11), partition_errors=())
    )
    response = len(buf.getvalue()).to_bytes(4, "big") + buf.getvalue()
    server = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []
    t = threading.Thread(target=_fake_broker, args=(server, response, seen), daemon=True)
    t.start()
    journal = rp.RequestJournal()
    proxy = rp.RecordingProxy(journal, source=1, dest=2)
    proxy.upstream = ("127.0.0.1", server.getsockname()[1])
    try:
        resp = rp.send_request("127.0.0.1", proxy.port, _lai())
        assert int(resp.error_code) == 11
        assert seen == [rp.encode_request_frame(_lai(), 4242)[4:]]  # forwarded unchanged
        (item,) = journal.requests(dest=2)
        assert item.api == "LeaderAndIsr"
        assert item.source == 1
        assert item.error_code == 11
        # the answer's time orders exchanges across controllers (chaos request-order checker)
        assert item.response_time_s is not None
        assert item.time_s <= item.response_time_s <= time.time()
    finally:
        proxy.close()
        journal.close()
        server.close()
