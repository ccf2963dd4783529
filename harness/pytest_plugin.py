"""pytest fixtures and hooks for tests against a real ZooKeeper (ring: test tooling).

Fixtures (kazoo's harness style: one server per session, a fresh chroot per test):

* ``zk_server`` (session): one standalone server per pytest process, so one per xdist worker.
* ``zk_chroot``: a fresh path ``/t/<test name>-<uuid8>`` created on ``zk_server``, deleted afterwards.
* ``zk_connect``: ``"127.0.0.1:<port>/t/<test name>-<uuid8>"``, a connect string chrooted to it.
* ``zk_client``: a started ``KazooClient`` on ``zk_connect``; stopped and closed afterwards.
* ``zk_server_isolated``: a fresh standalone server for tests that fault ZooKeeper itself.
* ``zk_server_factory``: ``make(**ZooKeeperServer kwargs) -> started server``; all closed afterwards.
* ``zk_ensemble``: a fresh, started 3-member ensemble.

Hooks: ``--launcher`` (:mod:`harness.launcher`); ``pytest_sessionstart`` runs the reaper
(:func:`harness.launcher.reap_leftovers`, in every process, xdist workers included: it only
touches runs whose owner is dead); a failing test gets the log tail of every ZooKeeper server it
used (started during it, or the session server) in its report and, when allure is active, as
allure attachments (the last ``$KZK_LOG_TAIL_BYTES``, default 16384, of each log).

Fixtures and hooks only: what they do is in the harness's modules. The layer markers are
declared once, in ``pyproject.toml``.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from harness import timeline
from harness.launcher import (
    ENV,
    LAUNCHERS,
    LauncherError,
    chosen_launcher_name,
    launcher_from_env,
    reap_leftovers,
)
from harness.zookeeper import (
    ZooKeeperEnsemble,
    ZooKeeperServer,
    add_start_listener,
    install_cleanup_hooks,
)
from harness.zookeeper.observer import delete_tree, observer_client

log = logging.getLogger(__name__)

ServerFactory = Callable[..., ZooKeeperServer]

_TOUCHED = pytest.StashKey[list[ZooKeeperServer]]()
_SESSION_SERVER = pytest.StashKey[ZooKeeperServer]()
_CURRENT: list[pytest.Item] = []
LOG_TAIL_BYTES = int(os.environ.get("KZK_LOG_TAIL_BYTES", "16384"))


def worker_name(config: pytest.Config) -> str:
    """``gw0``, ``gw1``... under xdist, ``master`` otherwise (used only in names and paths)."""
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    return str(workerinput.get("workerid", "master"))


def _note_started(server: ZooKeeperServer) -> None:
    if _CURRENT:
        touched = _CURRENT[-1].stash.setdefault(_TOUCHED, [])
        if server not in touched:
            touched.append(server)


# --- hooks --------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--launcher",
        default=None,
        help=f"where ZooKeeper servers and nodes run: {' | '.join(LAUNCHERS)} "
        "(default: $KZK_LAUNCHER, else process)",
    )


def pytest_configure(config: pytest.Config) -> None:
    install_cleanup_hooks()
    config.add_cleanup(add_start_listener(_note_started))
    try:
        chosen = chosen_launcher_name(config.getoption("--launcher"))
    except LauncherError as exc:
        raise pytest.UsageError(str(exc)) from None
    # Every fixture (and every xdist worker, spawned after configure) reads the environment.
    os.environ[ENV] = chosen


def pytest_report_header(config: pytest.Config) -> str:
    return f"kzk launcher: {os.environ.get(ENV, 'process')}"


def pytest_sessionstart(session: pytest.Session) -> None:
    launcher = launcher_from_env()
    reason = launcher.unavailable_reason()
    if reason is not None:
        raise pytest.UsageError(f"the {launcher.name} launcher cannot run here: {reason}")
    try:
        reaped = reap_leftovers()
    except OSError as exc:  # never fail a session over housekeeping
        log.warning("kzk-kit reaper could not run: %r", exc)
        return
    if not reaped:
        return
    lines = [f"kzk-kit reaper: removed leftovers of dead runs ({len(reaped)}):", *(f"  {r}" for r in reaped)]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and worker_name(session.config) == "master":
        for line in lines:
            reporter.write_line(line)
    log.warning("\n".join(lines))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    _CURRENT.append(item)
    try:
        return (yield)
    finally:
        _CURRENT.remove(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        for server in servers_used_by(item):
            _attach_log(item, report, server)
    return report


def servers_used_by(item: pytest.Item) -> list[ZooKeeperServer]:
    """Servers started during ``item`` plus the session server if the test used it."""
    default: list[ZooKeeperServer] = []
    touched = item.stash.get(_TOUCHED, default)
    servers = touched.copy()
    session_server = item.config.stash.get(_SESSION_SERVER, None)
    fixturenames: list[str] = getattr(item, "fixturenames", [])
    if session_server is not None and "zk_server" in fixturenames and session_server not in servers:
        servers.insert(0, session_server)
    return servers


def _attach_log(item: pytest.Item, report: pytest.TestReport, server: ZooKeeperServer) -> None:
    tail = server.log_tail(LOG_TAIL_BYTES)
    title = f"ZooKeeper log {server.name} {server.connect_string} ({report.when}; {server.log_file})"
    report.sections.append((title, tail))
    if not item.config.pluginmanager.has_plugin("allure_listener"):
        return
    try:
        import allure  # noqa: PLC0415 -- optional: only when allure-pytest is installed and active
    except ImportError:
        return
    allure.attach(tail, name=f"zookeeper-{server.name}.log", attachment_type=allure.attachment_type.TEXT)


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def zk_server(request: pytest.FixtureRequest) -> Iterator[ZooKeeperServer]:
    """One standalone ZooKeeper for this pytest process (one per xdist worker)."""
    server = ZooKeeperServer(name=f"session-{worker_name(request.config)}")
    request.config.stash[_SESSION_SERVER] = server
    with server:
        yield server


@pytest.fixture(scope="session")
def _zk_admin_client(zk_server: ZooKeeperServer) -> Iterator[KazooClient]:
    client = observer_client(zk_server.connect_string, timeout_s=10.0)
    client.start(timeout=15.0)
    yield client
    client.stop()
    client.close()


def _ensure_serving(server: ZooKeeperServer) -> None:
    """Bring the session server back if an earlier test paused or stopped it by mistake."""
    if server.is_paused:
        server.resume()
    if not server.is_running():
        server.start()


@pytest.fixture
def zk_chroot(
    request: pytest.FixtureRequest, zk_server: ZooKeeperServer, _zk_admin_client: KazooClient
) -> Iterator[str]:
    """A fresh, empty chroot path on the session server, e.g. ``/t/test_x-1a2b3c4d``."""
    _ensure_serving(zk_server)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:80]
    path = f"/t/{name}-{uuid.uuid4().hex[:8]}"
    _zk_admin_client.ensure_path(path)
    yield path
    try:
        with timeline.span("chroot-delete"):
            delete_tree(_zk_admin_client, path)
    except KazooException as exc:
        log.warning("could not delete chroot %s: %r", path, exc)


@pytest.fixture
def zk_connect(zk_server: ZooKeeperServer, zk_chroot: str) -> str:
    """A connect string chrooted to this test's fresh path on the session server."""
    return f"{zk_server.connect_string}{zk_chroot}"


@pytest.fixture
def zk_client(zk_connect: str) -> Iterator[KazooClient]:
    """A started kazoo client on ``zk_connect``."""
    client = observer_client(zk_connect, timeout_s=10.0)
    client.start(timeout=15.0)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def zk_server_factory(request: pytest.FixtureRequest) -> Iterator[ServerFactory]:
    """``make(**kwargs)`` starts a fresh ``ZooKeeperServer(**kwargs)``; every one is closed afterwards."""
    made: list[ZooKeeperServer] = []

    def make(**kwargs: Any) -> ZooKeeperServer:
        kwargs.setdefault("name", f"{worker_name(request.config)}-{request.node.name}-{len(made) + 1}")
        server = ZooKeeperServer(**kwargs)
        made.append(server)
        return server.start()

    yield make
    for server in made:
        server.close()


@pytest.fixture
def zk_server_isolated(zk_server_factory: ServerFactory) -> ZooKeeperServer:
    """A fresh standalone server of this test's own, for tests that fault ZooKeeper itself."""
    return zk_server_factory()


@pytest.fixture
def zk_ensemble(request: pytest.FixtureRequest) -> Iterator[ZooKeeperEnsemble]:
    """A fresh, started 3-member ensemble."""
    ensemble = ZooKeeperEnsemble(3, name=f"{worker_name(request.config)}-ens")
    with ensemble:
        yield ensemble
