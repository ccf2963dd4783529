"""Scenarios as data: a cluster shape and a sequence of steps, printable as JSON (conformance ring, pure).

A scenario file is one JSON object::

    {"format": "kzk-diff-scenario/1",
     "origin": {"seed": 7, "index": 3},             # where it came from (not part of its identity)
     "nodes": {"1": {}, "2": {"delete.topic.enable": "false"}, "3": {}},
     "first_controller": 1,
     "steps": [{"op": "create_topic_zk", "topic": "t0", "assignment": {"0": [1, 2]}, "config": {}},
               {"op": "kill", "node": 2}, ...]}

``nodes`` maps each broker id to its ``server.properties`` overrides (Kafka keys only).
Loading validates everything — the format tag, node ids, every step's operation and parameters
(:mod:`conformance.diff.steps`) and each step's precondition replayed on the cluster model
(:mod:`conformance.diff.model`) — and raises :class:`ScenarioError` naming the problem; a
scenario that loads can be run. :meth:`Scenario.key` is a content hash (origin excluded): the
reference-trace cache and reports name scenarios by it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "Scenario", "ScenarioError", "Step", "load_scenario"]

FORMAT = "kzk-diff-scenario/1"
MIN_NODES, MAX_NODES = 1, 9


class ScenarioError(ValueError):
    """A scenario (file) is unreadable, malformed or inconsistent; the message says where."""


@dataclass(frozen=True)
class Step:
    """One input to the cluster: an operation name and its JSON parameters."""

    op: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, **self.params}

    def describe(self) -> str:
        args = ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in self.params.items())
        return f"{self.op}({args})"


@dataclass(frozen=True)
class Scenario:
    """A cluster shape (node id → config overrides, first controller) and its steps."""

    nodes: Mapping[int, Mapping[str, str]]
    first_controller: int
    steps: tuple[Step, ...]
    origin: Mapping[str, Any] = field(default_factory=dict)

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self.nodes))

    def to_json(self, *, with_origin: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"format": FORMAT}
        if with_origin and self.origin:
            out["origin"] = dict(self.origin)
        out["nodes"] = {str(b): dict(self.nodes[b]) for b in self.broker_ids}
        out["first_controller"] = self.first_controller
        out["steps"] = [s.to_json() for s in self.steps]
        return out

    def dumps(self) -> str:
        """The scenario file: one line per node and per step, so a repro reads like a script."""
        data = self.to_json()

        def compact(value: Any) -> str:
            return json.dumps(value, separators=(", ", ": "))

        lines = ["{", f' "format": {compact(data["format"])},']
        if "origin" in data:
            lines.append(f' "origin": {compact(data["origin"])},')
        lines.append(' "nodes": {')
        nodes = list(data["nodes"].items())
        lines += [
            f"  {compact(k)}: {compact(v)}{',' if i < len(nodes) - 1 else ''}"
            for i, (k, v) in enumerate(nodes)
        ]
        lines += [" },", f' "first_controller": {data["first_controller"]},', ' "steps": [']
        steps = data["steps"]
        lines += [f"  {compact(st)}{',' if i < len(steps) - 1 else ''}" for i, st in enumerate(steps)]
        lines += [" ]", "}"]
        return "\n".join(lines) + "\n"

    def key(self) -> str:
        """A hash of the scenario's content (its origin excluded): same content, same key."""
        canonical = json.dumps(self.to_json(with_origin=False), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def name(self) -> str:
        seed, index = self.origin.get("seed"), self.origin.get("index")
        return f"s{seed}-{index}" if seed is not None and index is not None else f"k{self.key()}"

    def with_steps(self, steps: tuple[Step, ...]) -> Scenario:
        return Scenario(self.nodes, self.first_controller, steps, self.origin)

    @classmethod
    def from_json(cls, data: Any, where: str = "scenario") -> Scenario:
        """Parse and validate (shape, steps, preconditions); :class:`ScenarioError` otherwise."""
        from conformance.diff.model import replay  # noqa: PLC0415 - model imports this module

        if not isinstance(data, dict):
            raise ScenarioError(f"{where}: a scenario is a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise ScenarioError(f"{where}: 'format' must be {FORMAT!r}, got {data.get('format')!r}")
        unknown = set(data) - {"format", "origin", "nodes", "first_controller", "steps"}
        if unknown:
            raise ScenarioError(f"{where}: unknown keys {sorted(unknown)}")
        scenario = cls(
            nodes=_nodes(data.get("nodes"), where),
            first_controller=_int(data.get("first_controller"), f"{where}: first_controller"),
            steps=_steps(data.get("steps"), where),
            origin=dict(data["origin"]) if isinstance(data.get("origin"), dict) else {},
        )
        if scenario.first_controller not in scenario.nodes:
            raise ScenarioError(f"{where}: first_controller {scenario.first_controller} is not a node")
        replay(scenario, where)
        return scenario


def _int(raw: Any, what: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ScenarioError(f"{what} must be an integer, got {raw!r}")
    return raw


def _nodes(raw: Any, where: str) -> dict[int, dict[str, str]]:
    if not isinstance(raw, dict) or not MIN_NODES <= len(raw) <= MAX_NODES:
        raise ScenarioError(f"{where}: 'nodes' must map {MIN_NODES}-{MAX_NODES} broker ids to config tables")
    out: dict[int, dict[str, str]] = {}
    for key, conf in raw.items():
        if not str(key).isdigit() or not 0 <= int(key) <= 999:
            raise ScenarioError(f"{where}: node id {key!r} is not a broker id (0-999)")
        if not isinstance(conf, dict) or not all(isinstance(v, str) for v in conf.values()):
            raise ScenarioError(f"{where}: node {key}: config must be a table of strings")
        out[int(key)] = {str(k): v for k, v in conf.items()}
    return out


def _steps(raw: Any, where: str) -> tuple[Step, ...]:
    from conformance.diff.steps import validate_params  # noqa: PLC0415 - steps imports this module

    if not isinstance(raw, list):
        raise ScenarioError(f"{where}: 'steps' must be a list")
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("op"), str):
            raise ScenarioError(f"{where}: step {i} must be an object with an 'op'")
        params = {k: v for k, v in entry.items() if k != "op"}
        validate_params(entry["op"], params, f"{where}: step {i}")
        out.append(Step(entry["op"], params))
    return tuple(out)


def load_scenario(path: Path) -> Scenario:
    """A scenario file, validated; :class:`ScenarioError` naming the file and the problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario file {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    return Scenario.from_json(data, str(path))
