"""Targets as data: how the suite starts one node of an implementation (conformance ring).

A target is a TOML file (built-ins in ``cluster/target_defs/``; any other file can be given
by path to ``--target``) with: the command that starts one node from a ``server.properties``
(templates ``{python}``, ``{config}``, ``{node_dir}``, ``{log_dir}``, ``{repo_root}``,
``{kafka_home}``), its environment, where its logs are, which optional probes it offers, extra
properties, and a deadline scale for slow starters.

The **test-speed profile** (:data:`SPEED_PROFILE`) is applied to every target: Kafka 2.5's
defaults (18 s ZooKeeper sessions, 30 s replica lag, 5 s controlled-shutdown backoff, 60 s
delete delay, 300 s rebalance interval) would make the suite crawl. Each entry says why.
Determinism entries (:data:`DETERMINISM_PROFILE`) switch off background activity that would add
unasked-for leader-epoch bumps; the checks of that activity switch it back on per test.

An optional ``[container]`` section says how the node runs under the docker launcher
(:mod:`harness.launcher`): ``command``/``cwd``/``env`` as seen *inside* the container (the same
templates; ``{config}``, ``{node_dir}`` and ``{log_dir}`` are bind-mounted at the same paths, so
they are the host's), ``image_role`` (``node``: the kit's node image or ``$KZK_NODE_IMAGE``) and
``image`` (an explicit image name, e.g. a vendor's broker; ``$KZK_NODE_IMAGE`` still overrides
it). Without the section the docker launcher cannot start the target's nodes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "BUILTIN_DIR",
    "DETERMINISM_PROFILE",
    "IBP_BY_PROFILE",
    "KAFKA_DEFAULTS_SUFFIX",
    "SAFETY_DEFAULTS",
    "SPEED_PROFILE",
    "ContainerCommand",
    "ContainerRecipe",
    "Target",
    "TargetError",
    "builtin_targets",
    "load_target",
    "profile_properties",
]

BUILTIN_DIR = Path(__file__).resolve().parent / "target_defs"
REPO_ROOT = Path(__file__).resolve().parent.parent


class TargetError(ValueError):
    """A target definition is invalid or cannot be found."""


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


@dataclass(frozen=True)
class ContainerRecipe:
    """The ``[container]`` section: how one node runs in a container (templates unrendered)."""

    command: tuple[str, ...]
    cwd: str = "{node_dir}"
    env: Mapping[str, str] = field(default_factory=dict)
    image_role: str = "node"
    image: str = ""


@dataclass(frozen=True)
class ContainerCommand:
    """A rendered :class:`ContainerRecipe` for one node: what the docker launcher runs."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    image_role: str
    image: str | None


@dataclass(frozen=True)
class Target:
    """One implementation's launch recipe (see the module docstring for the templates)."""

    name: str
    description: str
    command: tuple[str, ...]
    cwd: str = "{node_dir}"
    env: Mapping[str, str] = field(default_factory=dict)
    logs: Mapping[str, str] = field(default_factory=dict)
    probes: Mapping[str, str] = field(default_factory=dict)
    extra_properties: Mapping[str, str] = field(default_factory=dict)
    requires_env: tuple[str, ...] = ()
    requires_files: tuple[str, ...] = ()
    version_command: tuple[str, ...] = ()
    deadline_scale: float = 1.0
    stop_timeout_s: float = 20.0
    container: ContainerRecipe | None = None
    source: str = ""

    def _vars(self, node_dir: Path | None = None, config: Path | None = None) -> dict[str, str]:
        values = {
            "python": sys.executable,
            "repo_root": str(REPO_ROOT),
            "kafka_home": os.environ.get("KAFKA_HOME", "$KAFKA_HOME"),
        }
        if node_dir is not None:
            values["node_dir"] = str(node_dir)
            values["log_dir"] = str(node_dir / "logs")
        if config is not None:
            values["config"] = str(config)
        return values

    def _fmt(self, template: str, values: Mapping[str, str]) -> str:
        try:
            return template.format_map(values)
        except KeyError as exc:
            raise TargetError(f"target {self.name}: unknown template field {exc} in {template!r}") from exc

    def render_command(self, config: Path, node_dir: Path) -> list[str]:
        values = self._vars(node_dir, config)
        return [self._fmt(part, values) for part in self.command]

    def render_env(self, node_dir: Path) -> dict[str, str]:
        values = self._vars(node_dir)
        return {k: self._fmt(v, values) for k, v in self.env.items()}

    def render_cwd(self, node_dir: Path) -> Path:
        return Path(self._fmt(self.cwd, self._vars(node_dir)))

    def render_container(self, config: Path, node_dir: Path) -> ContainerCommand:
        """The ``[container]`` command of one node; :class:`TargetError` when the target has none."""
        recipe = self.container
        if recipe is None:
            raise TargetError(
                f"target {self.name} has no [container] section, so the docker launcher cannot start"
                f" its nodes; add one to {self.source or 'its target file'} or use --launcher process"
            )
        values = self._vars(node_dir, config)
        return ContainerCommand(
            argv=tuple(self._fmt(part, values) for part in recipe.command),
            cwd=Path(self._fmt(recipe.cwd, values)),
            env={k: self._fmt(v, values) for k, v in recipe.env.items()},
            image_role=recipe.image_role,
            image=self._fmt(recipe.image, values) or None,
        )

    def log_path(self, kind: str, node_dir: Path) -> Path | None:
        """Where log ``kind`` (``state_change``, ``server``) of a node is, if the target says."""
        template = self.logs.get(kind)
        return Path(self._fmt(template, self._vars(node_dir))) if template else None

    def probe_path(self, probe: str, node_dir: Path) -> Path | None:
        template = self.probes.get(probe)
        return Path(self._fmt(template, self._vars(node_dir))) if template else None

    def has_probe(self, probe: str) -> bool:
        return probe in self.probes

    def unavailable_reason(self) -> str | None:
        """Why this target cannot run here (missing env var or file), or ``None``."""
        for var in self.requires_env:
            if not os.environ.get(var):
                return f"target {self.name} needs ${var}, which is not set"
        values = self._vars()
        for template in self.requires_files:
            path = Path(self._fmt(template, values))
            if not path.exists():
                return f"target {self.name} needs {path}, which does not exist"
        return None

    def deadline(self, seconds: float) -> float:
        return seconds * self.deadline_scale

    def version(self) -> str | None:
        """The first line ``version_command`` prints (at most 200 characters), or ``None`` when the
        target has no such command, cannot run here, or the command fails: a failing command's
        output (a usage message, a stack trace) is never recorded as a version."""
        if not self.version_command or self.unavailable_reason():
            return None
        values = self._vars()
        try:
            out = subprocess.run(
                [self._fmt(c, values) for c in self.version_command],
                capture_output=True,
                text=True,
                timeout=30,
                cwd=REPO_ROOT,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        lines = (out.stdout or out.stderr).strip().splitlines()
        return lines[0][:200] if out.returncode == 0 and lines else None


def _str_map(raw: Any, what: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise TargetError(f"{what} must be a table of strings")
    return {str(k): v for k, v in raw.items()}


def _str_tuple(raw: Any, what: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise TargetError(f"{what} must be a list of strings")
    return tuple(raw)


def parse_target(data: Mapping[str, Any], source: str = "") -> Target:
    """A :class:`Target` from parsed TOML, validated once."""
    known = {
        "name",
        "description",
        "command",
        "cwd",
        "env",
        "logs",
        "probes",
        "extra_properties",
        "requires_env",
        "requires_files",
        "version_command",
        "deadline_scale",
        "stop_timeout_s",
        "container",
    }
    unknown = set(data) - known
    if unknown:
        raise TargetError(f"{source}: unknown keys {sorted(unknown)}")
    name = data.get("name")
    command = _str_tuple(data.get("command"), "command")
    if not isinstance(name, str) or not name or not command:
        raise TargetError(f"{source}: name and command are required")
    if not any("{config}" in part for part in command):
        raise TargetError(f"{source}: command must pass {{config}}")
    scale = data.get("deadline_scale", 1.0)
    stop = data.get("stop_timeout_s", 20.0)
    if not isinstance(scale, int | float) or scale <= 0 or not isinstance(stop, int | float) or stop <= 0:
        raise TargetError(f"{source}: deadline_scale and stop_timeout_s must be positive numbers")
    return Target(
        name=name,
        description=str(data.get("description", "")),
        command=command,
        cwd=str(data.get("cwd", "{node_dir}")),
        env=_str_map(data.get("env"), "env"),
        logs=_str_map(data.get("logs"), "logs"),
        probes=_str_map(data.get("probes"), "probes"),
        extra_properties=_str_map(data.get("extra_properties"), "extra_properties"),
        requires_env=_str_tuple(data.get("requires_env"), "requires_env"),
        requires_files=_str_tuple(data.get("requires_files"), "requires_files"),
        version_command=_str_tuple(data.get("version_command"), "version_command"),
        deadline_scale=float(scale),
        stop_timeout_s=float(stop),
        container=_container_recipe(data.get("container"), source),
        source=source,
    )


_IMAGE_ROLES = ("node",)


def _container_recipe(raw: Any, source: str) -> ContainerRecipe | None:
    """The optional ``[container]`` table, validated."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise TargetError(f"{source}: [container] must be a table")
    unknown = set(raw) - {"command", "cwd", "env", "image_role", "image"}
    if unknown:
        raise TargetError(f"{source}: unknown keys in [container]: {sorted(unknown)}")
    command = _str_tuple(raw.get("command"), "[container] command")
    if not command or not any("{config}" in part for part in command):
        raise TargetError(f"{source}: [container] command is required and must pass {{config}}")
    role = raw.get("image_role", "node")
    if role not in _IMAGE_ROLES:
        raise TargetError(f"{source}: [container] image_role {role!r} unknown; valid: {list(_IMAGE_ROLES)}")
    for key in ("cwd", "image"):
        if key in raw and not isinstance(raw[key], str):
            raise TargetError(f"{source}: [container] {key} must be a string")
    return ContainerRecipe(
        command=command,
        cwd=str(raw.get("cwd", "{node_dir}")),
        env=_str_map(raw.get("env"), "[container] env"),
        image_role=str(role),
        image=str(raw.get("image", "")),
    )


def builtin_targets() -> dict[str, Path]:
    return {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.toml"))}


def load_target(name_or_path: str) -> Target:
    """A built-in target by name (``reference``, ``kafka``) or a TOML file by path."""
    builtins = builtin_targets()
    path = builtins.get(name_or_path) or Path(name_or_path)
    if not path.is_file():
        raise TargetError(
            f"no target {name_or_path!r}: built-ins are {sorted(builtins)}, or give a .toml path"
        )
    with path.open("rb") as fh:
        try:
            data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise TargetError(f"{path}: {exc}") from exc
    return parse_target(data, str(path))
