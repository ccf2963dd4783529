"""Fixtures: one Toxiproxy server per session (real if configured, else ours), real TCP peers."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
import toxiproxy

from chaos.toxiproxy.launch import client_for, toxiproxy_server
from tests.chaos.toxiproxy.support import Api, TcpServer, echo, serving

_NAMES = itertools.count()


@pytest.fixture(scope="session")
def toxiproxy_url() -> Iterator[str]:
    with toxiproxy_server() as url:
        yield url


@pytest.fixture
def name(request: pytest.FixtureRequest, worker_id: str) -> str:
    """A proxy name (and prefix) unique within the session, across xdist workers too."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in request.node.name[:40])
    return f"{worker_id}-{next(_NAMES)}-{safe}"


@pytest.fixture
def tp(toxiproxy_url: str, name: str) -> Iterator[toxiproxy.Toxiproxy]:
    """The unmodified toxiproxy-python client pointed at the server.

    Afterwards it deletes the proxies this test made (named ``name`` or ``name-…``), never others:
    with ``TOXIPROXY_URL`` several xdist workers may share one server.
    """
    client = client_for(toxiproxy_url)
    yield client
    for proxy_name, proxy in client.proxies().items():
        if proxy_name == name or proxy_name.startswith(f"{name}-"):
            proxy.destroy()


@pytest.fixture
def api(toxiproxy_url: str, tp: toxiproxy.Toxiproxy) -> Api:
    return Api(toxiproxy_url)


@pytest.fixture
def echo_server() -> Iterator[TcpServer]:
    with serving(echo) as server:
        yield server
