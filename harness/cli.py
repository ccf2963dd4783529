"""Command-line entry points of the ZooKeeper harness (ring: test tooling).

``python -m harness zk-smoke``: start a standalone ZooKeeper, write and read a znode with
kazoo, stop it, and print each step (README command A uses it until the conformance suite exists).
``python -m harness reap``: kill the processes and remove the run dirs and pid files that dead
runs left (a run whose owner is alive is never touched). ``python -m harness build-images``:
build (or find) the docker launcher's images and print their tags, sizes and build times.
``--help`` on each subcommand says more.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from harness.launcher import reap_leftovers
from harness.zookeeper import FourLetterWordError, ZooKeeperHarnessError, ZooKeeperServer, runtime_dir
from harness.zookeeper.observer import observer_client
from probes.fourlw import parse_version


def zk_smoke() -> int:
    """Start, use and stop one real ZooKeeper; print what ran."""
    began = time.monotonic()
    server = ZooKeeperServer(name="zk-smoke")
    print(f"zk-smoke: ZooKeeper from {server.install.source}, java {server.install.java}")
    with server:
        version = parse_version(server.four_letter("srvr"))
        print(
            f"zk-smoke: started ZooKeeper {version} ({server.mode()}) on {server.connect_string} "
            f"pid {server.pid} in {server.last_start_s:.2f} s; data dir {server.data_dir}"
        )
        client = observer_client(server.connect_string, timeout_s=10.0)
        client.start(timeout=15.0)
        try:
            payload = b"hello from kzk-kit"
            client.create("/kzk-smoke", payload)
            data, stat = client.get("/kzk-smoke")
        finally:
            client.stop()
            client.close()
        if data != payload:
            print(f"zk-smoke: FAILED: read {data!r}, wrote {payload!r}", file=sys.stderr)
            return 1
        print(f"zk-smoke: wrote and read back /kzk-smoke ({len(data)} bytes, czxid {stat.czxid:#x})")
        code = server.stop()
        print(f"zk-smoke: stopped ZooKeeper (exit code {code})")
    print(f"zk-smoke: OK in {time.monotonic() - began:.2f} s")
    return 0


def build_images() -> int:
    """Build the docker launcher's default images (cached by content hash); print tag, size, time."""
    from harness.containers import images  # noqa: PLC0415 - docker tooling only for this command

    began = time.monotonic()
    reason = images.docker_available()
    if reason is not None:
        print(f"build-images: cannot build: {reason}", file=sys.stderr)
        return 1
    try:
        built = images.build_images()
    except images.ImageBuildError as exc:
        print(f"build-images: FAILED: {exc}", file=sys.stderr)
        return 1
    except images.ImageError as exc:
        print(f"build-images: {exc}", file=sys.stderr)
        return 1
    for image in built:
        how = f"built in {image.seconds:.1f} s" if image.built else "cached (inputs unchanged)"
        print(f"build-images: {image.tag}  {image.size_bytes / 1e6:.0f} MB  {how}")
    print(f"build-images: OK in {time.monotonic() - began:.1f} s")
    return 0


def reap() -> int:
    """Run the reaper and print what it removed."""
    reaped = reap_leftovers()
    print(f"reap: pid files in {runtime_dir()}")
    for item in reaped:
        print(f"reap: {item}")
    print(f"reap: removed {len(reaped)} leftover(s) of dead runs; live runs are never touched")
    return 0


DESCRIPTION = (
    "Tools of the kit's ZooKeeper harness: a smoke test of a real ZooKeeper (zk-smoke), the reaper"
    " of what killed runs left behind (reap) and the docker launcher's image builder (build-images)."
    " `python -m harness <command> --help` says more."
)
ZK_SMOKE_HELP = "start a real ZooKeeper, write and read back a znode with kazoo, stop it"
ZK_SMOKE_DESCRIPTION = (
    "Start one standalone ZooKeeper on a loopback port, write the znode /kzk-smoke with kazoo, read"
    " it back, stop the server and print each step with its timing. Exit 0 when the znode read back"
    " is the one written, 1 when it differs, 2 when ZooKeeper cannot be found or started (the message"
    " says why and what to install). Nothing is left running or on disk afterwards."
)
REAP_HELP = "kill the processes and remove the run dirs and pid files that killed earlier runs left behind"
REAP_DESCRIPTION = (
    "Every process the harness starts (ZooKeeper JVMs, nodes) has a pid file (pid + process start"
    " time + owner) under the runtime dir ($KZK_RUNTIME_DIR, else $XDG_RUNTIME_DIR/kzk-kit, else"
    " /tmp/kzk-kit-<uid>). `reap` reads them and, for each run whose owner process is gone, kills"
    " the leftover process group (only if the pid still belongs to the same process: start times"
    " must match) and removes its run dir (only directories named kzk-run-*) and pid"
    " file. Runs whose owner is alive are never touched, so it is safe to run at any time, also"
    " while other test runs are going; every test session runs it at start anyway. Prints what it"
    " removed; exit 0."
)


BUILD_IMAGES_HELP = "build the docker launcher's ZooKeeper and node images offline (cached by content hash)"
BUILD_IMAGES_DESCRIPTION = (
    "Build the images the docker launcher (--launcher docker) runs, with no registry: a Debian"
    " bookworm root filesystem by debootstrap (minbase) with OpenJDK 17 + ZooKeeper 3.8"
    " (kzk-zookeeper:<hash>) and with Python 3.11 (kzk-node-base:<hash>), imported with"
    " `docker import`, and kzk-node:<hash> (the node base + kazoo/kio + reference_controller) by"
    " `docker build`. Tags are content hashes of the inputs: an image whose inputs did not change"
    " is not rebuilt. Needs a running Docker daemon and debootstrap (as root: bash"
    " scripts/setup_docker.sh). Prints each tag, its size and how long it took; exit 0. Exit 1 when"
    " Docker is unavailable (the reason and the fix) or a build step fails (the step and its output)."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, metavar="{zk-smoke,reap,build-images}")
    sub.add_parser("zk-smoke", help=ZK_SMOKE_HELP, description=ZK_SMOKE_DESCRIPTION)
    sub.add_parser("reap", help=REAP_HELP, description=REAP_DESCRIPTION)
    sub.add_parser("build-images", help=BUILD_IMAGES_HELP, description=BUILD_IMAGES_DESCRIPTION)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "build-images":
            return build_images()
        return zk_smoke() if args.command == "zk-smoke" else reap()
    except (ZooKeeperHarnessError, FourLetterWordError) as exc:
        print(f"{args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
