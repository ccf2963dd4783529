"""Targets as data: how the suite starts one node of an implementation (conformance ring).

A target is a TOML file (built-ins in ``cluster/target_defs/``; any other file can be given
by path to ``--target``) with: the command that starts one node from a ``server.properties``, its
environment, where its logs are, which optional probes it offers, extra properties, deadlines, and
optionally a ``[container]`` recipe and a ``[controller]`` section (split topology: controller
processes beside broker-only nodes). Every key, its default and meaning is in
:data:`cluster.target_schema.TARGET_KEYS`; ``cluster/target_defs/TEMPLATE.toml`` is a commented
copy to start from.

The test-speed profile every target runs with lives in :mod:`cluster.profile` (re-exported here).

An optional ``[container]`` section says how the node runs under the docker launcher
(:mod:`harness.launcher`): ``command``/``cwd``/``env`` as seen *inside* the container (the same
templates; ``{config}``, ``{node_dir}`` and ``{log_dir}`` are bind-mounted at the same paths, so
they are the host's), ``image_role`` (``node``: the kit's node image or ``$KZK_NODE_IMAGE``) and
``image`` (an explicit image name, e.g. a vendor's broker; ``$KZK_NODE_IMAGE`` still overrides
it). Without the section the docker launcher cannot start the target's nodes.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cluster.profile import (
    DETERMINISM_PROFILE,
    IBP_BY_PROFILE,
    KAFKA_DEFAULTS_SUFFIX,
    SAFETY_DEFAULTS,
    SPEED_PROFILE,
    SPEED_PROFILE_DOC,
    profile_properties,
)
from cluster.target_schema import (
    CONTROLLER_LOG_DIR,
    LOG_KINDS,
    PROBES,
    TargetError,
    check_templates,
    number,
    str_map,
    str_tuple,
    string_value,
    table,
)

__all__ = [
    "BUILTIN_DIR",
    "DETERMINISM_PROFILE",
    "IBP_BY_PROFILE",
    "KAFKA_DEFAULTS_SUFFIX",
    "SAFETY_DEFAULTS",
    "SPEED_PROFILE",
    "SPEED_PROFILE_DOC",
    "ContainerCommand",
    "ContainerRecipe",
    "ControllerRecipe",
    "Role",
    "Target",
    "TargetError",
    "builtin_targets",
    "check_templates",
    "load_target",
    "parse_target",
    "profile_properties",
]

BUILTIN_DIR = Path(__file__).resolve().parent / "target_defs"
REPO_ROOT = Path(__file__).resolve().parent.parent

TEMPLATE_NAME = "TEMPLATE"

Role = Literal["broker", "controller"]


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
class ControllerRecipe:
    """The ``[controller]`` section (split topology): the controller process started beside each
    broker-only process, with its id, as one server (:mod:`cluster.server_pair`)."""

    command: tuple[str, ...]
    cwd: str = "{node_dir}"
    env: Mapping[str, str] = field(default_factory=dict)
    extra_properties: Mapping[str, str] = field(default_factory=dict)
    logs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    """One implementation's launch recipe (every key: :data:`cluster.target_schema.TARGET_KEYS`)."""

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
    start_timeout_s: float = 20.0
    stop_timeout_s: float = 20.0
    warm_start: bool = False
    container: ContainerRecipe | None = None
    controller: ControllerRecipe | None = None
    source: str = ""

    @property
    def warm_module(self) -> str | None:
        """The module a warm interpreter may preload for this target's nodes (``warm_start``)."""
        return self.command[2] if self.warm_start else None

    @property
    def topology(self) -> Literal["combined", "split"]:
        """``combined``: every node is a broker with the controller inside, as Kafka's servers;
        ``split``: every node is a broker-only process plus a ``[controller]`` process."""
        return "combined" if self.controller is None else "split"

    def _vars(
        self, node_dir: Path | None = None, config: Path | None = None, role: Role = "broker"
    ) -> dict[str, str]:
        values = {
            "python": sys.executable,
            "repo_root": str(REPO_ROOT),
            "target_dir": str(Path(self.source).resolve().parent) if self.source else str(BUILTIN_DIR),
            "kafka_home": os.environ.get("KAFKA_HOME", "$KAFKA_HOME"),
        }
        if node_dir is not None:
            values["node_dir"] = str(node_dir)
            values["log_dir"] = str(node_dir / ("logs" if role == "broker" else CONTROLLER_LOG_DIR))
        if config is not None:
            values["config"] = str(config)
        return values

    def _fmt(self, template: str, values: Mapping[str, str]) -> str:
        try:
            return template.format_map(values)
        except KeyError as exc:
            raise TargetError(
                f"target {self.name}: template field {exc} cannot be used in {template!r} here"
            ) from exc

    def _recipe(self, role: Role) -> tuple[tuple[str, ...], str, Mapping[str, str], Mapping[str, str]]:
        """command, cwd, env and logs of a node of ``role``."""
        if role == "broker":
            return self.command, self.cwd, self.env, self.logs
        if self.controller is None:
            raise TargetError(f"target {self.name} has no [controller] section (it is not a split topology)")
        c = self.controller
        return c.command, c.cwd, c.env, c.logs

    def render_command(self, config: Path, node_dir: Path, role: Role = "broker") -> list[str]:
        values = self._vars(node_dir, config, role)
        return [self._fmt(part, values) for part in self._recipe(role)[0]]

    def render_env(self, node_dir: Path, role: Role = "broker") -> dict[str, str]:
        values = self._vars(node_dir, role=role)
        return {k: self._fmt(v, values) for k, v in self._recipe(role)[2].items()}

    def render_cwd(self, node_dir: Path, role: Role = "broker") -> Path:
        return Path(self._fmt(self._recipe(role)[1], self._vars(node_dir, role=role)))

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

    def log_path(self, kind: str, node_dir: Path, role: Role = "broker") -> Path | None:
        """Where log ``kind`` (``state_change``, ``server``) of a node is, if the target says."""
        template = self._recipe(role)[3].get(kind)
        return Path(self._fmt(template, self._vars(node_dir, role=role))) if template else None

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


_TOP_KEYS = {
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
    "start_timeout_s",
    "stop_timeout_s",
    "warm_start",
    "container",
    "controller",
}


def _command(raw: Any, where: str, source: str) -> tuple[str, ...]:
    command = str_tuple(raw, where, source)
    if not command:
        raise TargetError(f"{source}: {where} is required: the argv that starts the process, with {{config}}")
    if not any("{config}" in part for part in command):
        raise TargetError(f"{source}: {where} must pass the generated server.properties as {{config}}")
    return command


def _warm_start(raw: Any, command: Any, source: str) -> bool:
    if raw is None:
        return False
    if not isinstance(raw, bool):
        raise TargetError(f"{source}: warm_start must be true or false, got {raw!r}")
    if raw and not (isinstance(command, list) and command[:2] == ["{python}", "-m"] and len(command) > 2):
        raise TargetError(
            f"{source}: warm_start = true needs a command of the form"
            ' ["{python}", "-m", "<module>", ...] (a Python module run by the kit\'s interpreter)'
        )
    return raw


def _known_keys(
    raw: Mapping[str, str], where: str, source: str, known: Mapping[str, str]
) -> Mapping[str, str]:
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise TargetError(f"{source}: unknown key {unknown[0]!r} in {where}; known: {', '.join(known)}")
    return raw


def parse_target(data: Mapping[str, Any], source: str = "") -> Target:
    """A :class:`Target` from parsed TOML, validated once (every key: ``TARGET_KEYS``)."""
    source = source or "target"
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise TargetError(f"{source}: unknown key {unknown[0]!r}; known keys: {', '.join(sorted(_TOP_KEYS))}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise TargetError(f"{source}: name is required (a non-empty string)")
    return Target(
        name=name,
        description=string_value(data.get("description"), "description", source, ""),
        command=_command(data.get("command"), "command", source),
        cwd=string_value(data.get("cwd"), "cwd", source, "{node_dir}"),
        env=str_map(data.get("env"), "[env]", source),
        logs=_known_keys(str_map(data.get("logs"), "[logs]", source), "[logs]", source, LOG_KINDS),
        probes=_known_keys(str_map(data.get("probes"), "[probes]", source), "[probes]", source, PROBES),
        extra_properties=str_map(data.get("extra_properties"), "[extra_properties]", source),
        requires_env=str_tuple(data.get("requires_env"), "requires_env", source),
        requires_files=str_tuple(data.get("requires_files"), "requires_files", source),
        version_command=str_tuple(data.get("version_command"), "version_command", source),
        deadline_scale=number(data.get("deadline_scale"), "deadline_scale", source, 1.0),
        start_timeout_s=number(data.get("start_timeout_s"), "start_timeout_s", source, 20.0),
        stop_timeout_s=number(data.get("stop_timeout_s"), "stop_timeout_s", source, 20.0),
        warm_start=_warm_start(data.get("warm_start"), data.get("command"), source),
        container=_container_recipe(data.get("container"), source),
        controller=_controller_recipe(data.get("controller"), source),
        source=source,
    )


_IMAGE_ROLES = ("node",)


def _container_recipe(raw: Any, source: str) -> ContainerRecipe | None:
    """The optional ``[container]`` table, validated."""
    if raw is None:
        return None
    t = table(raw, "[container]", source, {"command", "cwd", "env", "image_role", "image"})
    role = t.get("image_role", "node")
    if role not in _IMAGE_ROLES:
        raise TargetError(
            f"{source}: [container] image_role {role!r} unknown; valid: {', '.join(_IMAGE_ROLES)}"
        )
    return ContainerRecipe(
        command=_command(t.get("command"), "[container] command", source),
        cwd=string_value(t.get("cwd"), "[container] cwd", source, "{node_dir}"),
        env=str_map(t.get("env"), "[container] env", source),
        image_role=str(role),
        image=string_value(t.get("image"), "[container] image", source, ""),
    )


def _controller_recipe(raw: Any, source: str) -> ControllerRecipe | None:
    """The optional ``[controller]`` table (split topology), validated."""
    if raw is None:
        return None
    known = {"command", "cwd", "env", "extra_properties", "logs"}
    t = table(raw, "[controller]", source, known)
    logs = str_map(t.get("logs"), "[controller] logs", source)
    return ControllerRecipe(
        command=_command(t.get("command"), "[controller] command", source),
        cwd=string_value(t.get("cwd"), "[controller] cwd", source, "{node_dir}"),
        env=str_map(t.get("env"), "[controller] env", source),
        extra_properties=str_map(t.get("extra_properties"), "[controller] extra_properties", source),
        logs=_known_keys(logs, "[controller] logs", source, LOG_KINDS),
    )


def builtin_targets() -> dict[str, Path]:
    """Built-in target files by name (``TEMPLATE.toml`` is a template, not a target)."""
    found = {p.stem: p for p in BUILTIN_DIR.glob("*.toml") if p.stem != TEMPLATE_NAME}
    return dict(sorted(found.items()))


def _looks_like_path(name: str) -> bool:
    return "/" in name or name.endswith(".toml") or name.startswith(".")


def _target_path(name_or_path: str) -> Path:
    builtins = builtin_targets()
    if name_or_path in builtins:
        return builtins[name_or_path]
    listed = ", ".join(repr(n) for n in builtins)
    if not name_or_path.strip():
        raise TargetError(f"no target given: name a built-in target ({listed}) or a target file")
    path = Path(name_or_path)
    if not _looks_like_path(name_or_path) and not path.exists():
        close = difflib.get_close_matches(name_or_path, list(builtins), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise TargetError(
            f"no target {name_or_path!r}{hint}: the built-in targets are {listed};"
            " or give the path of a target file (e.g. ./my-target.toml)"
        )
    if not path.exists():
        raise TargetError(f"target file {name_or_path}: the file does not exist")
    if path.is_dir():
        raise TargetError(f"target file {name_or_path}: is a directory, not a TOML file")
    return path


def load_target(name_or_path: str) -> Target:
    """A built-in target by name (``reference``, ``kafka``, …) or a TOML file by path.

    Every problem is a :class:`TargetError` saying what is wrong: no such built-in, a missing or
    unreadable file, invalid TOML (with its line), an unknown key or a key of the wrong type.
    """
    path = _target_path(name_or_path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TargetError(f"target file {path}: cannot be read: {exc.strerror or exc}") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TargetError(
            f"target file {path}: is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise TargetError(f"target file {path}: is not valid TOML: {exc}") from exc
    return parse_target(data, str(path))
