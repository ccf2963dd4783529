"""A Toxiproxy server for a run: a given one, a real binary, or ours (ring: drivers / test tooling).

:func:`toxiproxy_server` yields the API base URL (``http://host:port``), choosing in order:

1. ``TOXIPROXY_URL`` is set: that server, after checking that ``GET /version`` answers
   (:class:`ToxiproxyUnavailable` with the reason otherwise). Nothing is started or stopped.
2. ``toxiproxy-server`` is on ``PATH``: it is started on a ``toxiproxy-api`` port of the port
   plan (:mod:`harness.ports`), claimed host-wide until the server stops (the binary must be told
   its port before it binds it).
3. Otherwise ``python -m chaos.toxiproxy --port 0 --port-file F`` is started: the kernel chooses
   the port, read from ``F`` (written only once the API listens, so there is no free-port race).

A started server runs through the process launcher (:mod:`harness.launcher`; Toxiproxy has no
image, so it is a local process whatever launcher runs the nodes) — the project's way to own a
process: its own session, ``PR_SET_PDEATHSIG=SIGKILL`` (it dies with its owner), a pid file with
its start time and owner for :func:`harness.reaper.reap_orphans`, and the owner's
``atexit``/signal clean-up. Our server also carries the reaper's ``-Dkzk.run.root=<root>``
marker in its argv (it ignores it), so a server started just before its pid file was written is
found too, as JVMs are. It is stopped (SIGTERM, then SIGKILL) when the context exits.
``KZK_TOXIPROXY_SEED`` passes ``--seed`` to our server (toxicity rolls, jitter, slicer cuts).

:func:`client_for` points the unmodified ``toxiproxy-python`` client at a URL.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import toxiproxy

from harness import ports, process, reaper
from harness.launcher import Handle, LaunchSpec, launcher_named

READY_DEADLINE_S = 20.0
BINARY = "toxiproxy-server"
SEED_ENV = "KZK_TOXIPROXY_SEED"


class ToxiproxyUnavailable(RuntimeError):
    """No Toxiproxy server could be reached or started; the message says why and what to do."""


def version_of(url: str, timeout_s: float = 2.0) -> str:
    """The body of ``GET {url}/version``; raises OSError/URLError if it does not answer 200."""
    request = urllib.request.Request(f"{url}/version", headers={"User-Agent": "kzk-kit"})  # noqa: S310
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - our URL
        return str(response.read().decode("utf-8", "replace")).strip()


def _check_url(url: str) -> str:
    url = url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ToxiproxyUnavailable(
            f"TOXIPROXY_URL={url!r} is not an http:// URL (e.g. http://127.0.0.1:8474)"
        )
    try:
        version_of(url)
    except (OSError, ValueError) as exc:
        raise ToxiproxyUnavailable(
            f"TOXIPROXY_URL={url}: GET /version failed ({exc}); start the server or unset TOXIPROXY_URL "
            "to let the kit start its own"
        ) from None
    return url


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _spawn(argv: list[str], run_dir: Path, name: str) -> Handle:
    spec = LaunchSpec(role="toxiproxy", name=name, argv=argv, cwd=run_dir, log_path=run_dir / "toxiproxy.log")
    return launcher_named("process").spawn(spec)


def _await_port(server: Handle, name: str, host: str, port_file: Path | None, port: int | None) -> str:
    """Wait until the server answers ``/version``; its URL. Raises ToxiproxyUnavailable."""
    deadline = time.monotonic() + READY_DEADLINE_S
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        code = server.poll()
        if code is not None:
            raise ToxiproxyUnavailable(f"{name} exited with status {code} before answering: {last_error}")
        if port is None and port_file is not None and port_file.exists():
            text = port_file.read_text().strip()
            port = int(text) if text.isdigit() else None
        if port is not None:
            url = _url(host, port)
            try:
                version_of(url, timeout_s=1.0)
                return url
            except (OSError, ValueError) as exc:
                last_error = str(exc)
        time.sleep(0.02)
    raise ToxiproxyUnavailable(
        f"{name} did not answer GET /version within {READY_DEADLINE_S:.0f}s: {last_error}"
    )


def _log_tail(run_dir: Path, lines: int = 20) -> str:
    with contextlib.suppress(OSError):
        return "\n".join((run_dir / "toxiproxy.log").read_text(errors="replace").splitlines()[-lines:])
    return ""


def _spawn_server(
    host: str, run_dir: Path, stack: contextlib.ExitStack
) -> tuple[Handle, str, Path | None, int | None]:
    """Start the real binary (on a claimed port, released when ``stack`` closes) or ours (port
    chosen by the kernel, announced in a file)."""
    binary = shutil.which(BINARY)
    if binary is not None:
        port = stack.enter_context(ports.claim(ports.TOXIPROXY_API)).ports[0]
        return _spawn([binary, "-host", host, "-port", str(port)], run_dir, BINARY), BINARY, None, port
    port_file = run_dir / "api.port"
    marker = f"{reaper.RUN_ROOT_MARKER}{process.owner_session().run_root}"  # for the reaper's sweep
    argv = [sys.executable, "-m", "chaos.toxiproxy", marker, "--host", host, "--port", "0"]
    argv += ["--port-file", str(port_file)]
    seed = os.environ.get(SEED_ENV)
    if seed:
        argv += ["--seed", seed]
    return _spawn(argv, run_dir, "chaos.toxiproxy"), "chaos.toxiproxy", port_file, None


def client_for(url: str) -> toxiproxy.Toxiproxy:
    """A ``toxiproxy-python`` client for ``url``.

    The client keeps host and port in class attributes (``APIConsumer``): this points *every*
    client in the process at ``url``; one server per process at a time.
    """
    parsed = urllib.parse.urlparse(url)
    if parsed.hostname is None or parsed.port is None:
        raise ToxiproxyUnavailable(f"{url!r} has no host and port (e.g. http://127.0.0.1:8474)")
    client = toxiproxy.Toxiproxy()
    client.update_api_consumer(parsed.hostname, parsed.port)
    return client


@contextlib.contextmanager
def toxiproxy_server(host: str = "127.0.0.1") -> Iterator[str]:
    """Yield the base URL of a Toxiproxy API (see the module docstring for which server)."""
    given = os.environ.get("TOXIPROXY_URL")
    if given:
        yield _check_url(given)
        return
    run_dir = process.new_run_dir("toxiproxy")
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, run_dir, ignore_errors=True)
        server, name, port_file, port = _spawn_server(host, run_dir, stack)
        stack.callback(_stop, server)
        try:
            url = _await_port(server, name, host, port_file, port)
        except ToxiproxyUnavailable as exc:
            tail = _log_tail(run_dir)
            raise ToxiproxyUnavailable(f"{exc}\n--- {run_dir / 'toxiproxy.log'} (tail) ---\n{tail}") from None
        yield url


def _stop(server: Handle, grace_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``."""
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(grace_s)
        except TimeoutError:
            server.send_signal(signal.SIGKILL)
            server.wait(30.0)
    server.remove()
