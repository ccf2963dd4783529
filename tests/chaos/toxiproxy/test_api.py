"""The HTTP API as Toxiproxy answers it: through toxiproxy-python, and raw HTTP for the rest.

Expected bodies and status codes are upstream's (Shopify/toxiproxy v2.12 ``api.go``,
``api_test.go``), written out here, never computed by the server's code.
"""

from __future__ import annotations

import json
import os
import socket

import pytest
import toxiproxy
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

from tests.chaos.toxiproxy.support import Api, TcpServer, connect, host_port, round_trip_s

pytestmark = pytest.mark.chaos


def error_json(response: object) -> object:
    text = response.text  # type: ignore[attr-defined]
    assert text.endswith("\n"), repr(text)
    return json.loads(text)


def test_version_is_json_with_a_version(tp: toxiproxy.Toxiproxy, api: Api) -> None:
    body = tp.version()
    assert isinstance(body, bytes)
    assert body.endswith(b"\n")
    assert set(json.loads(body)) == {"version"}
    response = api.call("GET", "/version")
    assert response.headers["Content-Type"] == "application/json;charset=utf-8"
    assert response.headers.get("X-Toxiproxy-Request-Id")


def test_create_with_port_zero_listens_on_an_ephemeral_port(
    tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    host, port = host_port(proxy.listen)
    assert host == "127.0.0.1"
    assert port != 0
    assert proxy.enabled is True
    assert tp.get_proxy(name).listen == proxy.listen
    with connect(proxy.listen) as sock:
        round_trip_s(sock)
    assert name in tp.proxies()
    assert proxy.destroy() is True
    assert tp.get_proxy(name) is None
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, port), timeout=5).close()


def test_duplicate_proxy_is_409(tp: toxiproxy.Toxiproxy, api: Api, echo_server: TcpServer, name: str) -> None:
    tp.create(upstream=echo_server.address, name=name)
    with pytest.raises(ProxyExists):
        tp.create(upstream=echo_server.address, name=name)
    response = api.call(
        "POST", "/proxies", {"name": name, "upstream": echo_server.address, "listen": "127.0.0.1:0"}
    )
    assert response.status_code == 409
    assert error_json(response) == {"error": "proxy already exists", "status": 409}
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"


def test_create_answers_201_with_the_proxy(api: Api, echo_server: TcpServer, name: str) -> None:
    response = api.call(
        "POST", "/proxies", {"name": name, "upstream": echo_server.address, "listen": "127.0.0.1:0"}
    )
    assert response.status_code == 201
    body = response.json()
    assert list(body) == ["name", "listen", "upstream", "enabled", "toxics"]
    assert body["enabled"] is True
    assert body["toxics"] == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"upstream": "127.0.0.1:9"}, "missing required field: name"),
        ({"name": "x"}, "missing required field: upstream"),
        ("", "bad request body: EOF"),
    ],
)
def test_create_with_a_bad_body_is_400(api: Api, body: object, message: str) -> None:
    response = api.call("POST", "/proxies", body)
    assert response.status_code == 400
    assert error_json(response) == {"error": message, "status": 400}


def test_create_on_a_port_in_use_is_500_with_gos_listen_error(api: Api, name: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        response = api.call(
            "POST", "/proxies", {"name": name, "upstream": "127.0.0.1:9", "listen": f"127.0.0.1:{port}"}
        )
    assert response.status_code == 500
    assert error_json(response) == {
        "error": f"listen tcp 127.0.0.1:{port}: bind: address already in use",
        "status": 500,
    }
    assert api.call("GET", f"/proxies/{name}").status_code == 404


def test_unknown_proxy_is_404_everywhere(tp: toxiproxy.Toxiproxy, api: Api) -> None:
    expected = {"error": "proxy not found", "status": 404}
    for method, path in [
        ("GET", "/proxies/nope"),
        ("POST", "/proxies/nope"),
        ("DELETE", "/proxies/nope"),
        ("GET", "/proxies/nope/toxics"),
        ("POST", "/proxies/nope/toxics"),
        ("GET", "/proxies/nope/toxics/t"),
        ("DELETE", "/proxies/nope/toxics/t"),
    ]:
        response = api.call(method, path, {"type": "latency"} if method == "POST" else None)
        assert (method, path, response.status_code) == (method, path, 404)
        assert error_json(response) == expected


def test_unknown_toxic_is_404(tp: toxiproxy.Toxiproxy, api: Api, echo_server: TcpServer, name: str) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    with pytest.raises(NotFound):
        proxy.destroy_toxic("nope")
    for method in ("GET", "POST", "PATCH", "DELETE"):
        response = api.call(
            method, f"/proxies/{name}/toxics/nope", {} if method in ("POST", "PATCH") else None
        )
        assert response.status_code == 404
        assert error_json(response) == {"error": "toxic not found", "status": 404}


@pytest.mark.parametrize(
    ("toxic", "message"),
    [
        ({"type": "explode"}, "invalid toxic type"),
        (
            {"type": "latency", "stream": "sideways"},
            "stream was invalid, can be either upstream or downstream",
        ),
        (
            {"type": "latency", "attributes": {"latency": "slow"}},
            "bad request body: json: cannot unmarshal string into Go struct field "
            "LatencyToxic.attributes.latency of type int64",
        ),
        (
            {"type": "bandwidth", "attributes": {"rate": 1.5}},
            "bad request body: json: cannot unmarshal number 1.5 into Go struct field "
            "BandwidthToxic.attributes.rate of type int64",
        ),
    ],
)
def test_bad_toxic_is_400(
    tp: toxiproxy.Toxiproxy,
    api: Api,
    echo_server: TcpServer,
    name: str,
    *,
    toxic: dict[str, object],
    message: str,
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(**toxic)
    response = api.call("POST", f"/proxies/{name}/toxics", toxic)
    assert response.status_code == 400
    assert error_json(response) == {"error": message, "status": 400}
    assert proxy.toxics() == {}


def test_bad_json_is_400(api: Api, tp: toxiproxy.Toxiproxy, echo_server: TcpServer, name: str) -> None:
    tp.create(upstream=echo_server.address, name=name)
    response = api.call("POST", f"/proxies/{name}/toxics", "{not json")
    assert response.status_code == 400
    body = error_json(response)
    assert isinstance(body, dict)
    assert body["status"] == 400
    assert body["error"].startswith("bad request body: ")


def test_toxic_names_are_unique_across_streams(
    tp: toxiproxy.Toxiproxy, api: Api, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    proxy.add_toxic(type="latency", name="slow", stream="upstream")
    with pytest.raises(ProxyExists):
        proxy.add_toxic(type="latency", name="slow", stream="downstream")
    response = api.call("POST", f"/proxies/{name}/toxics", {"type": "latency", "name": "slow"})
    assert response.status_code == 409
    assert error_json(response) == {"error": "toxic already exists", "status": 409}


def test_toxic_defaults_and_zero_attributes_are_shown(
    tp: toxiproxy.Toxiproxy, api: Api, echo_server: TcpServer, name: str
) -> None:
    tp.create(upstream=echo_server.address, name=name)
    response = api.call("POST", f"/proxies/{name}/toxics", {"type": "latency"})
    assert response.status_code == 200
    assert response.json() == {
        "attributes": {"latency": 0, "jitter": 0},
        "name": "latency_downstream",
        "type": "latency",
        "stream": "downstream",
        "toxicity": 1,
    }
    assert response.text.startswith('{"attributes":')
    slicer = {"type": "slicer", "stream": "upstream", "toxicity": 0.2, "attributes": {"average_size": 10}}
    body = api.call("POST", f"/proxies/{name}/toxics", slicer).json()
    assert body["name"] == "slicer_upstream"
    assert body["toxicity"] == 0.2
    assert body["attributes"] == {"average_size": 10, "size_variation": 0, "delay": 0}
    listed = api.call("GET", f"/proxies/{name}/toxics").json()
    assert [t["name"] for t in listed] == ["slicer_upstream", "latency_downstream"]  # upstream chain first


def test_toxic_update_merges_attributes(
    tp: toxiproxy.Toxiproxy, api: Api, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    proxy.add_toxic(type="latency", name="lat", attributes={"latency": 100, "jitter": 5}, toxicity=0.5)
    response = api.call("PATCH", f"/proxies/{name}/toxics/lat", {"attributes": {"latency": 300}})
    assert response.status_code == 200
    assert response.json()["attributes"] == {"latency": 300, "jitter": 5}
    assert response.json()["toxicity"] == 0.5
    response = api.call("POST", f"/proxies/{name}/toxics/lat", {"toxicity": 1})
    assert response.json()["toxicity"] == 1
    assert proxy.get_toxic("lat").attributes == {"latency": 300, "jitter": 5}


def test_unknown_route_method_and_browsers(api: Api) -> None:
    response = api.call("GET", "/not_found")
    assert (response.status_code, response.text) == (404, "404 page not found\n")
    assert api.call("DELETE", "/version").status_code == 405
    response = api.call("GET", "/proxies", headers={"User-Agent": "Mozilla/5.0"})
    assert (response.status_code, response.text) == (403, "User agent not allowed\n")


def test_populate_creates_and_validates_first(api: Api, echo_server: TcpServer, name: str) -> None:
    entries = [
        {"name": f"{name}-a", "upstream": echo_server.address, "listen": "127.0.0.1:0"},
        {"name": f"{name}-b", "upstream": echo_server.address, "listen": "127.0.0.1:0", "enabled": False},
    ]
    response = api.call("POST", "/populate", entries)
    assert response.status_code == 201
    proxies = response.json()["proxies"]
    assert [(p["name"], p["enabled"]) for p in proxies] == [(f"{name}-a", True), (f"{name}-b", False)]
    again = api.call("POST", "/populate", entries[:1]).json()["proxies"]
    assert again[0]["listen"] != "127.0.0.1:0"  # listen 127.0.0.1:0 differs from the bound port
    bad = [{"name": f"{name}-c", "upstream": echo_server.address}, {"upstream": echo_server.address}]
    response = api.call("POST", "/populate", bad)
    assert response.status_code == 400
    assert response.json() == {
        "error": "missing required field: name at proxy 2",
        "status": 400,
        "proxies": None,
    }
    assert api.call("GET", f"/proxies/{name}-c").status_code == 404


@pytest.mark.skipif(
    bool(os.environ.get("TOXIPROXY_URL")) and bool(os.environ.get("PYTEST_XDIST_WORKER")),
    reason="POST /reset touches every proxy: not on a server shared by xdist workers",
)
def test_reset_enables_all_and_removes_all_toxics(
    tp: toxiproxy.Toxiproxy, api: Api, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    proxy.add_toxic(type="latency", attributes={"latency": 1000})
    proxy.add_toxic(type="timeout", stream="upstream")
    proxy.disable()
    assert tp.reset() is True
    after = tp.get_proxy(name)
    assert after.enabled is True
    assert after.listen == proxy.listen  # re-enabled on the same address
    assert after.toxics() == {}
    with connect(proxy.listen) as sock:
        assert round_trip_s(sock) < 0.5


def test_populate_keeps_an_unchanged_proxy_with_its_toxics(
    tp: toxiproxy.Toxiproxy, api: Api, echo_server: TcpServer, name: str
) -> None:
    proxy = tp.create(upstream=echo_server.address, name=name)
    proxy.add_toxic(type="latency", attributes={"latency": 1})
    port = host_port(proxy.listen)[1]
    entry = {"name": name, "listen": f"localhost:{port}", "upstream": echo_server.address}  # resolves equal
    response = api.call("POST", "/populate", [entry])
    assert response.status_code == 201
    (kept,) = response.json()["proxies"]
    assert kept["listen"] == f"127.0.0.1:{port}"
    assert [t["type"] for t in kept["toxics"]] == ["latency"]
    moved = api.call("POST", "/populate", [{**entry, "upstream": f"127.0.0.1:{port}"}]).json()["proxies"]
    assert moved[0]["toxics"] == []  # a changed upstream replaces the proxy
