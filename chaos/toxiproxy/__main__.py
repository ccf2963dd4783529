"""``python -m chaos.toxiproxy``: the project's Toxiproxy-compatible server (ring: drivers).

Flags follow ``toxiproxy-server`` (``-host``, ``-port``, ``-config``, ``-seed``, ``-version``; Go's
flag package takes one or two dashes, so both spellings work) plus ``--port-file``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from chaos.toxiproxy.model import VERSION
from chaos.toxiproxy.server import ServerOptions, run

MARKER_PREFIX = "-Dkzk."


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port number (0-65535; 0 = any free port)"
        ) from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is out of range (0-65535; 0 = any free port)")
    return port


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m chaos.toxiproxy",
        description="A Toxiproxy-compatible server (v2 HTTP API and toxics) in one Python process.",
    )
    p.add_argument("--host", "-host", default="127.0.0.1", help="API listen host (default 127.0.0.1)")
    p.add_argument(
        "--port", "-port", type=_port, default=8474, help="API port; 0 = any free port (default 8474)"
    )
    p.add_argument(
        "--config", "-config", type=Path, help="JSON file of proxies to create at startup (as /populate)"
    )
    p.add_argument(
        "--seed",
        "-seed",
        type=_seed,
        help="seed for toxicity rolls, jitter and slicer cuts (default: random)",
    )
    p.add_argument("--port-file", type=Path, help="write the bound API port to this file once ready")
    p.add_argument("--version", "-version", action="store_true", help="print the version and exit")
    return p


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    # ``-Dkzk.*`` are ownership markers the launcher adds so the harness reaper can find this
    # process by its command line (as it finds JVMs); they mean nothing to the server.
    args = parser().parse_args([arg for arg in given if not arg.startswith(MARKER_PREFIX)])
    if args.version:
        print(f"toxiproxy-server version {VERSION} (chaos.toxiproxy)")
        return 0
    options = ServerOptions(
        host=args.host, port=args.port, config=args.config, seed=args.seed, port_file=args.port_file
    )
    return asyncio.run(run(options))


if __name__ == "__main__":
    sys.exit(main())
