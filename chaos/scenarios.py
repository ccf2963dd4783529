"""Chaos scenarios and the fault catalogue, as data (decisions ring, pure).

A :class:`Scenario` names which faults the nemesis draws from, at which scopes, how many may be
active at once (composition), the workload's op mix and the schedule's length. The generator
(:mod:`chaos.generator`) turns a scenario and a seed into a whole schedule; the nemesis
(:mod:`chaos.nemesis`) knows how to start and heal each fault kind of :data:`FAULTS`.

Fault kinds:

===================  ==========  ===================================================================
fault                family      effect (heal)
===================  ==========  ===================================================================
latency              link        +latency ± jitter on every chunk, both directions (remove toxics)
blackhole            link        Toxiproxy ``timeout`` toxic with timeout 0: bytes vanish (remove)
down                 link        proxy disabled: connections dropped, new ones refused (enable)
reset_peer           link        connections reset (RST) on their first data (remove toxics)
bandwidth            link        throughput capped (remove toxics)
slicer               link        writes sliced into small delayed pieces (remove toxics)
kill                 process     SIGKILL of the node's process group (start it again)
pause                process     SIGSTOP (SIGCONT)
terminate            process     SIGTERM = controlled shutdown, run while the schedule goes on (the heal
                                 waits for the exit, SIGKILL after the stop timeout; start it again)
restart              process     SIGTERM then start (nothing left to heal)
zk_session_expire    zookeeper   the node's ZooKeeper links blackholed until its session expired
                                 (its ``/brokers/ids/<id>`` is gone), then restored
zk_member_kill       zookeeper   SIGKILL one member of the 3-node ensemble (start it again)
zk_leader_pause      zookeeper   SIGSTOP the ensemble's leader (SIGCONT)
===================  ==========  ===================================================================

Link-fault scopes: ``link`` (one named proxy), ``node`` (every proxy of one node: its ZooKeeper,
controller, follower and client links), ``zk`` (the node's ZooKeeper links only: "partition the
controller from ZooKeeper"), ``partition`` (a random minority of the brokers cut from the majority:
every inter-broker link crossing the split and the minority's ZooKeeper links; ZooKeeper lives with
the majority).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

__all__ = [
    "API_OPS",
    "DEFAULT_MIX",
    "FAULTS",
    "LINK_FAULTS",
    "MAX_DENSITY",
    "PROCESS_FAULTS",
    "SCENARIOS",
    "SCOPES",
    "WORKLOAD_OPS",
    "ZK_FAULTS",
    "NameError_",
    "Scenario",
    "dense",
    "resolve_faults",
    "resolve_scenarios",
    "scenario_named",
]

LINK_FAULTS = ("latency", "blackhole", "down", "reset_peer", "bandwidth", "slicer")
PROCESS_FAULTS = ("kill", "pause", "terminate", "restart")
ZK_FAULTS = ("zk_session_expire", "zk_member_kill", "zk_leader_pause")
FAULTS = LINK_FAULTS + PROCESS_FAULTS + ZK_FAULTS
SCOPES = ("link", "node", "zk", "partition")
WORKLOAD_OPS = (
    "create_topic",
    "create_topic_admin",
    "add_partitions",
    "reassign",
    "preferred_election",
    "delete_topic",
    "broker_bounce",
)
#: The admin-API ops (spec §13): issued by the scenario's ``api-<n>`` processes.
API_OPS = (
    "reassign_api",
    "cancel_reassignment",
    "list_reassignments",
    "elect_leaders",
    "alter_topic_config",
    "alter_broker_config",
)
ENSEMBLE_ONLY = frozenset({"zk_member_kill", "zk_leader_pause"})

ZooKeeperMode = Literal["shared", "ensemble"]


class NameError_(ValueError):  # noqa: N801 - a usage error about names, not Python's NameError
    """Unknown scenario or fault names; the message lists the valid ones."""


@dataclass(frozen=True)
class Scenario:
    """One kind of chaos run (see the module docstring for the fault kinds and scopes)."""

    name: str
    description: str
    faults: tuple[str, ...]
    scopes: tuple[str, ...] = ("link", "node")
    concurrent_faults: int = 1
    fault_rounds: int = 2
    hold_s: tuple[float, float] = (1.0, 2.5)
    ops: tuple[str, ...] = WORKLOAD_OPS
    api_ops: tuple[str, ...] = API_OPS
    api_clients: int = 1  # processes ``api-<n>`` issuing ``api_ops``, besides the clients
    api_gap_s: tuple[float, float] = (0.8, 2.0)  # between one api client's ops
    clients: int = 2
    duration_s: float = 5.0
    brokers: int = 3
    zookeeper: ZooKeeperMode = "shared"
    in_default_mix: bool = True
    #: scales the gaps the generator draws before, between and after a round's faults (see dense)
    fault_gap_scale: float = 1.0


_ADMIN_OPS = tuple(op for op in WORKLOAD_OPS if op != "broker_bounce")

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "links",
            "one link fault at a time on one link, one node or one node's ZooKeeper links",
            LINK_FAULTS,
            scopes=("link", "node", "zk"),
        ),
        Scenario(
            "partition",
            "a random minority of the brokers cut from the majority (blackhole or proxies down)",
            ("blackhole", "down"),
            scopes=("partition",),
            hold_s=(1.5, 3.0),
        ),
        Scenario(
            "process",
            "SIGKILL, SIGSTOP/SIGCONT, SIGTERM (controlled shutdown) and restarts of brokers",
            PROCESS_FAULTS,
            ops=_ADMIN_OPS,
        ),
        Scenario(
            "zk-session",
            "a broker's (often the controller's) ZooKeeper session expires behind a blackholed link",
            ("zk_session_expire",),
            fault_rounds=1,
            hold_s=(0.2, 0.5),
            ops=_ADMIN_OPS,
            duration_s=6.0,
        ),
        Scenario(
            "composed",
            "two faults at once, e.g. the controller cut from ZooKeeper while a broker is killed",
            ("blackhole", "latency", "down", "kill", "pause", "terminate"),
            scopes=("zk", "node", "partition"),
            concurrent_faults=2,
            ops=_ADMIN_OPS,
        ),
        Scenario(
            "admin-api",
            "the admin-API controller paths (API reassignments, cancellations, listings, "
            "ElectLeaders, config changes) under pauses, kills and link faults",
            ("pause", "kill", "terminate", "blackhole", "down", "latency"),
            scopes=("node", "zk", "link"),
            ops=_ADMIN_OPS,
            api_clients=2,
            api_gap_s=(0.25, 0.9),
        ),
        Scenario(
            "zk-ensemble",
            "a 3-node ZooKeeper ensemble loses a member (SIGKILL) or its leader pauses",
            ("zk_member_kill", "zk_leader_pause", "kill"),
            fault_rounds=2,
            hold_s=(1.0, 2.0),
            ops=_ADMIN_OPS,
            zookeeper="ensemble",
            in_default_mix=False,
        ),
    )
}

DEFAULT_MIX: tuple[str, ...] = tuple(n for n, s in SCENARIOS.items() if s.in_default_mix)


def _split(raw: str) -> list[str]:
    return [p.strip() for p in raw.split(",") if p.strip()]


def _unknown(kind: str, asked: Iterable[str], valid: Sequence[str]) -> str | None:
    bad = [a for a in asked if a not in valid]
    if not bad:
        return None
    return f"unknown {kind} {', '.join(map(repr, bad))}; valid {kind}s: {', '.join(valid)}"


def resolve_scenarios(raw: str) -> tuple[Scenario, ...]:
    """``"links,process"`` → scenarios; empty → the default mix; ``all`` → every scenario."""
    names = _split(raw)
    if not names:
        names = list(DEFAULT_MIX)
    elif names == ["all"]:
        names = list(SCENARIOS)
    problem = _unknown("scenario", names, [*SCENARIOS, "all"])
    if problem:
        raise NameError_(problem)
    return tuple(SCENARIOS[n] for n in dict.fromkeys(names))


def resolve_faults(raw: str, scenarios: Sequence[Scenario]) -> tuple[Scenario, ...]:
    """Restrict ``scenarios`` to the faults named in ``raw`` (empty: no restriction).

    Unknown fault names are an error listing the valid ones; a scenario left with no fault is
    dropped, and none left at all is an error naming which scenarios offer the faults.
    """
    names = _split(raw)
    if not names:
        return tuple(scenarios)
    problem = _unknown("fault", names, FAULTS)
    if problem:
        raise NameError_(problem)
    out = []
    for s in scenarios:
        kept = tuple(f for f in s.faults if f in names)
        if kept:
            out.append(Scenario(**{**s.__dict__, "faults": kept}))
    if not out:
        offering = sorted(s.name for s in SCENARIOS.values() if set(s.faults) & set(names))
        raise NameError_(
            f"no selected scenario injects {', '.join(names)}; scenarios that do: {', '.join(offering)}"
        )
    return tuple(out)


#: The densest schedule asked for: 1000× the scenario's faults in its duration (holds and gaps of a
#: few simulated milliseconds); beyond that a fault would outlast nothing.
MAX_DENSITY = 1000


def dense(scenario: Scenario, density: int) -> Scenario:
    """``scenario`` with ``density`` times as many fault rounds in the same duration: holds and
    the gaps around each round ``density`` times shorter; named ``<name>*<density>`` (a replay
    seed names it so). Density 1 is the scenario itself."""
    if not 1 <= density <= MAX_DENSITY:
        raise NameError_(f"density {density} is out of range: give a whole number from 1 to {MAX_DENSITY}")
    if density == 1:
        return scenario
    lo, hi = scenario.hold_s
    return replace(
        scenario,
        name=f"{scenario.name}*{density}",
        fault_rounds=scenario.fault_rounds * density,
        hold_s=(lo / density, hi / density),
        fault_gap_scale=scenario.fault_gap_scale / density,
    )


def scenario_named(name: str) -> Scenario:
    """The scenario ``name`` names: one of :data:`SCENARIOS`, or ``<scenario>*<density>``
    (:func:`dense`); :class:`NameError_` says what is wrong with any other name."""
    base, star, times = name.partition("*")
    if base not in SCENARIOS:
        raise NameError_(f"unknown scenario {base!r}; valid scenarios: {', '.join(SCENARIOS)}")
    if not star:
        return SCENARIOS[base]
    if not times.isdigit():
        raise NameError_(f"{name!r}: the density after '*' must be a whole number from 1 to {MAX_DENSITY}")
    return dense(SCENARIOS[base], int(times))
