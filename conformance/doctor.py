"""The preflight: does a target's node start, register and log as the suite needs? (conformance ring)

``python -m conformance doctor --target T [--launcher process]`` runs it alone; the gate runs it
before the suite and stops within seconds when it fails, instead of letting every check time out.
It starts the kit's own ZooKeeper and one node of the target (plus the controller processes of a
split topology), then checks in order, stopping at the first problem:

1. **available** — the target's ``requires_env`` / ``requires_files`` are there;
2. **command** — the node's program exists and is executable, its working directory exists;
3. **start** — the node registers ``/brokers/ids/<id>`` within ``start_timeout_s`` (a node that
   exits first: its exit code and the last lines of its output);
4. **listeners** — every listener of its ``server.properties`` is in the registration, a listener
   on port 0 with the port it bound (something accepts connections there), an interposed one with
   the proxy's port;
5. **controller** — a controller is elected (``/controller``);
6. **state-change log** — after a topic is created, the log is where ``[logs] state_change``
   says, parses in Kafka's layout and has TRACE lines;
7. **requests** — the controller's LeaderAndIsr reached the node through its ``CTRL_<x>``
   listener;
8. **stop** — SIGTERM ends the node within ``stop_timeout_s``.

Exit codes: 0 healthy, 1 target error (the message says what is wrong), 2 bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cluster.cluster import Cluster, TargetNodeError
from cluster.startup import command_problem
from cluster.target_schema import keys_markdown
from cluster.targets import Target, TargetError, load_target
from harness.launcher import LAUNCHERS, launcher_named
from harness.wait import ConditionTimeout, wait_for
from harness.zookeeper import ZooKeeperServer
from harness.zookeeper.observer import observer_client
from probes.state_change_log import read_state_change_log

__all__ = ["PreflightReport", "Step", "main", "preflight"]

TOPIC = "kzk-preflight"
PROG = "python -m conformance doctor"
CHROOT = "/kzk-preflight"


@dataclass(frozen=True)
class Step:
    name: str
    ok: bool
    detail: str
    more: str = ""  # several lines (a node's output tail), shown under a failed step


@dataclass
class PreflightReport:
    target: str
    steps: list[Step] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    @property
    def problem(self) -> str | None:
        """The first failed step as one line, or ``None`` when healthy."""
        bad = next((s for s in self.steps if not s.ok), None)
        return None if bad is None else f"{bad.name}: {bad.detail}"

    def render(self) -> str:
        width = max((len(s.name) for s in self.steps), default=4)
        lines = [f"  {'ok  ' if s.ok else 'FAIL'}  {s.name:<{width}}  {s.detail}" for s in self.steps]
        for s in self.steps:
            if not s.ok and s.more:
                lines += ["", *(f"    | {ln}" for ln in s.more.splitlines())]
        verdict = (
            "healthy: a node starts, registers and logs as the suite needs"
            if self.ok
            else f"target error: {self.problem}"
        )
        return "\n".join([*lines, f"{verdict} ({self.wall_s:.1f} s)"])

    def to_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "problem": self.problem,
            "wall_s": round(self.wall_s, 2),
            "steps": [{"name": s.name, "ok": s.ok, "detail": s.detail} for s in self.steps],
        }


class _Failed(Exception):
    def __init__(self, detail: str, more: str = "") -> None:
        super().__init__(detail)
        self.detail, self.more = detail, more


def _node_error(exc: TargetNodeError) -> _Failed:
    where = f" (all of it: {exc.output_path})" if exc.output_path else ""
    more = f"last lines of its output{where}:\n{exc.output}" if exc.output else ""
    return _Failed(f"{exc.who} {exc.problem}", more)


def _check_command(target: Target, work: Path) -> str:
    shown = []
    for role in ("broker", "controller") if target.controller else ("broker",):
        node_dir = work / f"probe-{role}"
        argv = target.render_command(node_dir / "server.properties", node_dir, role)
        cwd = target.render_cwd(node_dir, role)
        node_dir.mkdir(parents=True, exist_ok=True)  # a cwd of {node_dir} exists at start
        problem = command_problem(argv, cwd)
        if problem:
            key = "command" if role == "broker" else "[controller] command"
            raise _Failed(f"{problem} (the target's {key})")
        shown.append(" ".join(argv[:3]))
    return "; ".join(shown)


def _listeners(cluster: Cluster, bid: int) -> str:
    """Every listener registered, port-0 listeners with a bound (connectable) port."""
    raw = cluster.get_json(f"/brokers/ids/{bid}")
    if not isinstance(raw, dict) or not isinstance(raw.get("endpoints"), list):
        raise _Failed(f"/brokers/ids/{bid} is not Kafka's registration JSON with endpoints: {raw!r}"[:300])
    registered: dict[str, int] = {}
    for entry in raw["endpoints"]:
        name, _, address = str(entry).partition("://")
        registered[name] = int(address.rsplit(":", 1)[1]) if ":" in address else -1
    props = cluster.nodes[bid].properties
    advertised = dict(e.split("://", 1) for e in props["advertised.listeners"].split(","))
    for name, address in advertised.items():
        wanted = int(address.rsplit(":", 1)[1])
        got = registered.get(name)
        if got is None:
            raise _Failed(f"listener {name} is missing from /brokers/ids/{bid}: {sorted(registered)}")
        if wanted not in (0, got):
            raise _Failed(f"listener {name} registered port {got}, not its advertised port {wanted}")
        if wanted == 0 and got == 0:
            raise _Failed(
                f"listener {name} registered port 0: a listener on port 0 must register the port it bound"
            )
        if wanted == 0 and not _accepts(got):
            raise _Failed(
                f"listener {name} registered port {got} but nothing accepts connections there:"
                " a listener on port 0 must register the port it bound"
            )
    return f"{len(advertised)} listeners registered with their bound ports"


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=2.0):
        return True
    return False


def _state_change_log(cluster: Cluster, cid: int, deadline_s: float) -> str:
    cluster.zk.create(
        f"/brokers/topics/{TOPIC}",
        json.dumps(
            {"version": 2, "partitions": {"0": [1]}, "adding_replicas": {}, "removing_replicas": {}}
        ).encode(),
    )
    try:
        wait_for(lambda: cluster.partition_state(TOPIC, 0), deadline_s, "partition state")
    except ConditionTimeout:
        raise _Failed(
            f"a topic written to /brokers/topics/{TOPIC} got no partition state within {deadline_s:.0f} s"
        ) from None
    node = cluster.nodes[cid]
    path = cluster.target.log_path("state_change", node.node_dir, "controller" if node.split else "broker")
    if path is None:
        raise _Failed("the target names no state-change log: add [logs] state_change (most checks read it)")

    def traced() -> bool:
        return path.is_file() and any(e.level == "TRACE" for e in read_state_change_log(path))

    with contextlib.suppress(ConditionTimeout):
        # the partition state exists, so the controller has logged its transitions: a short wait
        wait_for(traced, deadline_s / 3, "TRACE lines")
    if not path.is_file():
        raise _Failed(f"no state-change log at {path} (the target's [logs] state_change)")
    entries = read_state_change_log(path)
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    if text and not entries:
        raise _Failed(
            f"cannot parse {path} in Kafka's layout '[yyyy-MM-dd HH:mm:ss,SSS] LEVEL message (logger)';"
            f" its first line: {text[0][:160]!r}"
        )
    if not any(e.level == "TRACE" for e in entries):
        raise _Failed(
            f"{path} has no TRACE line after a topic was created: state.change.logger must log at TRACE"
        )
    return f"{path}: {sum(e.level == 'TRACE' for e in entries)} TRACE lines in Kafka's layout"


def _requests(cluster: Cluster, cid: int, deadline_s: float) -> str:
    if cluster.journal is None:
        return "not recorded"
    try:
        wait_for(lambda: cluster.journal.requests(api="LeaderAndIsr", dest=1), deadline_s, "LeaderAndIsr")  # type: ignore[union-attr]
    except ConditionTimeout:
        raise _Failed(
            f"no LeaderAndIsr from controller {cid} reached node 1 through its CTRL_{cid} listener within"
            f" {deadline_s:.0f} s (the controller must connect to the endpoint named by its"
            " control.plane.listener.name in each broker's registration)"
        ) from None
    return f"LeaderAndIsr from controller {cid} reached node 1 through CTRL_{cid}"


def _stop(cluster: Cluster) -> str:
    t0 = time.monotonic()
    codes: dict[int, int] = {}
    for bid in [1]:
        try:
            codes[bid] = cluster.stop(bid)
        except TimeoutError:
            raise _Failed(
                f"node {bid} still ran {cluster.target.stop_timeout_s:.0f} s after SIGTERM (stop_timeout_s)"
            ) from None
    return f"SIGTERM: node 1 exited with code {codes[1]} in {time.monotonic() - t0:.1f} s"


class _Preflight:
    """The steps after ZooKeeper is up, on one cluster of one broker (and the controller processes)."""

    def __init__(self, target: Target, work: Path, zk: ZooKeeperServer) -> None:
        self.target, self.work, self.zk = target, work, zk
        self.cluster: Cluster | None = None
        self.cid = -1

    def steps(self) -> list[tuple[str, Callable[[], str]]]:
        c = self._cluster
        d = self.target.deadline
        return [
            ("start", self.start),
            ("listeners", lambda: _listeners(c(), 1)),
            ("controller", self.controller),
            ("state-change log", lambda: _state_change_log(c(), self.cid, d(15))),
            ("requests", lambda: _requests(c(), self.cid, d(10))),
            ("stop", lambda: _stop(c())),
        ]

    def _cluster(self) -> Cluster:
        assert self.cluster is not None
        return self.cluster

    def start(self) -> str:
        t0 = time.monotonic()
        with contextlib.closing(observer_client(self.zk.connect_string, timeout_s=10.0)) as admin:
            admin.start(timeout=15.0)
            admin.ensure_path(CHROOT)
            admin.stop()
        self.cluster = Cluster(
            self.target,
            zk_connect_string=self.zk.connect_string,
            chroot=CHROOT,
            txn_log_dir=Path(self.zk.txn_log_dir),
            base_dir=self.work,
            broker_ids=(1,),
        )
        try:
            # this step is the registration; whether the node then contends for /controller is
            # the "controller" step's, after the listeners (a node that registered ports nothing
            # listens on must be told so, not reported as never contending)
            self.cluster.start(wait=False)
            self.cluster.wait_registered([1])
        except TargetNodeError as exc:
            raise _node_error(exc) from None
        return f"node 1 registered /brokers/ids/1 in {time.monotonic() - t0:.1f} s"

    def controller(self) -> str:
        try:
            self.cid = self._cluster().wait_controller(self.target.start_timeout_s)
        except ConditionTimeout:
            seconds = self.target.deadline(self.target.start_timeout_s)
            raise _Failed(
                f"no controller elected (/controller never created) within {seconds:.0f} s"
            ) from None
        return f"/controller names {self.cid}"

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()


def preflight(target: Target, launcher: str = "process") -> PreflightReport:
    """Run the preflight for ``target`` (see the module docstring)."""
    report = PreflightReport(target.name)
    t0 = time.monotonic()
    try:
        _run(target, launcher, report)
    finally:
        report.wall_s = time.monotonic() - t0
    return report


def _attempt(report: PreflightReport, name: str, step: Callable[[], str]) -> bool:
    try:
        report.steps.append(Step(name, True, step()))
    except _Failed as exc:
        report.steps.append(Step(name, False, exc.detail, exc.more))
        return False
    return True


def _run(target: Target, launcher: str, report: PreflightReport) -> None:
    reason = target.unavailable_reason()
    report.steps.append(Step("available", reason is None, reason or "everything the target requires is here"))
    if reason:
        return
    with tempfile.TemporaryDirectory(prefix="kzk-preflight-") as tmp:
        work = Path(tmp)
        if not _attempt(report, "command", lambda: _check_command(target, work)):
            return
        with _zookeeper(launcher) as zk:
            run = _Preflight(target, work, zk)
            try:
                for name, step in run.steps():
                    if not _attempt(report, name, step):
                        break
            finally:
                run.close()


@contextlib.contextmanager
def _zookeeper(launcher: str) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(name="preflight", tick_time_ms=500, launcher=launcher_named(launcher))
    with server:
        yield server


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Start one node of a target and say exactly what is wrong with it, if anything:"
        " the command, its exit and output, its registration and listener ports, the controller,"
        " its state-change log, the requests it gets, its stop. Exit 0 healthy, 1 target error,"
        " 2 bad input.",
    )
    p.add_argument(
        "--target", default="reference", help="a built-in target name or a target file (default reference)"
    )
    p.add_argument(
        "--launcher", default=None, help=f"{', '.join(LAUNCHERS)} (default $KZK_LAUNCHER or process)"
    )
    p.add_argument("--keys", action="store_true", help="print every target-file key (Markdown) and exit")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.keys:
        print(keys_markdown())
        return 0
    launcher = args.launcher or os.environ.get("KZK_LAUNCHER") or "process"
    if launcher not in LAUNCHERS:
        print(
            f"{PROG}: error: unknown launcher {launcher!r}; valid launchers: {', '.join(LAUNCHERS)}",
            file=sys.stderr,
        )
        return 2
    try:
        target = load_target(args.target)
    except TargetError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    where = f"{target.topology} topology, {launcher} launcher"
    print(f"preflight of target {target.name} ({target.source}): {where}")
    report = preflight(target, launcher)
    print(report.render())
    return 0 if report.ok else 1
