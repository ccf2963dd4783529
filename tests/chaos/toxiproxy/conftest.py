"""Fixtures: one Toxiproxy server per session (real if configured, else ours), real TCP peers."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest
import toxiproxy

from chaos.toxiproxy.launch import toxiproxy_server
from tests.chaos.toxiproxy.support import Api, TcpServer, echo, serving

_NAMES = itertools.count()


@pytest.fixture(scope="session")
def toxiproxy_url() -> Iterator[str]:
    with toxiproxy_server() as url:
        yield url


@pytest.fixture
def tp(toxiproxy_url: str) -> Iterator[toxiproxy.Toxiproxy]:
    """The unmodified toxiproxy-python client pointed at the server; all proxies removed after."""
    parsed = urlparse(toxiproxy_url)
    client = toxiproxy.Toxiproxy()
    client.update_api_consumer(parsed.hostname, parsed.port)
    yield client
    client.destroy_all()


@pytest.fixture
def api(toxiproxy_url: str, tp: toxiproxy.Toxiproxy) -> Api:
    return Api(toxiproxy_url)


@pytest.fixture
def echo_server() -> Iterator[TcpServer]:
    with serving(echo) as server:
        yield server


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A proxy name unique within the session."""
    return f"{request.node.name[:40]}-{next(_NAMES)}".replace("[", "_").replace("]", "_")
