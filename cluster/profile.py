"""The test-speed profile every target runs with, and the behaviour profiles (conformance ring, pure).

The **test-speed profile** (:data:`SPEED_PROFILE`) is applied to every target: Kafka 2.5's
defaults (18 s ZooKeeper sessions, 30 s replica lag, 5 s controlled-shutdown backoff, 60 s
delete delay, 300 s rebalance interval) would make the suite crawl. Each entry says why.
Determinism entries (:data:`DETERMINISM_PROFILE`) switch off background activity that would add
unasked-for leader-epoch bumps; the checks of that activity switch it back on per test.
"""

from __future__ import annotations

from cluster.target_schema import TargetError

__all__ = [
    "DETERMINISM_PROFILE",
    "IBP_BY_PROFILE",
    "KAFKA_DEFAULTS_SUFFIX",
    "SAFETY_DEFAULTS",
    "SPEED_PROFILE",
    "SPEED_PROFILE_DOC",
    "profile_properties",
]

#: Kafka config key → (value, why). Applied to every node of every target.
SPEED_PROFILE_DOC: dict[str, tuple[str, str]] = {
    "zookeeper.session.timeout.ms": (
        "4000",
        "a killed broker's session expires in ~4 s, not 18 s (the suite's ZooKeeper ticks every"
        " 0.5 s, so 4 s is above its 2-tick minimum and expiry lands within 0.5 s of it)",
    ),
    "zookeeper.connection.timeout.ms": ("10000", "fail fast when ZooKeeper is unreachable"),
    "replica.lag.time.max.ms": ("2000", "ISR shrink after 2 s without a fetch, not 30 s"),
    "controlled.shutdown.enable": ("true", "SIGTERM = controlled shutdown (Kafka default)"),
    "controlled.shutdown.max.retries": ("3", "Kafka default"),
    "controlled.shutdown.retry.backoff.ms": ("200", "retry controlled shutdown after 0.2 s, not 5 s"),
    "log.segment.delete.delay.ms": ("500", "-delete dirs vanish after 0.5 s, not 60 s"),
    "leader.imbalance.check.interval.seconds": ("5", "rebalance checks every 5 s, not 300 s"),
    "leader.imbalance.per.broker.percentage": ("10", "Kafka default"),
    "delete.topic.enable": ("true", "Kafka default, stated explicitly"),
    "unclean.leader.election.enable": ("false", "Kafka default, stated explicitly"),
    "num.partitions": ("1", "Kafka default, stated explicitly (TOPIC-8 overrides it)"),
    "default.replication.factor": ("1", "Kafka default, stated explicitly (TOPIC-8 overrides it)"),
}
SPEED_PROFILE: dict[str, str] = {k: v for k, (v, _) in SPEED_PROFILE_DOC.items()}

#: Background activity off by default so leader epochs are exact; REBALANCE checks turn it on.
DETERMINISM_PROFILE: dict[str, str] = {"auto.leader.rebalance.enable": "false"}

#: Behaviour profile → inter.broker.protocol.version (selects the controller's request versions).
IBP_BY_PROFILE: dict[str, str] = {"2.5": "2.5"}

#: The safety-relevant keys and their Kafka 2.5 defaults (spec §12, KafkaConfig.scala@2.5.1). The
#: speed profile states most of them explicitly, which would hide a target whose *default* is
#: wrong; a cluster made with ``kafka_defaults=True`` (profile ``<p>`` + :data:`KAFKA_DEFAULTS_SUFFIX`)
#: leaves every one of them out of ``server.properties`` and its checks demand these values' behaviour.
SAFETY_DEFAULTS: dict[str, str] = {
    "unclean.leader.election.enable": "false",
    "delete.topic.enable": "true",
    "auto.leader.rebalance.enable": "true",
    "controlled.shutdown.enable": "true",
}
KAFKA_DEFAULTS_SUFFIX = "+kafka-defaults"


def profile_properties(profile: str) -> dict[str, str]:
    """Speed + determinism profile and the IBP of behaviour ``profile``.

    ``"<p>+kafka-defaults"``: the same without any key of :data:`SAFETY_DEFAULTS` (the target's
    own defaults apply; the speed keys such as the rebalance interval stay).
    """
    base, _, variant = profile.partition("+")
    if base not in IBP_BY_PROFILE or variant not in ("", KAFKA_DEFAULTS_SUFFIX[1:]):
        raise TargetError(
            f"unknown profile {profile!r}; known: {sorted(IBP_BY_PROFILE)}"
            f" (each optionally with {KAFKA_DEFAULTS_SUFFIX!r})"
        )
    props = {**SPEED_PROFILE, **DETERMINISM_PROFILE, "inter.broker.protocol.version": IBP_BY_PROFILE[base]}
    if variant:
        props = {k: v for k, v in props.items() if k not in SAFETY_DEFAULTS}
    return props
