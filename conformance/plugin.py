"""pytest plugin of the conformance suite (conformance ring).

- options ``--target`` (name or TOML path), ``--profile``, ``--areas``, ``--ids``, ``--results-dir``;
- the ``behaviour(*ids)`` marker: allure labels epic = area, feature = ID (one per ID), and
  deselection by ``--areas`` / ``--ids`` / ``--profile`` and the target's topology
  (:mod:`conformance.selection`: an unknown area, ID or profile, or an option given empty, is a
  usage error listing the valid ones);
- the ``combined_only(why)`` marker: a check that needs the controller inside a broker is skipped
  with ``why`` on a split-topology target;
- one run record (``records.run_record``) per test execution, written by the process that
  ran the test (xdist workers each write their own file), with phase metrics the test reported
  through the ``phase_metrics`` fixture; a check that ended because a node of the target could
  not start or died is recorded as outcome ``error`` with a reason starting ``target error:``;
- with ``--results-dir``: the collected checks (``collected-<run>-<worker>.json``, for the gate's
  progress) and, per failing check, its whole evidence in ``evidence/<check>.txt``.

Loaded by ``conformance/conftest.py`` (re-exporting these hooks), so ``pytest conformance/checks``
and ``python -m conformance`` behave the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Generator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import catalogue
from cluster.startup import TARGET_ERROR_PREFIX
from cluster.targets import REPO_ROOT, Target, TargetError, load_target
from conformance.ahead import begin_for_next
from conformance.evidence import EVIDENCE, attach, failure_line, target_error_of, write_evidence_file
from conformance.order import expected_durations, longest_first
from conformance.selection import Selection, SelectionError, resolve_selection
from conformance.sharing import shared_cluster_coming
from harness import timeline
from records.run_record import PhaseMetric, RunRecord, new_run_id, run_order_key, utc_now_iso, write_record
from records.timing import CheckTiming, write_timing

__all__ = [
    "PhaseMetrics",
    "Selection",
    "SelectionError",
    "behaviour_ids_of",
    "check_passed",
    "conformance_target",
    "phase_metrics",
    "pytest_addoption",
    "pytest_collection_finish",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_runtest_protocol",
    "pytest_runtest_setup",
    "pytest_runtest_teardown",
    "resolve_selection",
]

_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()
_METRICS = pytest.StashKey[list[PhaseMetric]]()
_TARGET_ERROR = pytest.StashKey[str]()
_SELECTION = pytest.StashKey[Selection]()
_PHASES = pytest.StashKey[dict[str, tuple[float, float]]]()
_NEXT = pytest.StashKey[pytest.Item | None]()
_ENV_RUN_ID = "KZK_RUN_ID"
_ENV_RUN_STARTED = "KZK_RUN_STARTED"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "Kafka ZooKeeper-mode controller conformance")
    group.addoption(
        "--target",
        default=os.environ.get("KZK_TARGET", "reference"),
        help="target name (reference, reference-split, kafka) or path to a target file (default: reference)",
    )
    group.addoption("--profile", default=catalogue.DEFAULT_PROFILE, help="behaviour profile (default 2.5)")
    group.addoption(
        "--no-start-ahead",
        action="store_true",
        help="start each check's default cluster in its own set-up, not while the check before runs",
    )
    group.addoption(
        "--no-share-clusters",
        action="store_true",
        help="give every check a cluster of its own, also those marked leaves_cluster_as_found",
    )
    group.addoption("--areas", default=None, help="comma list of areas to run (default: all)")
    group.addoption(
        "--ids",
        default=None,
        help="comma list of behaviour IDs to run, e.g. EPOCH-1,REASSIGN-13 (default: all)",
    )
    group.addoption(
        "--results-dir",
        default=os.environ.get("KZK_RESULTS_DIR", ""),
        help="write run records, the collected checks and failing checks' evidence under this directory",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "behaviour(*ids): behaviour IDs (spec/behaviours.md) a check covers")
    config.addinivalue_line(
        "markers",
        "combined_only(why): the check needs the controller inside a broker (skipped on a split topology)",
    )
    config.addinivalue_line("markers", "allure_label: allure label (allure-pytest)")
    config.addinivalue_line(
        "markers",
        "leaves_cluster_as_found: the check changes nothing in its default cluster, which may then be lent "
        "to the next such check (verified, conformance.sharing)",
    )
    config.stash[_SELECTION] = _config_selection(config)  # bad input stops the run before collection
    # Shared by xdist workers: they are spawned after configure and inherit the environment.
    os.environ.setdefault(_ENV_RUN_ID, new_run_id())
    os.environ.setdefault(_ENV_RUN_STARTED, datetime.now(UTC).isoformat())
    if config.getoption("--results-dir"):
        timeline.enable()  # where each check's wall time goes: timings-<worker>.jsonl


def behaviour_ids_of(item: pytest.Item) -> list[str]:
    """IDs named by every ``behaviour`` marker of ``item``, in order, without duplicates."""
    ids: list[str] = []
    for mark in item.iter_markers("behaviour"):
        ids += [str(a) for a in mark.args if str(a) not in ids]
    return ids


def _config_selection(config: pytest.Config) -> Selection:
    try:
        target = load_target(str(config.getoption("--target")))
        areas, ids = config.getoption("--areas"), config.getoption("--ids")
        return resolve_selection(
            None if areas is None else str(areas),
            None if ids is None else str(ids),
            str(config.getoption("--profile")),
            target.topology,
        )
    except (SelectionError, TargetError) as exc:
        raise pytest.UsageError(str(exc)) from exc


def _selected(ids: list[str], wanted: set[str]) -> bool:
    known = [i for i in ids if i in {b.id for b in catalogue.CATALOGUE}]
    if not known:
        return True
    return any(i in wanted for i in known)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    selection = config.stash[_SELECTION]
    wanted = set(selection.behaviour_ids)
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        ids = behaviour_ids_of(item)
        if ids and not _selected(ids, wanted):
            dropped.append(item)
            continue
        mark = item.get_closest_marker("combined_only")
        if mark is not None and selection.topology == "split":
            why = str(mark.args[0]) if mark.args else "it needs the controller inside a broker"
            item.add_marker(pytest.mark.skip(reason=f"not applicable to a split topology: {why}"))
        for bid in ids:
            area = bid.rsplit("-", 1)[0]
            item.add_marker(pytest.mark.allure_label(area, label_type="epic"))
            item.add_marker(pytest.mark.allure_label(bid, label_type="feature"))
        keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    # longest first, so the xdist workers finish together (conformance.order)
    results_dir = str(config.getoption("--results-dir"))
    durations, _ = expected_durations(Path(results_dir) if results_dir else None)
    items[:] = longest_first(keep, {i: item.nodeid for i, item in enumerate(keep)}, durations)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The checks this run will execute, for the gate's progress (one file per worker)."""
    results_dir = str(session.config.getoption("--results-dir"))
    if not results_dir:
        return
    run_id = os.environ[_ENV_RUN_ID]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    checks = [{"test": item.nodeid, "ids": behaviour_ids_of(item)} for item in session.items]
    path = Path(results_dir) / f"collected-{run_id}-{worker}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"run_id": run_id, "checks": checks}), encoding="utf-8")
    tmp.replace(path)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    if report.failed and report.when in ("setup", "call"):
        error = target_error_of(item, call.excinfo.value if call.excinfo else None)
        if error is not None:
            item.stash[_TARGET_ERROR] = error
        _add_evidence(item, report, error)
    return report


def _add_evidence(item: pytest.Item, report: pytest.TestReport, target_error: str | None) -> None:
    """Failing check: what the clusters looked like — in ``evidence/<check>.txt`` under the
    results dir (report sections without one) and as allure attachments."""
    sections: dict[str, str] = {}
    for provider in item.stash.get(EVIDENCE, []):
        try:
            sections.update(provider())
        except Exception as exc:
            sections[f"evidence error {len(sections)}"] = repr(exc)
    for name, text in sections.items():
        attach(name, text)
    results_dir = str(item.config.getoption("--results-dir"))
    if results_dir:
        write_evidence_file(
            Path(results_dir), item.nodeid, behaviour_ids_of(item), report, sections, target_error
        )
    else:
        report.sections += [(f"evidence: {name}", text) for name, text in sections.items()]


class PhaseMetrics:
    """Phase metrics a test measured; attached to its run record."""

    def __init__(self, sink: list[PhaseMetric]) -> None:
        self._sink = sink

    def record(self, name: str, value_s: float) -> None:
        self._sink.append(PhaseMetric(name, round(value_s, 4)))


@pytest.fixture
def phase_metrics(request: pytest.FixtureRequest) -> PhaseMetrics:
    return PhaseMetrics(request.node.stash.setdefault(_METRICS, []))


@pytest.fixture(scope="session")
def conformance_target(pytestconfig: pytest.Config) -> Target:
    """The target under test; every check is skipped (with the reason) if it cannot run here."""
    try:
        target = load_target(str(pytestconfig.getoption("--target")))
    except TargetError as exc:
        raise pytest.UsageError(str(exc)) from exc
    reason = target.unavailable_reason()
    if reason:
        pytest.skip(reason)
    return target


def check_passed(item: pytest.Item) -> bool:
    """``item``'s set-up and call ran and passed (read in its teardown)."""
    reports = item.stash.get(_REPORTS, {})
    return all(when in reports and reports[when].passed for when in ("setup", "call"))


def _outcome(reports: dict[str, pytest.TestReport], target_error: str | None) -> tuple[str, str | None]:
    for when in ("setup", "call", "teardown"):
        rep = reports.get(when)
        if rep is None:
            continue
        if rep.failed and target_error is not None and when != "teardown":
            return "error", (TARGET_ERROR_PREFIX + target_error)[:500]
        if rep.failed:
            return ("failed" if when == "call" else "error"), failure_line(rep)[:500]
        if rep.skipped:
            longrepr = rep.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            return "skipped", reason.removeprefix("Skipped: ")
    return "passed", None


_COMMIT: list[str | None] = []


def current_commit() -> str | None:
    """``$KZK_COMMIT`` or the repository's HEAD (cached), ``None`` outside git."""
    if not _COMMIT:
        commit = os.environ.get("KZK_COMMIT")
        if not commit:
            try:
                commit = subprocess.run(
                    ["git", "rev-parse", "HEAD"],
                    cwd=REPO_ROOT,
                    capture_output=True,
                    text=True,
                    timeout=10,
                    check=False,
                ).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                commit = ""
        _COMMIT.append(commit or None)
    return _COMMIT[0]


def _timed(item: pytest.Item, phase: str) -> Generator[None, None, None]:
    start = time.time()
    try:
        yield
    finally:
        item.stash.setdefault(_PHASES, {})[phase] = (start, time.time())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    yield from _timed(item, "setup")
    # set-up done (its cluster started): the next check's cluster may start now (conformance.ahead),
    # unless the next check will borrow a cluster that is already running (conformance.sharing)
    nextitem = item.stash.get(_NEXT, None)
    if not shared_cluster_coming(item.config, nextitem):
        begin_for_next(item, nextitem)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    yield from _timed(item, "call")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    yield from _timed(item, "teardown")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    started, t0 = utc_now_iso(), time.monotonic()
    item.stash[_NEXT] = nextitem
    result = yield
    results_dir = str(item.config.getoption("--results-dir"))
    if results_dir:
        _write(item, Path(results_dir), started, time.monotonic() - t0)
    return result


def _metrics_of(item: pytest.Item) -> list[PhaseMetric]:
    metrics: list[PhaseMetric] = item.stash.get(_METRICS, [])
    return metrics


def _write(item: pytest.Item, results_dir: Path, started: str, duration_s: float) -> None:
    outcome, reason = _outcome(item.stash.get(_REPORTS, {}), item.stash.get(_TARGET_ERROR, None))
    run_id = os.environ[_ENV_RUN_ID]
    record = RunRecord(
        kind="conformance-test",
        run_id=run_id,
        run_order=run_order_key(datetime.fromisoformat(os.environ[_ENV_RUN_STARTED]), run_id),
        test_id=item.nodeid,
        behaviour_ids=tuple(behaviour_ids_of(item)),
        target=str(item.config.getoption("--target")),
        profile=str(item.config.getoption("--profile")),
        outcome=outcome,
        reason=reason,
        duration_s=round(duration_s, 4),
        started_at=started,
        finished_at=utc_now_iso(),
        phase_metrics=tuple(_metrics_of(item)),
        commit=current_commit(),
        worker=os.environ.get("PYTEST_XDIST_WORKER"),
    )
    write_record(results_dir, record)
    phases: dict[str, tuple[float, float]] = item.stash.get(_PHASES, {})
    timing = CheckTiming(
        run_id=run_id,
        test_id=item.nodeid,
        worker=record.worker or "main",
        outcome=outcome,
        phases=phases,
        spans=tuple(timeline.drain()),
    )
    write_timing(results_dir, timing)
