"""Run-record schema, version 2 (shared data contract: conformance plugin, chaos runner, simulator,
reports).

One record = one execution of one conformance test (``kind="conformance-test"``), one chaos
scenario run (``kind="chaos-run"``) or one run of the deterministic simulator (``kind="sim-run"``,
the same fields as a chaos run), written as one JSON line under a results directory. Readers
(the Spark reports) compute pass rates and flip rates from ``run_order``: records of one
``test_id`` sorted by it are consecutive executions.

Fields (all required unless marked optional):

=================  ============  ====================================================================
field              type          meaning
=================  ============  ====================================================================
schema_version     int           ``SCHEMA_VERSION`` (2); readers also accept 1 (below)
kind               str           ``conformance-test`` | ``chaos-run`` | ``sim-run``
record_id          str           the execution's unique, deterministic id (:func:`derive_record_id`):
                                 ``<run_id>:<test_id>`` for a conformance test,
                                 ``<run_id>:<test_id>:<seed>`` for a chaos or simulator run, so the
                                 same run executed again (a retried shard of the same campaign)
                                 has the same id and readers count it once
run_id             str           one suite/campaign invocation (all workers of a run share it)
run_order          str           sortable key ``<UTC start, ISO basic>-<run_id>``: flip rates
test_id            str           pytest node id, or the chaos scenario id
behaviour_ids      list[str]     catalogue IDs the test/scenario covers (may be empty for chaos)
target             str           target name (``reference``, ``kafka``, …)
target_version     str|null      what the target reports (optional)
profile            str           behaviour profile, e.g. ``2.5``
fault_package      str           ``none`` for conformance; the nemesis package for chaos
seed               int|null      the generator seed (chaos, simulator); null for conformance
outcome            str           ``passed`` | ``failed`` | ``skipped`` | ``error`` (chaos verdicts
                                 map: valid→passed, invalid→failed, unknown→error)
reason             str|null      skip reason or first line of the failure (optional)
duration_s         float         wall time of the execution (setup+call+teardown)
phase_metrics      list[obj]     ``{"name","value","unit"}`` with ``name`` from :data:`METRICS`
excused            obj|null      chaos and simulator runs only (optional): Kafka-quirk name → how
                                 many items the quirk registry excused in this run; ``{}`` = the
                                 registry excused nothing, null/absent = not reported
commit             str|null      git commit of the suite/implementation under test
host               str           hostname
worker             str|null      xdist worker id or runner slot (optional)
started_at         str           ISO-8601 UTC
finished_at        str           ISO-8601 UTC
=================  ============  ====================================================================

Version 1 is version 2 without ``record_id`` and ``excused`` and without the ``sim-run`` kind;
its records stay valid, and :func:`record_id_of` derives their id by the same rule.

Phase metrics are measured black-box only; :data:`METRICS` enumerates each with its unit and
how it is measured, so any target's numbers are comparable. Times are wall-clock times of one
host: ZooKeeper transaction-log record times (``time_ms``), request-proxy arrival times and the
check's own clock. :mod:`records.phases` computes the conformance-test ones; ``time_to_heal``
is the chaos runner's.
"""

from __future__ import annotations

import json
import platform
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

__all__ = [
    "KINDS",
    "KINDS_BY_VERSION",
    "METRICS",
    "OUTCOMES",
    "SCHEMA_VERSION",
    "SEEDED_KINDS",
    "STREAMS",
    "SUPPORTED_VERSIONS",
    "MetricDefinition",
    "PhaseMetric",
    "RecordError",
    "RunRecord",
    "derive_record_id",
    "new_run_id",
    "read_records",
    "record_id_of",
    "run_order_key",
    "utc_now_iso",
    "validate",
    "write_record",
]

SCHEMA_VERSION: Final = 2
SUPPORTED_VERSIONS: Final = (1, 2)
KINDS: Final = ("conformance-test", "chaos-run", "sim-run")
KINDS_BY_VERSION: Final[dict[int, tuple[str, ...]]] = {1: ("conformance-test", "chaos-run"), 2: KINDS}
# The file-name prefixes of the record streams (``<stream>-<writer>.jsonl``).
STREAMS: Final = ("runs", "chaos-runs", "sim-runs")
# Kinds whose executions are identified by their seed too, and may carry ``excused``.
SEEDED_KINDS: Final = ("chaos-run", "sim-run")
OUTCOMES: Final = ("passed", "failed", "skipped", "error")


class RecordError(ValueError):
    """A run record does not match the schema (message lists every problem)."""


@dataclass(frozen=True)
class MetricDefinition:
    """One enumerated phase metric: unit and the black-box way it is measured."""

    name: str
    unit: str
    measured: str


METRICS: Final[dict[str, MetricDefinition]] = {
    m.name: m
    for m in (
        MetricDefinition(
            "controller_election",
            "s",
            "from the moment the previous controller is gone (its /controller delete or the "
            "closeSession whose ephemerals include /controller, the last such txn before the election) "
            "or, for a cluster's first election, the txn of the first broker registration "
            "(/brokers/ids/<id> create), to the txn that creates the new /controller",
        ),
        MetricDefinition(
            "failover_to_ready",
            "s",
            "from the txn creating /controller for epoch E (the election multi setting /controller_epoch "
            "to E) to the request proxy's arrival time of the first UpdateMetadata of epoch E at any broker",
        ),
        MetricDefinition(
            "partition_online_after_create",
            "s",
            "from the txn creating /brokers/topics/<t> to the txn creating the last of its partitions' "
            "state znodes with a leader (not -1)",
        ),
        MetricDefinition(
            "reassignment_completion",
            "s",
            "from the txn creating /admin/reassign_partitions to the txn deleting it",
        ),
        MetricDefinition(
            "leader_reelection_after_broker_failure",
            "s",
            "from the closeSession txn whose ephemerals include the failed broker's /brokers/ids/<id> to "
            "the first later state-znode setData naming another leader (not -1, not the failed broker)",
        ),
        MetricDefinition(
            "isr_expansion",
            "s",
            "from the moment an out-of-ISR replica can catch up (request-proxy arrival of the LeaderAndIsr "
            "making it a follower, or the check's wall-clock resume of a paused follower) to the txn of "
            "the first later state-znode setData whose ISR contains that replica",
        ),
        MetricDefinition(
            "time_to_heal",
            "s",
            "chaos only (never recorded by conformance checks): from the heal of the fault package to "
            "the first poll where every checker invariant (one controller, every partition with a live "
            "leader, ISR ⊆ live) holds",
        ),
    )
}


@dataclass(frozen=True)
class PhaseMetric:
    """One measured phase: ``name`` from :data:`METRICS`, ``value`` in that metric's unit."""

    name: str
    value: float
    unit: str = ""

    def __post_init__(self) -> None:
        if not self.unit and self.name in METRICS:
            object.__setattr__(self, "unit", METRICS[self.name].unit)


def derive_record_id(kind: str, run_id: str, test_id: str, seed: int | None) -> str:
    """The default ``record_id``: ``<run_id>:<test_id>``, plus ``:<seed>`` for a chaos or simulator
    run (when it has a seed). Deterministic, so a re-executed run gets the same id."""
    parts = [run_id, test_id]
    if kind in SEEDED_KINDS and seed is not None:
        parts.append(str(seed))
    # str(): a damaged record (a null or numeric id) still gets an id, and is then rejected by
    # validation with its problems named, never a crash of the reader
    return ":".join(str(p) for p in parts)


def record_id_of(d: dict[str, Any]) -> str:
    """A record's ``record_id``: the one it carries (version 2), else derived (version 1)."""
    given = d.get("record_id")
    if isinstance(given, str) and given:
        return given
    return derive_record_id(str(d["kind"]), str(d["run_id"]), str(d["test_id"]), d.get("seed"))


@dataclass(frozen=True)
class RunRecord:
    """A run record; :meth:`to_json` validates before serialising. ``record_id`` left empty is
    derived (:func:`derive_record_id`)."""

    kind: str
    run_id: str
    run_order: str
    test_id: str
    behaviour_ids: tuple[str, ...]
    target: str
    profile: str
    outcome: str
    duration_s: float
    started_at: str
    finished_at: str
    fault_package: str = "none"
    seed: int | None = None
    reason: str | None = None
    phase_metrics: tuple[PhaseMetric, ...] = ()
    commit: str | None = None
    host: str = field(default_factory=platform.node)
    worker: str | None = None
    target_version: str | None = None
    record_id: str = ""
    excused: dict[str, int] | None = None
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if not self.record_id:
            rid = derive_record_id(self.kind, self.run_id, self.test_id, self.seed)
            object.__setattr__(self, "record_id", rid)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["behaviour_ids"] = list(self.behaviour_ids)
        d["phase_metrics"] = [asdict(m) for m in self.phase_metrics]
        d["excused"] = None if self.excused is None else dict(self.excused)
        if self.schema_version == 1:  # a version-1 record has neither field
            del d["record_id"], d["excused"]
        return d

    def to_json(self) -> str:
        d = self.to_dict()
        problems = validate(d)
        if problems:
            raise RecordError("; ".join(problems))
        return json.dumps(d, sort_keys=True, separators=(",", ":"))


_Types = dict[str, type | tuple[type, ...]]
_REQUIRED_V1: Final[_Types] = {
    "schema_version": int,
    "kind": str,
    "run_id": str,
    "run_order": str,
    "test_id": str,
    "behaviour_ids": list,
    "target": str,
    "profile": str,
    "fault_package": str,
    "seed": (int, type(None)),
    "outcome": str,
    "duration_s": (int, float),
    "phase_metrics": list,
    "commit": (str, type(None)),
    "host": str,
    "started_at": str,
    "finished_at": str,
}
_OPTIONAL_V1: Final[_Types] = {
    "reason": (str, type(None)),
    "worker": (str, type(None)),
    "target_version": (str, type(None)),
}
# version → (required, optional) fields and their JSON types
_FIELDS: Final[dict[int, tuple[_Types, _Types]]] = {
    1: (_REQUIRED_V1, _OPTIONAL_V1),
    2: (_REQUIRED_V1 | {"record_id": str}, _OPTIONAL_V1 | {"excused": (dict, type(None))}),
}
assert tuple(_FIELDS) == SUPPORTED_VERSIONS == tuple(KINDS_BY_VERSION)


def _check_time(d: dict[str, Any], key: str, problems: list[str]) -> None:
    value = d.get(key)
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value)
        except ValueError:
            problems.append(f"{key}: not ISO-8601: {value!r}")


def _check_metrics(metrics: list[Any], problems: list[str]) -> None:
    for i, m in enumerate(metrics):
        if not isinstance(m, dict) or set(m) != {"name", "value", "unit"}:
            problems.append(f"phase_metrics[{i}]: must be an object with name, value, unit")
            continue
        definition = METRICS.get(m["name"])
        if definition is None:
            problems.append(f"phase_metrics[{i}]: unknown metric {m['name']!r}")
        elif m["unit"] != definition.unit:
            problems.append(f"phase_metrics[{i}]: unit {m['unit']!r}, expected {definition.unit!r}")
        if isinstance(m.get("value"), bool) or not isinstance(m.get("value"), int | float):
            problems.append(f"phase_metrics[{i}]: value must be a number")


def _check_excused(d: dict[str, Any], problems: list[str]) -> None:
    excused = d.get("excused")
    if excused is None:
        return
    if d["kind"] not in SEEDED_KINDS:
        problems.append(f"excused: only for {' and '.join(SEEDED_KINDS)} records")
    for quirk, count in excused.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            problems.append(f"excused[{quirk!r}]: must be a count (a whole number >= 0)")


def _type_problems(d: dict[str, Any], required: _Types, optional: _Types) -> list[str]:
    problems: list[str] = []
    for key, typ in {**required, **optional}.items():
        if key not in d:
            if key in required:
                problems.append(f"{key}: missing")
        elif (isinstance(d[key], bool) and typ is not bool) or not isinstance(d[key], typ):
            problems.append(f"{key}: wrong type {type(d[key]).__name__}")
    return problems + [f"{k}: unknown field" for k in d if k not in required and k not in optional]


def validate(d: dict[str, Any]) -> list[str]:
    """Every schema violation of record ``d`` (empty list = valid), by the rules of its
    ``schema_version`` (a version this module does not know is checked as the newest)."""
    version = d.get("schema_version")
    known = version if version in _FIELDS and not isinstance(version, bool) else SCHEMA_VERSION
    problems = _type_problems(d, *_FIELDS[known])
    if problems:
        return problems
    if version not in SUPPORTED_VERSIONS:
        supported = list(SUPPORTED_VERSIONS)
        problems.append(f"schema_version: {version} not supported (this reader knows {supported})")
    kinds = KINDS_BY_VERSION[known]
    if d["kind"] not in kinds:
        problems.append(f"kind: {d['kind']!r} not in {kinds}")
    if d["outcome"] not in OUTCOMES:
        problems.append(f"outcome: {d['outcome']!r} not in {OUTCOMES}")
    if d["kind"] == "conformance-test" and d["fault_package"] != "none":
        problems.append("fault_package: must be 'none' for conformance-test")
    if "record_id" in d and not d["record_id"]:
        problems.append("record_id: empty")
    if not all(isinstance(b, str) for b in d["behaviour_ids"]):
        problems.append("behaviour_ids: must be strings")
    if d["duration_s"] < 0:
        problems.append("duration_s: negative")
    _check_metrics(d["phase_metrics"], problems)
    _check_excused(d, problems)
    for key in ("started_at", "finished_at"):
        _check_time(d, key, problems)
    return problems


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def run_order_key(started: datetime, run_id: str) -> str:
    """Sortable run-order key: UTC start in ISO basic format, then the run id."""
    return f"{started.astimezone(UTC).strftime('%Y%m%dT%H%M%S.%fZ')}-{run_id}"


def write_record(results_dir: Path, record: RunRecord, stream: str = "runs") -> Path:
    """Append ``record`` as one JSON line to ``<results_dir>/<stream>-<worker or main>.jsonl``.

    One file per writer process: xdist workers never interleave partial lines. The streams are
    ``runs`` (conformance), ``chaos-runs`` and ``sim-runs``: the reports find run records by these
    file names (:data:`STREAMS`), at any depth, so nothing else in a results directory is read.
    """
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{stream}-{record.worker or 'main'}.jsonl"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(record.to_json() + "\n")
    return path


def read_records(paths: Iterable[Path], *, strict: bool = True) -> Iterator[dict[str, Any]]:
    """Records from JSON-lines files; with ``strict`` an invalid line raises :class:`RecordError`."""
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            d = json.loads(line)
            problems = validate(d)
            if problems and strict:
                raise RecordError(f"{path}:{n}: " + "; ".join(problems))
            if not problems:
                yield d
