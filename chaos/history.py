"""The chaos history: every operation a client or the nemesis issued, as data (decisions ring).

Jepsen's model (``../shared/guides/anchors-study.md`` §2.3): a process *invokes* an
operation, later the same process *completes* it with ``ok`` (it took effect), ``fail`` (it
certainly did not take effect) or ``info`` (indeterminate: timed out, connection lost — it may
or may not have taken effect). The runner records; the checkers read. Nothing here does I/O
except :meth:`History.dump` / :meth:`History.load`.

Schema (one JSON object per line in ``history.jsonl``, in ``index`` order)::

    {"index": 0, "time_ns": 81234567890, "process": "client-0", "type": "invoke",
     "f": "create_topic", "value": {"topic": "t-3", "partitions": 2,
     "replication_factor": 2}, "error": null}
    {"index": 1, "time_ns": 81240000000, "process": "client-0", "type": "ok",
     "f": "create_topic", "value": {"topic": "t-3", "partitions": 2,
     "replication_factor": 2}, "error": null}

======== ============================================================================
field    meaning
======== ============================================================================
index    position in the history, 0, 1, 2, … with no gaps (the recorder assigns it)
time_ns  ``time.monotonic_ns()`` of the recording machine when the op was recorded
process  who issued it: ``client-<n>`` / ``api-<n>`` for workload clients, ``nemesis`` for faults
type     ``invoke`` | ``ok`` | ``fail`` | ``info``
f        the operation's name (see below); a completion repeats its invocation's ``f``
value    a JSON object: the op's arguments (invoke) or its result (completion)
error    ``null``, or a short text saying why the op failed or is indeterminate
======== ============================================================================

Rules (checked by :meth:`History.complete` and :func:`validate`):

- every process is single-threaded: at most one outstanding invocation per process;
- a completion names its invocation by being the next op of the same process with the same
  ``f``; its type is ``ok``, ``fail`` or ``info``; an invocation may stay open at the end
  (the run ended before it completed: treat as ``info``).

Operation names (``f``) and the ``value`` keys the checkers read:

=================== ==========================================================
f                   value (invoke)
=================== ==========================================================
create_topic        ``topic``, ``partitions``, ``replication_factor`` and/or
                    ``assignment`` (``{"0": [1, 2], …}``) — ZooKeeper admin path
create_topic_admin  same keys — through confluent-kafka's AdminClient (CreateTopics); -1
                    for ``partitions`` / ``replication_factor``: the broker's default
add_partitions      ``topic``, ``partitions`` (the new total) and/or ``assignment``
reassign            ``topic``, ``assignment`` (``{"<partition>": [target replicas]}``)
preferred_election  ``partitions``: ``[{"topic": …, "partition": …}, …]``
delete_topic        ``topic``
broker_bounce       ``broker_id``
reassign_api        ``topic``, ``assignment`` — AlterPartitionReassignments (spec §13.1)
cancel_reassignment ``topic``, ``partitions`` (``[0, …]``) — the same with null targets
list_reassignments  ``partitions``: ``[{"topic": …, "partition": …}, …]`` or null (all)
elect_leaders       ``election_type`` (``PREFERRED`` | ``UNCLEAN``), ``partitions`` as above
alter_topic_config  ``topic``, ``config`` (``{name: value}``; null deletes) — IncrementalAlterConfigs
alter_broker_config ``entity`` (``<default>`` or a broker id), ``config`` as above — the same on
                    a BROKER resource (a dynamic broker config)
start_fault         nemesis: ``fault`` (package name) and its parameters
stop_fault          nemesis: ``fault``
heal                nemesis: heals every fault still active
quiesce             the final phase: waits until the cluster is quiet
=================== ==========================================================

What ``ok`` promises, because the checkers hold the cluster to it: a creation's topic znode was
written (it must exist at the end unless a deletion of the name followed); a reassignment's
target was handed to the controller (``/admin/reassign_partitions`` created — an existing
znode is ``fail``, as Kafka's tool refuses then); a deletion's marker was written. An op whose
outcome is not known is ``info``, never ``ok`` or ``fail``.

The admin-API ops' completions carry Kafka's answer: ``results`` (``[{"topic", "partition",
"error_code"}]``), ``controller`` (the broker that answered), ``reassigning`` (a listing:
``[{"topic", "partition", "replicas", "adding", "removing"}]``) and ``started_ms`` /
``ended_ms``, the wall clock around the request (ZooKeeper's transaction time is on the same
clock). ``ok`` promises every partition answered 0: the controller wrote the topic znode (a
reassignment or cancellation), elected (ElectLeaders; its metadata shows the leader), or the
broker wrote ``/config/topics/<t>``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, TypeGuard, get_args

__all__ = [
    "COMPLETION_TYPES",
    "NEMESIS_FS",
    "OP_TYPES",
    "WORKLOAD_FS",
    "History",
    "HistoryError",
    "Op",
    "OpPair",
    "OpType",
    "pairs",
    "validate",
]

OpType = Literal["invoke", "ok", "fail", "info"]
OP_TYPES: tuple[OpType, ...] = get_args(OpType)
COMPLETION_TYPES: frozenset[str] = frozenset({"ok", "fail", "info"})

WORKLOAD_FS: frozenset[str] = frozenset(
    {
        "create_topic",
        "create_topic_admin",
        "add_partitions",
        "reassign",
        "preferred_election",
        "delete_topic",
        "broker_bounce",
        "reassign_api",
        "cancel_reassignment",
        "list_reassignments",
        "elect_leaders",
        "alter_topic_config",
        "alter_broker_config",
    }
)
NEMESIS_FS: frozenset[str] = frozenset({"start_fault", "stop_fault", "heal", "quiesce"})

_FIELDS = ("index", "time_ns", "process", "type", "f", "value", "error")


class HistoryError(ValueError):
    """A history breaks the schema or the invoke/complete rules; the message says where."""


def _is_op_type(text: object) -> TypeGuard[OpType]:
    return text in OP_TYPES


@dataclass(frozen=True, slots=True)
class Op:
    """One history entry. ``value`` is a read-only JSON object (see the module docstring)."""

    index: int
    time_ns: int
    process: str
    type: OpType
    f: str
    value: Mapping[str, Any]
    error: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.value, MappingProxyType):
            object.__setattr__(self, "value", MappingProxyType(dict(self.value)))

    @property
    def is_invoke(self) -> bool:
        return self.type == "invoke"

    def to_json(self) -> dict[str, Any]:
        """The op as a JSON-able dict (the line format of :meth:`History.dump`)."""
        return {
            "index": self.index,
            "time_ns": self.time_ns,
            "process": self.process,
            "type": self.type,
            "f": self.f,
            "value": _plain(self.value),
            "error": self.error,
        }

    @classmethod
    def from_json(cls, obj: object) -> Op:
        """Build an op from a parsed JSON object; :class:`HistoryError` says what is wrong."""
        if not isinstance(obj, dict):
            raise HistoryError(f"expected a JSON object, got {type(obj).__name__}")
        missing = [k for k in _FIELDS if k not in obj]
        extra = sorted(set(obj) - set(_FIELDS))
        if missing or extra:
            raise HistoryError(f"fields missing {missing}, unknown {extra}; expected {list(_FIELDS)}")
        _expect(obj, "index", int)
        _expect(obj, "time_ns", int)
        _expect(obj, "process", str)
        _expect(obj, "f", str)
        _expect(obj, "value", dict)
        if obj["error"] is not None and not isinstance(obj["error"], str):
            raise HistoryError("field 'error' must be a string or null")
        op_type = obj["type"]
        if not _is_op_type(op_type):
            raise HistoryError(f"field 'type' is {op_type!r}; expected one of {list(OP_TYPES)}")
        return cls(
            obj["index"], obj["time_ns"], obj["process"], op_type, obj["f"], obj["value"], obj["error"]
        )


def _expect(obj: dict[str, Any], key: str, kind: type) -> None:
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise HistoryError(f"field {key!r} must be {kind.__name__}, got {value!r}")


def _plain(value: Any) -> Any:
    """Deep copy of a JSON-ish value with read-only mappings turned back into dicts."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _check_json(value: Mapping[str, Any]) -> dict[str, Any]:
    plain = _plain(value)
    try:
        json.dumps(plain, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise HistoryError(f"op value is not JSON-serialisable: {exc}") from exc
    assert isinstance(plain, dict)
    return plain


@dataclass(frozen=True, slots=True)
class OpPair:
    """An invocation and its completion (None: still open when the history ended)."""

    invoke: Op
    completion: Op | None

    @property
    def outcome(self) -> OpType:
        """``ok`` / ``fail`` / ``info``; an open invocation counts as ``info``."""
        return "info" if self.completion is None else self.completion.type


class _Pairing:
    """Incremental checker of the invoke/complete rules (shared by recorder and loader)."""

    def __init__(self) -> None:
        self.open: dict[str, Op] = {}
        self.pairs: dict[int, OpPair] = {}

    def add(self, op: Op, expected_index: int) -> None:
        if op.index != expected_index:
            raise HistoryError(f"index is {op.index}, expected {expected_index}")
        pending = self.open.get(op.process)
        if op.is_invoke:
            if pending is not None:
                raise HistoryError(
                    f"process {op.process!r} invokes {op.f!r} while op {pending.index} "
                    f"({pending.f!r}) is still open; complete it first"
                )
            self.open[op.process] = op
            self.pairs[op.index] = OpPair(op, None)
            return
        if pending is None:
            raise HistoryError(f"process {op.process!r} completes {op.f!r} with no open invocation")
        if pending.f != op.f:
            raise HistoryError(
                f"process {op.process!r} completes {op.f!r} but its open invocation "
                f"(op {pending.index}) is {pending.f!r}"
            )
        del self.open[op.process]
        self.pairs[pending.index] = OpPair(pending, op)


def validate(ops: Sequence[Op]) -> None:
    """Raise :class:`HistoryError` (naming the op index) if ``ops`` break the schema's rules."""
    pairing = _Pairing()
    for position, op in enumerate(ops):
        try:
            pairing.add(op, position)
        except HistoryError as exc:
            raise HistoryError(f"op {position}: {exc}") from None


_last_pairs: list[tuple[tuple[Op, ...], tuple[OpPair, ...]]] = []


def pairs(ops: Iterable[Op]) -> list[OpPair]:
    """Invocations with their completions, in invocation order (ops must be valid)."""
    # the checkers of one run each pair the same tuple: a tuple cannot change, so the last
    # answer is kept (holding the tuple keeps its identity from being reused)
    last = _last_pairs[-1] if _last_pairs else None  # one read: safe against another thread
    if last is not None and last[0] is ops:
        return list(last[1])
    pairing = _Pairing()
    for op in ops:
        pairing.add(op, op.index)
    found = [pairing.pairs[i] for i in sorted(pairing.pairs)]
    if isinstance(ops, tuple):
        _last_pairs[:] = [(ops, tuple(found))]
    return found


class History:
    """Thread-safe recorder and container of ops.

    >>> h = History(clock=iter(range(10)).__next__)
    >>> op = h.invoke("client-0", "delete_topic", {"topic": "a"})
    >>> h.complete(op, "ok").type
    'ok'
    """

    def __init__(self, ops: Iterable[Op] = (), clock: Callable[[], int] = time.monotonic_ns) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._ops: list[Op] = []
        self._pairing = _Pairing()
        for op in ops:
            self._append(op)

    def _append(self, op: Op) -> None:
        self._pairing.add(op, len(self._ops))
        self._ops.append(op)

    def invoke(self, process: str, f: str, value: Mapping[str, Any]) -> Op:
        """Record that ``process`` starts ``f`` with arguments ``value``."""
        plain = _check_json(value)
        with self._lock:
            op = Op(len(self._ops), self._clock(), process, "invoke", f, plain)
            self._append(op)
        return op

    def complete(
        self,
        invoke_op: Op,
        type: OpType,
        value: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> Op:
        """Record the outcome of ``invoke_op``; ``value`` defaults to the invocation's value."""
        if type not in COMPLETION_TYPES:
            raise HistoryError(f"completion type {type!r}; expected one of {sorted(COMPLETION_TYPES)}")
        plain = _check_json(invoke_op.value if value is None else value)
        with self._lock:
            pending = self._pairing.open.get(invoke_op.process)
            if pending is not invoke_op and pending != invoke_op:
                raise HistoryError(
                    f"op {invoke_op.index} is not the open invocation of {invoke_op.process!r}"
                )
            op = Op(len(self._ops), self._clock(), invoke_op.process, type, invoke_op.f, plain, error)
            self._append(op)
        return op

    @property
    def ops(self) -> tuple[Op, ...]:
        with self._lock:
            return tuple(self._ops)

    def __len__(self) -> int:
        with self._lock:
            return len(self._ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def pairs(self) -> list[OpPair]:
        return pairs(self.ops)

    def open_invocations(self) -> list[Op]:
        """Invocations with no completion yet (indeterminate if the run ends now)."""
        with self._lock:
            return sorted(self._pairing.open.values(), key=lambda op: op.index)

    def dump(self, path: Path | str) -> None:
        """Write the history as JSON lines (see the module docstring)."""
        lines = [json.dumps(op.to_json(), sort_keys=False, allow_nan=False) for op in self.ops]
        Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    @classmethod
    def load(cls, path: Path | str) -> History:
        """Read a history written by :meth:`dump`; errors name the file and line."""
        history = cls()
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise HistoryError(f"{path}: cannot read the history ({exc})") from None
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                history._append(Op.from_json(json.loads(line)))
            except json.JSONDecodeError as exc:
                raise HistoryError(f"{path}:{lineno}: not JSON ({exc.msg} at column {exc.colno})") from None
            except HistoryError as exc:
                raise HistoryError(f"{path}:{lineno}: {exc}") from None
        return history
