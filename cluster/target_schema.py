"""The target file format: every key, its type, default, meaning and validation (conformance ring, pure).

:data:`TARGET_KEYS` is the one description of a target file: :func:`parse_target` validates
against it, ``cluster/target_defs/TEMPLATE.toml`` is checked against it by a test, and
:func:`keys_markdown` renders it for the READMEs. A bad file is refused once, at load, with a
:class:`TargetError` naming the file, the key and what was expected.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONTROLLER_LOG_DIR",
    "LOG_KINDS",
    "PROBES",
    "TARGET_KEYS",
    "TEMPLATE_FIELDS",
    "KeyDoc",
    "TargetError",
    "check_templates",
    "keys_markdown",
    "number",
    "str_map",
    "str_tuple",
    "string_value",
    "table",
]


class TargetError(ValueError):
    """A target definition is invalid or cannot be found (the message says which and how to fix it)."""


@dataclass(frozen=True)
class KeyDoc:
    """One key of a target file."""

    key: str
    kind: str
    default: str
    meaning: str


#: Template fields usable in every string of a target file (``{name}``).
TEMPLATE_FIELDS: dict[str, str] = {
    "config": "the node's generated server.properties (commands only)",
    "node_dir": "the node's own directory (its config, logs, data dirs and stdout.log live here)",
    "log_dir": "{node_dir}/logs (a controller process: {node_dir}/controller-logs): where it writes its logs",
    "python": "the Python interpreter running the kit",
    "repo_root": "the kit's repository root",
    "target_dir": "the directory holding the target file (for paths relative to it)",
    "kafka_home": "$KAFKA_HOME (the literal text $KAFKA_HOME when unset)",
}

#: What each ``[logs]`` key names.
LOG_KINDS: dict[str, str] = {
    "state_change": "the state-change log, TRACE level, Kafka's log4j layout (required by most checks)",
    "server": "the node's main log (shown in evidence)",
}

#: Optional probes a target may offer beyond the universal ones.
PROBES: dict[str, str] = {
    "request_journal": "a JSON-lines file of the controller requests the node received",
}

#: Where a split topology's controller process logs: ``{log_dir}`` of the controller role.
CONTROLLER_LOG_DIR = "controller-logs"

TARGET_KEYS: tuple[KeyDoc, ...] = (
    KeyDoc(
        "name", "string", "required", "the target's name in the matrix, the run records and the certificate"
    ),
    KeyDoc("description", "string", '""', "one line saying what the target is"),
    KeyDoc(
        "command",
        "list of strings",
        "required",
        "the argv that starts one node from its server.properties; must contain {config}",
    ),
    KeyDoc("cwd", "string", '"{node_dir}"', "the node's working directory (must exist)"),
    KeyDoc(
        "version_command",
        "list of strings",
        "[]",
        "prints the target's version on its first line (exit 0); recorded in the certificate",
    ),
    KeyDoc(
        "deadline_scale",
        "number > 0",
        "1.0",
        "multiplies every deadline of the checks and the harness (slow starters such as JVMs: 3)",
    ),
    KeyDoc(
        "start_timeout_s",
        "number > 0",
        "20",
        "seconds (times deadline_scale) a started node may take to register /brokers/ids/<id>",
    ),
    KeyDoc(
        "stop_timeout_s",
        "number > 0",
        "20",
        "seconds a node may take to exit after SIGTERM (its controlled shutdown)",
    ),
    KeyDoc(
        "warm_start",
        "boolean",
        "false",
        'only for a command ["{python}", "-m", MODULE, ...]: the process launcher may fork nodes from an'
        " interpreter that has imported MODULE (same argv, cwd, env, output; KZK_WARM_START=0: never)",
    ),
    KeyDoc(
        "requires_env",
        "list of strings",
        "[]",
        "environment variables that must be set; when one is not, the target is refused with its name",
    ),
    KeyDoc(
        "requires_files",
        "list of strings",
        "[]",
        "paths (templates allowed) that must exist, e.g. the start script",
    ),
    KeyDoc("[env]", "table of strings", "{}", "environment of the node, added to the kit's own"),
    KeyDoc(
        "[logs]",
        "table of strings",
        "{}",
        "where the node's logs are: " + "; ".join(f"{k} = {v}" for k, v in LOG_KINDS.items()),
    ),
    KeyDoc(
        "[probes]",
        "table of strings",
        "{}",
        "optional probes: " + "; ".join(f"{k} = {v}" for k, v in PROBES.items()),
    ),
    KeyDoc(
        "[extra_properties]",
        "table of strings",
        "{}",
        "server.properties keys added to every node (after the speed profile, before per-check overrides)",
    ),
    KeyDoc(
        "[container]",
        "table",
        "absent",
        "how a node runs under --launcher docker: command, cwd, env, image_role (node), image;"
        " paths are the host's (bind-mounted at the same place); absent = process launcher only",
    ),
    KeyDoc(
        "[controller]",
        "table",
        "absent",
        "split topology: every node is a broker-only process plus this controller process, with the"
        " same broker id, started, stopped, killed and paused with it; keys command, cwd, env,"
        " extra_properties, logs",
    ),
    KeyDoc(
        "[controller] command",
        "list of strings",
        "required",
        "the argv of a controller process; {config} is its own properties file (the node's keys, its"
        " broker id, its [controller] extra_properties instead of the broker's)",
    ),
    KeyDoc("[controller] cwd", "string", '"{node_dir}"', "its working directory"),
    KeyDoc("[controller] env", "table of strings", "{}", "its environment, added to the kit's own"),
    KeyDoc(
        "[controller] extra_properties",
        "table of strings",
        "{}",
        "server.properties keys for the controller processes only",
    ),
    KeyDoc("[controller] logs", "table of strings", "{}", "as [logs], for the controller processes"),
)

_FORMATTER = string.Formatter()


def check_templates(value: str, where: str, source: str) -> None:
    """Refuse a string with a ``{field}`` the kit does not know (or unbalanced braces)."""
    try:
        fields = [f for _, f, _, _ in _FORMATTER.parse(value) if f is not None]
    except ValueError as exc:
        raise TargetError(
            f"{source}: {where}: {exc} in {value!r} (write {{{{ and }}}} for literal braces)"
        ) from exc
    unknown = [f for f in fields if f not in TEMPLATE_FIELDS]
    if unknown:
        raise TargetError(
            f"{source}: {where}: unknown template field {{{unknown[0]}}} in {value!r};"
            f" known fields: {', '.join('{' + f + '}' for f in TEMPLATE_FIELDS)}"
        )


def string_value(raw: Any, where: str, source: str, default: str) -> str:
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise TargetError(f"{source}: {where} must be a string, got {raw!r}")
    check_templates(raw, where, source)
    return raw


def str_map(raw: Any, where: str, source: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TargetError(f"{source}: {where} must be a table of strings, got {raw!r}")
    bad = [k for k, v in raw.items() if not isinstance(v, str)]
    if bad:
        raise TargetError(f"{source}: {where}: {bad[0]} must be a string, got {raw[bad[0]]!r}")
    for k, v in raw.items():
        check_templates(v, f"{where} {k}", source)
    return {str(k): v for k, v in raw.items()}


def str_tuple(raw: Any, where: str, source: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise TargetError(f"{source}: {where} must be a list of strings, got {raw!r}")
    for v in raw:
        check_templates(v, where, source)
    return tuple(raw)


def number(raw: Any, where: str, source: str, default: float) -> float:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw <= 0:
        raise TargetError(f"{source}: {where} must be a number > 0, got {raw!r}")
    return float(raw)


def table(raw: Any, where: str, source: str, known: Mapping[str, str] | set[str]) -> dict[str, Any]:
    """A sub-table with only ``known`` keys (absent → ``{}``)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TargetError(f"{source}: {where} must be a table, got {raw!r}")
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise TargetError(
            f"{source}: unknown key {unknown[0]!r} in {where}; known keys: {', '.join(sorted(known))}"
        )
    return dict(raw)


def keys_markdown() -> str:
    """:data:`TARGET_KEYS` and :data:`TEMPLATE_FIELDS` as Markdown tables (for the READMEs)."""
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{k.key}` | {k.kind} | `{k.default}` | {k.meaning} |" for k in TARGET_KEYS]
    lines += ["", "| template field | value |", "|---|---|"]
    lines += [f"| `{{{name}}}` | {what} |" for name, what in TEMPLATE_FIELDS.items()]
    return "\n".join(lines)
