"""``python -m chaos.toxiproxy.measure``: accuracy and overhead figures of a Toxiproxy server.

Starts a server with :func:`~chaos.toxiproxy.launch.toxiproxy_server` (so ``TOXIPROXY_URL``
measures another one), drives it with the unmodified ``toxiproxy`` client, and measures on real
loopback TCP: round-trip overhead of the proxy, throughput, latency accuracy, jitter spread,
bandwidth error and connection rate. Prints one line per figure (ring: drivers / tooling).
"""

from __future__ import annotations

import contextlib
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator

import toxiproxy

from chaos.toxiproxy.launch import client_for, toxiproxy_server


@contextlib.contextmanager
def _server(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.listen(256)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_serve, args=(conn, handle), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


def _serve(conn: socket.socket, handle: Callable[[socket.socket], None]) -> None:
    with contextlib.suppress(OSError), conn:
        handle(conn)


def _echo(conn: socket.socket) -> None:
    while data := conn.recv(65536):
        conn.sendall(data)


def _blast(size: int) -> Callable[[socket.socket], None]:
    block = b"x" * 65536

    def handle(conn: socket.socket) -> None:
        left = size
        while left > 0:
            conn.sendall(block[: min(left, len(block))])
            left -= len(block)

    return handle


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _round_trips_s(port: int, count: int, payload: bytes = b"p" * 64) -> list[float]:
    times = []
    with _connect(port) as sock:
        for _ in range(count):
            started = time.perf_counter()
            sock.sendall(payload)
            got = 0
            while got < len(payload):
                got += len(sock.recv(65536))
            times.append(time.perf_counter() - started)
    return times


def _receive_all_s(port: int, size: int) -> float:
    with _connect(port) as sock:
        started = time.perf_counter()
        got = 0
        while got < size and (data := sock.recv(1 << 20)):
            got += len(data)
        return time.perf_counter() - started


def _port(proxy: toxiproxy.proxy.Proxy) -> int:
    return int(proxy.listen.rsplit(":", 1)[1])


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def measure(tp: toxiproxy.Toxiproxy) -> list[str]:
    lines = []
    with _server(_echo) as echo_port:
        proxy = tp.create(upstream=f"127.0.0.1:{echo_port}", name="measure-echo")
        direct = _round_trips_s(echo_port, 500)
        proxied = _round_trips_s(_port(proxy), 500)
        overhead = statistics.median(proxied) - statistics.median(direct)
        p95 = statistics.quantiles(proxied, n=20)[-1]
        lines.append(
            f"round trip 64 B: direct median {_ms(statistics.median(direct))}, proxied median "
            f"{_ms(statistics.median(proxied))} (p95 {_ms(p95)}); proxy overhead {_ms(overhead)}"
        )
        started = time.perf_counter()
        for _ in range(300):
            _connect(_port(proxy)).close()
        lines.append(f"connections: {300 / (time.perf_counter() - started):.0f}/s opened and closed")
        base = statistics.median(proxied)
        proxy.add_toxic(type="latency", name="lat", attributes={"latency": 100})
        extra = [t - base for t in _round_trips_s(_port(proxy), 50)]
        lines.append(
            f"latency 100 ms: mean {_ms(statistics.mean(extra))}, min {_ms(min(extra))}, "
            f"max {_ms(max(extra))} (error of the mean {_ms(statistics.mean(extra) - 0.1)})"
        )
        proxy.destroy_toxic("lat")
        proxy.add_toxic(type="latency", name="jit", attributes={"latency": 100, "jitter": 30})
        extra = [t - base for t in _round_trips_s(_port(proxy), 100)]
        lines.append(
            f"latency 100 ± 30 ms: mean {_ms(statistics.mean(extra))}, range {_ms(min(extra))} .. "
            f"{_ms(max(extra))}, stdev {_ms(statistics.stdev(extra))} (uniform: 17.32 ms)"
        )
        proxy.destroy()
    size = 64 << 20
    with _server(_blast(size)) as blast_port:
        proxy = tp.create(upstream=f"127.0.0.1:{blast_port}", name="measure-blast")
        direct_s = _receive_all_s(blast_port, size)
        proxied_s = _receive_all_s(_port(proxy), size)
        direct_mb_s, proxied_mb_s = size / direct_s / 1e6, size / proxied_s / 1e6
        lines.append(f"throughput 64 MiB: direct {direct_mb_s:.0f} MB/s, proxied {proxied_mb_s:.0f} MB/s")
        for rate_kb_s, total in ((100, 300_000), (1000, 3_000_000), (10_000, 20_000_000)):
            with _server(_blast(total)) as port:
                proxy_bw = tp.create(upstream=f"127.0.0.1:{port}", name=f"measure-bw-{rate_kb_s}")
                proxy_bw.add_toxic(type="bandwidth", attributes={"rate": rate_kb_s})
                elapsed = _receive_all_s(_port(proxy_bw), total)
                proxy_bw.destroy()
            measured = total / 1000 / elapsed
            lines.append(
                f"bandwidth {rate_kb_s} KB/s: measured {measured:.1f} KB/s "
                f"(error {100 * (measured - rate_kb_s) / rate_kb_s:+.1f}%)"
            )
        proxy.destroy()
    return lines


def main() -> int:
    with toxiproxy_server() as url:
        client = client_for(url)
        print(f"server {url} version {client.version()!r}")
        for line in measure(client):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
