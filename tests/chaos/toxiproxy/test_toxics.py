"""Each toxic measured on real TCP traffic through a proxy, driven by toxiproxy-python.

Lower bounds are absolute (a toxic's delay is never shorter than configured, so the raw time is
checked); upper bounds subtract a no-toxic baseline taken in the same test and allow ``SLACK_S``
for scheduling on a loaded 2-core machine.
"""

from __future__ import annotations

import statistics
import time

import pytest
import toxiproxy

from tests.chaos.toxiproxy.support import (
    Api,
    TcpServer,
    connect,
    median_round_trip_s,
    read_until_end,
    recorder,
    recv_exactly,
    round_trip_s,
    sender,
    serving,
    wait_for,
)

pytestmark = pytest.mark.chaos

SLACK_S = 0.15  # scheduling delay allowed on top of a configured maximum (loaded machine)


def test_latency_adds_the_delay_within_jitter(
    tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    with connect(proxy.listen) as sock:
        baseline_s = median_round_trip_s(sock)
    proxy.add_toxic(type="latency", attributes={"latency": 200, "jitter": 50})
    with connect(proxy.listen) as sock:
        raw_s = [round_trip_s(sock) for _ in range(20)]
    extra_s = [r - baseline_s for r in raw_s]
    assert min(raw_s) >= 0.150 - 0.001, raw_s  # latency - jitter at least
    assert max(extra_s) <= 0.250 + SLACK_S, extra_s
    assert 0.170 <= statistics.mean(extra_s) <= 0.230 + SLACK_S / 2, extra_s
    assert max(extra_s) - min(extra_s) >= 0.030, f"no jitter visible: {extra_s}"


def test_latency_upstream_and_downstream_add_up(
    tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    with connect(proxy.listen) as sock:
        baseline_s = median_round_trip_s(sock)
    proxy.add_toxic(type="latency", stream="upstream", attributes={"latency": 100})
    proxy.add_toxic(type="latency", stream="downstream", attributes={"latency": 150})
    with connect(proxy.listen) as sock:
        raw_s = [round_trip_s(sock) for _ in range(5)]
    assert min(raw_s) >= 0.250 - 0.001, raw_s
    # not more than the sum either (the median: one round trip delayed by the scheduler on a
    # loaded machine says nothing about the toxics; a toxic applied twice delays every one)
    assert statistics.median(raw_s) - baseline_s <= 0.250 + SLACK_S, raw_s


def test_removing_a_toxic_restores_an_open_connection(
    tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    with connect(proxy.listen) as sock:
        baseline_s = median_round_trip_s(sock)
        proxy.add_toxic(type="latency", name="lag", attributes={"latency": 300})
        assert round_trip_s(sock) >= 0.300 - 0.001
        proxy.destroy_toxic("lag")
        assert median_round_trip_s(sock, 5) < baseline_s + 0.1


def test_toxic_update_applies_to_open_connections(
    tp: toxiproxy.Toxiproxy, api: Api, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    with connect(proxy.listen) as sock:
        baseline_s = median_round_trip_s(sock)
        proxy.add_toxic(type="latency", name="lag", attributes={"latency": 100})
        rtt_s = round_trip_s(sock)
        assert 0.100 - 0.001 <= rtt_s <= baseline_s + 0.100 + SLACK_S
        assert api.call("PATCH", f"/proxies/{name}/toxics/lag", {"attributes": {"latency": 400}}).ok
        rtt_s = round_trip_s(sock)
        assert 0.400 - 0.001 <= rtt_s <= baseline_s + 0.400 + SLACK_S


def test_bandwidth_caps_throughput_within_10_percent(tp: toxiproxy.Toxiproxy, name: str) -> None:
    payload = bytes(range(256)) * 1600  # 409,600 bytes
    rate_kb_s = 200  # KB = 1000 bytes, as upstream: ~2 s
    with serving(sender(payload)) as server:
        proxy = tp.create(upstream=server.address, name=name)
        with connect(proxy.listen) as sock:
            started = time.monotonic()
            assert recv_exactly(sock, len(payload)) == payload
            baseline_s = time.monotonic() - started
        proxy.add_toxic(type="bandwidth", attributes={"rate": rate_kb_s})
        with connect(proxy.listen) as sock:
            started = time.monotonic()
            assert recv_exactly(sock, len(payload)) == payload
            elapsed_s = time.monotonic() - started - baseline_s
    measured_kb_s = len(payload) / 1000 / elapsed_s
    assert abs(measured_kb_s - rate_kb_s) / rate_kb_s <= 0.10, (
        f"{measured_kb_s:.1f} KB/s for {rate_kb_s} KB/s"
    )


def test_bandwidth_upstream_caps_what_the_server_receives(tp: toxiproxy.Toxiproxy, name: str) -> None:
    ref: list[TcpServer] = []
    payload = b"u" * 150_000
    with serving(recorder(ref)) as server:
        ref.append(server)
        proxy = tp.create(upstream=server.address, name=name)
        proxy.add_toxic(type="bandwidth", stream="upstream", attributes={"rate": 100})
        started = time.monotonic()
        with connect(proxy.listen) as sock:
            sock.sendall(payload)
            sock.shutdown(1)  # upstream closes the server side once the chain has drained
            read_until_end(sock, 10.0)
        elapsed_s = time.monotonic() - started
    assert server.received == [payload]
    assert 1.5 * 0.9 <= elapsed_s <= 1.5 * 1.1 + SLACK_S, elapsed_s


def test_slicer_splits_writes_into_pieces_around_the_average(tp: toxiproxy.Toxiproxy, name: str) -> None:
    payload = bytes(range(200)) * 20  # 4000 bytes in one write
    with serving(sender(payload)) as server:
        proxy = tp.create(upstream=server.address, name=name)
        with connect(proxy.listen) as sock:
            baseline = _recv_chunks(sock)
        proxy.add_toxic(type="slicer", attributes={"average_size": 100, "size_variation": 20, "delay": 5000})
        with connect(proxy.listen) as sock:
            sliced = _recv_chunks(sock)
    assert b"".join(baseline) == payload
    assert b"".join(sliced) == payload
    assert len(baseline) <= 3
    sizes = [len(c) for c in sliced]
    # Upstream bisects until a piece is at most average + variation (120) bytes, so pieces lie
    # between about 40 and 120 bytes; 5 ms apart, a recv mostly gets one piece (a late reader
    # may get two at once).
    assert len(sizes) >= 20, sizes
    assert sum(size <= 120 for size in sizes) >= 0.9 * len(sizes), sizes
    assert 40 <= statistics.median(sizes) <= 120, sizes


def _recv_chunks(sock: object) -> list[bytes]:
    chunks = []
    while data := sock.recv(65536):  # type: ignore[attr-defined]
        chunks.append(data)
    return chunks


def test_limit_data_closes_after_n_bytes(tp: toxiproxy.Toxiproxy, name: str) -> None:
    payload = b"d" * 5000
    with serving(sender(payload)) as server:
        proxy = tp.create(upstream=server.address, name=name)
        proxy.add_toxic(type="limit_data", attributes={"bytes": 1234})
        with connect(proxy.listen) as sock:
            outcome = read_until_end(sock, 10.0)
    assert outcome.end == "eof"
    assert outcome.data == payload[:1234]


def test_limit_data_upstream_limits_what_the_server_receives(tp: toxiproxy.Toxiproxy, name: str) -> None:
    ref: list[TcpServer] = []
    with serving(recorder(ref)) as server:
        ref.append(server)
        proxy = tp.create(upstream=server.address, name=name)
        proxy.add_toxic(type="limit_data", stream="upstream", attributes={"bytes": 10})
        with connect(proxy.listen) as sock:
            sock.sendall(b"0123456789abcdef")
            assert read_until_end(sock, 10.0).end in ("eof", "reset")
        wait_for(lambda: len(server.received) == 1, 10.0, "the server saw its connection end")
    assert server.received == [b"0123456789"]


def test_timeout_blackholes_then_closes_after_its_timeout(
    tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    proxy.add_toxic(type="timeout", attributes={"timeout": 600})
    with connect(proxy.listen) as sock:
        sock.sendall(b"ping")  # the echo reaches the toxic within ms and restarts its clock
        outcome = read_until_end(sock, 5.0)
    assert outcome.data == b""
    assert outcome.end == "eof"
    assert 0.6 - 0.001 <= outcome.after_s <= 0.6 + SLACK_S + 0.1, outcome


def test_timeout_zero_never_closes_and_removing_it_closes(
    tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    proxy.add_toxic(type="timeout", name="hole", attributes={"timeout": 0})
    with connect(proxy.listen) as sock:
        sock.sendall(b"ping")
        held = read_until_end(sock, 1.5)
        assert (held.data, held.end) == (b"", "timeout")  # open and silent for the whole window
        proxy.destroy_toxic("hole")  # upstream: removing a timeout toxic closes the connection
        closed = read_until_end(sock, 5.0)
    assert closed.end in ("eof", "reset")
    assert closed.data == b""


def test_reset_peer_resets_the_connection(tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    proxy.add_toxic(type="reset_peer", attributes={"timeout": 300})
    with connect(proxy.listen) as sock:
        started = time.monotonic()
        sock.sendall(b"ping")
        outcome = read_until_end(sock, 5.0)
    assert outcome.end == "reset", outcome
    assert outcome.data == b""
    assert 0.3 - 0.001 <= time.monotonic() - started <= 0.3 + SLACK_S + 0.1


def test_reset_peer_upstream_with_timeout_zero_resets_at_once(
    tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    proxy.add_toxic(type="reset_peer", stream="upstream", attributes={"timeout": 0})
    with connect(proxy.listen) as sock:
        sock.sendall(b"ping")
        outcome = read_until_end(sock, 5.0)
    assert outcome.end == "reset", outcome
    assert outcome.after_s < 0.5


def test_slow_close_delays_the_close(tp: toxiproxy.Toxiproxy, name: str) -> None:
    with serving(sender(b"hello")) as server:
        proxy = tp.create(upstream=server.address, name=name)
        baseline = _close_after_connect_s(proxy.listen)
        proxy.add_toxic(type="slow_close", attributes={"delay": 700})
        delayed = _close_after_connect_s(proxy.listen)
    assert baseline < 0.2
    assert 0.7 - 0.001 <= delayed <= baseline + 0.7 + SLACK_S, (baseline, delayed)


def _close_after_connect_s(listen: str) -> float:
    """Seconds from connecting to EOF, the data having arrived first."""
    started = time.monotonic()
    with connect(listen) as sock:
        outcome = read_until_end(sock, 5.0)
    assert (outcome.data, outcome.end) == (b"hello", "eof")
    return time.monotonic() - started


@pytest.mark.parametrize(("toxicity", "low", "high"), [(0.5, 68, 132), (0.0, 0, 0), (1.0, 200, 200)])
def test_toxicity_applies_to_that_share_of_connections(
    tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str, *, toxicity: float, low: int, high: int
) -> None:
    """200 connections; ``limit_data`` of 0 bytes ends a poisoned one at its first reply.

    Binomial(200, 0.5) has a standard deviation of 7.07: ±32 is 4.5 σ (false alarm ~1e-5).
    """
    proxy = tp.create(upstream=echo_server.address, name=name)
    proxy.add_toxic(type="limit_data", toxicity=toxicity, attributes={"bytes": 0})
    poisoned = 0
    for _ in range(200):
        with connect(proxy.listen) as sock:
            sock.sendall(b"ping")
            poisoned += _first_reply(sock) == b""
    assert low <= poisoned <= high, poisoned


def _first_reply(sock: object) -> bytes:
    data: bytes = sock.recv(4)  # type: ignore[attr-defined]
    return data


def test_disabling_drops_connections_and_refuses_new_ones(
    tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    with connect(proxy.listen) as sock:
        round_trip_s(sock)
        proxy.disable()
        assert read_until_end(sock, 5.0).end in ("eof", "reset")
    assert tp.get_proxy(name).enabled is False
    with pytest.raises(ConnectionRefusedError), connect(proxy.listen):
        pass
    proxy.enable()
    assert tp.get_proxy(name).listen == proxy.listen
    with connect(proxy.listen) as sock:
        round_trip_s(sock)


def test_down_context_restores(tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    with proxy.down():
        with pytest.raises(ConnectionRefusedError), connect(proxy.listen):
            pass
    with connect(proxy.listen) as sock:
        round_trip_s(sock)


def test_toxic_edits_mid_stream_lose_and_reorder_nothing(tp: toxiproxy.Toxiproxy, name: str) -> None:
    """Add, update and remove toxics while 3 MB flow: every byte arrives once, in order."""
    payload = b"".join(i.to_bytes(4, "big") for i in range(750_000))
    edits = [
        {"type": "latency", "name": "lat", "attributes": {"latency": 3, "jitter": 2}},
        {"type": "slicer", "name": "cut", "attributes": {"average_size": 700, "size_variation": 300}},
        {"type": "bandwidth", "name": "bw", "attributes": {"rate": 4000}},
    ]
    with serving(sender(payload)) as server:
        proxy = tp.create(upstream=server.address, name=name)
        with connect(proxy.listen) as sock:
            got = bytearray(sock.recv(65536))
            for round_ in range(4):
                for toxic in edits:
                    proxy.add_toxic(**toxic)
                    got += sock.recv(65536)
                for toxic in reversed(edits) if round_ % 2 else edits:
                    proxy.destroy_toxic(str(toxic["name"]))
                    got += sock.recv(65536)
            outcome = read_until_end(sock, 30.0)
    assert outcome.end == "eof"
    received = bytes(got) + outcome.data
    assert len(received) == len(payload)
    assert received == payload
