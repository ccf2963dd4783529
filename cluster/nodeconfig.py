"""Kafka-style ``server.properties`` generation for one cluster node (conformance ring, pure).

Listener layout — every directed link gets its own named listener, so a chaos layer (later) or the
request-recording proxy can sit on exactly one link without changing anything else. For node Y of
a cluster with broker ids B:

==================  =======================================================================
listener            carries
==================  =======================================================================
``CLIENT``          Kafka clients (AdminClient, Metadata); never used between brokers
``FROM_<x>``        inter-broker traffic from broker x to Y (replica fetches);
                    broker x has ``inter.broker.listener.name=FROM_<x>``
``CTRL_<x>``        controller requests from broker x (when x is controller) to Y;
                    broker x has ``control.plane.listener.name=CTRL_<x>``
==================  =======================================================================

Why two names per source: Kafka requires ``control.plane.listener.name`` to differ from
``inter.broker.listener.name``. Why it works: a source broker x looks up, in the destination's
registration ``/brokers/ids/<Y>``, the endpoint named by x's *own* listener name; so Y must
advertise ``FROM_<x>`` and ``CTRL_<x>`` for every x in B, itself included (the controller also
talks to its own broker over the network).

Ports: a listener on port 0 binds a free port; an advertised port 0 is replaced by the bound port
of the same-named listener when the node registers (``KafkaServer.createBrokerInfo``), so no port
is ever picked in advance. To interpose a proxy on link x→Y the harness instead gives Y's
``CTRL_<x>`` listener a fixed port Q and advertises the proxy's port P (:class:`Interpose`): the
registration then sends x to the proxy, which forwards to Q.

ZooKeeper link — each node's ``zookeeper.connect`` names its own recording proxies (one per
ZooKeeper host, :mod:`probes.zk_journal`) with the test's chroot kept:
:func:`split_zookeeper_connect` and :func:`zookeeper_connect` take a connect string apart and
put it back together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "CLIENT_LISTENER",
    "Interpose",
    "NodeSpec",
    "control_listener",
    "inter_broker_listener",
    "listener_names",
    "render_properties",
    "server_properties",
    "split_zookeeper_connect",
    "zookeeper_connect",
]

CLIENT_LISTENER = "CLIENT"
LOOPBACK = "127.0.0.1"


def inter_broker_listener(source_id: int) -> str:
    return f"FROM_{source_id}"


def control_listener(source_id: int) -> str:
    return f"CTRL_{source_id}"


def listener_names(broker_ids: Iterable[int]) -> list[str]:
    """Every listener name a node of a cluster with ``broker_ids`` has, in a fixed order."""
    ids = sorted(broker_ids)
    return [CLIENT_LISTENER] + [inter_broker_listener(i) for i in ids] + [control_listener(i) for i in ids]


def split_zookeeper_connect(connect: str) -> tuple[list[tuple[str, int]], str]:
    """``"h1:2181,h2:2182/kafka"`` → ``([("h1", 2181), ("h2", 2182)], "/kafka")``."""
    slash = connect.find("/")
    hosts, chroot = (connect, "") if slash < 0 else (connect[:slash], connect[slash:])
    out: list[tuple[str, int]] = []
    for entry in hosts.split(","):
        host, sep, port = entry.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"zookeeper.connect entry {entry!r} of {connect!r} is not host:port")
        out.append((host, int(port)))
    return out, chroot.rstrip("/")


def zookeeper_connect(hosts: Iterable[tuple[str, int]], chroot: str = "") -> str:
    """The inverse of :func:`split_zookeeper_connect`."""
    return ",".join(f"{h}:{p}" for h, p in hosts) + chroot


@dataclass(frozen=True)
class Interpose:
    """A proxy on one listener: the node binds ``bind_port``, registers ``advertised_port``."""

    bind_port: int
    advertised_port: int


@dataclass(frozen=True)
class NodeSpec:
    """Everything that varies per node; the rest comes from the target's profile."""

    broker_id: int
    broker_ids: tuple[int, ...]
    zookeeper_connect: str  # host:port[,host:port…]/chroot
    log_dirs: tuple[str, ...]
    interpose: Mapping[str, Interpose] = field(default_factory=dict)  # listener name → ports


def _listeners(spec: NodeSpec) -> tuple[str, str]:
    bind: list[str] = []
    advertised: list[str] = []
    for name in listener_names(spec.broker_ids):
        proxy = spec.interpose.get(name)
        bind.append(f"{name}://{LOOPBACK}:{proxy.bind_port if proxy else 0}")
        advertised.append(f"{name}://{LOOPBACK}:{proxy.advertised_port if proxy else 0}")
    return ",".join(bind), ",".join(advertised)


def server_properties(
    spec: NodeSpec,
    *,
    profile: Mapping[str, str],
    target_extra: Mapping[str, str] = {},
    overrides: Mapping[str, str] = {},
) -> dict[str, str]:
    """The node's properties: identity and listeners, then profile, target extras, overrides.

    Later layers win, except that identity keys (broker id, ZooKeeper, listeners, log dirs) are
    owned by the harness: an override of one of those is applied too, deliberately, for checks that
    need it (e.g. two log dirs).
    """
    if spec.broker_id not in spec.broker_ids:
        raise ValueError(f"broker {spec.broker_id} is not in the cluster {spec.broker_ids}")
    unknown = set(spec.interpose) - set(listener_names(spec.broker_ids))
    if unknown:
        raise ValueError(f"interpose names unknown listeners: {sorted(unknown)}")
    listeners, advertised = _listeners(spec)
    names = listener_names(spec.broker_ids)
    props: dict[str, str] = {
        "broker.id": str(spec.broker_id),
        "zookeeper.connect": spec.zookeeper_connect,
        "listeners": listeners,
        "advertised.listeners": advertised,
        "listener.security.protocol.map": ",".join(f"{n}:PLAINTEXT" for n in names),
        "inter.broker.listener.name": inter_broker_listener(spec.broker_id),
        "control.plane.listener.name": control_listener(spec.broker_id),
        "log.dirs": ",".join(spec.log_dirs),
    }
    props.update(profile)
    props.update(target_extra)
    props.update(overrides)
    return props


def _escape(text: str, *, key: bool) -> str:
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if key:
        out = out.replace("=", "\\=").replace(":", "\\:").replace(" ", "\\ ")
    elif out.startswith(" "):
        out = "\\" + out
    return out


def render_properties(props: Mapping[str, str], header: str = "") -> str:
    """``java.util.Properties`` text (``key=value`` lines, escaped) with an optional comment header."""
    lines = [f"# {h}" for h in header.splitlines()] if header else []
    lines += [f"{_escape(k, key=True)}={_escape(v, key=False)}" for k, v in props.items()]
    return "\n".join(lines) + "\n"
