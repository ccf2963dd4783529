"""pytest plugin of the conformance suite (conformance ring).

- options ``--target`` (name or TOML path), ``--profile``, ``--areas``, ``--ids``, ``--results-dir``;
- the ``behaviour(*ids)`` marker: allure labels epic = area, feature = ID (one per ID), and
  deselection by ``--areas`` / ``--ids`` / ``--profile``: the selection is the IDs of the given
  areas plus the given IDs (everything when neither is given), validated by
  :func:`resolve_selection` (an unknown area, ID or profile is a usage error listing the valid
  ones);
- one run record (``records.run_record``) per test execution, written by the process that
  ran the test (xdist workers each write their own file), with phase metrics the test reported
  through the ``phase_metrics`` fixture.

Loaded by ``conformance/conftest.py`` (re-exporting these hooks), so ``pytest conformance/checks``
and ``python -m conformance`` behave the same.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

import catalogue
from cluster.targets import IBP_BY_PROFILE, REPO_ROOT, Target, TargetError, load_target
from conformance.evidence import EVIDENCE, attach
from records.run_record import PhaseMetric, RunRecord, new_run_id, run_order_key, utc_now_iso, write_record

__all__ = [
    "PhaseMetrics",
    "Selection",
    "SelectionError",
    "behaviour_ids_of",
    "conformance_target",
    "phase_metrics",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_runtest_makereport",
    "pytest_runtest_protocol",
    "resolve_selection",
]

_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()
_METRICS = pytest.StashKey[list[PhaseMetric]]()
_ENV_RUN_ID = "KZK_RUN_ID"
_ENV_RUN_STARTED = "KZK_RUN_STARTED"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "Kafka ZooKeeper-mode controller conformance")
    group.addoption(
        "--target",
        default=os.environ.get("KZK_TARGET", "reference"),
        help="target name (reference, kafka) or path to a target TOML (default: reference)",
    )
    group.addoption("--profile", default=catalogue.DEFAULT_PROFILE, help="behaviour profile (default 2.5)")
    group.addoption("--areas", default="", help="comma list of areas to run (default: all)")
    group.addoption(
        "--ids",
        default="",
        help="comma list of behaviour IDs to run, e.g. EPOCH-1,REASSIGN-13 (default: all)",
    )
    group.addoption(
        "--results-dir",
        default=os.environ.get("KZK_RESULTS_DIR", ""),
        help="write one run record (JSON line) per test execution under this directory",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "behaviour(*ids): behaviour IDs (spec/behaviours.md) a check covers")
    config.addinivalue_line("markers", "allure_label: allure label (allure-pytest)")
    _config_selection(config)  # an unknown area, ID or profile stops the run before collection
    # Shared by xdist workers: they are spawned after configure and inherit the environment.
    os.environ.setdefault(_ENV_RUN_ID, new_run_id())
    os.environ.setdefault(_ENV_RUN_STARTED, datetime.now(UTC).isoformat())


def behaviour_ids_of(item: pytest.Item) -> list[str]:
    """IDs named by every ``behaviour`` marker of ``item``, in order, without duplicates."""
    ids: list[str] = []
    for mark in item.iter_markers("behaviour"):
        ids += [str(a) for a in mark.args if str(a) not in ids]
    return ids


class SelectionError(ValueError):
    """An unknown area, behaviour ID or profile was asked for; the message lists the valid ones."""


@dataclass(frozen=True)
class Selection:
    """What a run certifies: the asked areas and IDs (normalised) and the IDs they resolve to."""

    areas: tuple[str, ...]
    ids: tuple[str, ...]
    profile: str
    behaviour_ids: tuple[str, ...]

    @property
    def everything(self) -> bool:
        return not self.areas and not self.ids


def split_list(raw: str) -> list[str]:
    """``"a, b,,c"`` → ``["A", "B", "C"]``: comma list, upper-cased, blanks dropped, order kept."""
    out: list[str] = []
    for part in raw.split(","):
        name = part.strip().upper()
        if name and name not in out:
            out.append(name)
    return out


def _unknown(kind: str, asked: Iterable[str], valid: list[str]) -> str | None:
    bad = [a for a in asked if a not in valid]
    if not bad:
        return None
    hints = []
    for b in bad:
        close = difflib.get_close_matches(b, valid, n=3)
        hints.append(f"{b!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    return f"unknown {kind} {', '.join(hints)}; valid {kind}s: {', '.join(valid)}"


def valid_profiles() -> list[str]:
    """Profiles that both the catalogue and the target machinery know."""
    in_catalogue = {p for b in catalogue.CATALOGUE for p in b.profiles}
    return sorted(in_catalogue & set(IBP_BY_PROFILE))


def resolve_selection(areas: str, ids: str, profile: str) -> Selection:
    """The run's selection from the ``--areas`` / ``--ids`` / ``--profile`` strings.

    Areas and IDs are case-insensitive comma lists; the selection is the union of the areas' IDs
    and the given IDs, all IDs of ``profile`` when both are empty. Raises :class:`SelectionError`
    naming every unknown area, ID or profile together with the valid ones.
    """
    if profile not in valid_profiles():
        raise SelectionError(f"unknown profile {profile!r}; valid profiles: {', '.join(valid_profiles())}")
    asked_areas, asked_ids = split_list(areas), split_list(ids)
    problems = [
        p
        for p in (
            _unknown("area", asked_areas, list(catalogue.AREAS)),
            _unknown("behaviour ID", asked_ids, [b.id for b in catalogue.CATALOGUE]),
        )
        if p
    ]
    if problems:
        raise SelectionError("; ".join(problems))
    other = [i for i in asked_ids if profile not in catalogue.by_id(i).profiles]
    if other:
        raise SelectionError(f"behaviour IDs {', '.join(other)} do not apply to profile {profile}")
    wanted = set(catalogue.ids_in_areas(asked_areas, profile) if asked_areas else []) | set(asked_ids)
    if not asked_areas and not asked_ids:
        wanted = set(catalogue.ids_in_areas(None, profile))
    in_order = tuple(b.id for b in catalogue.CATALOGUE if b.id in wanted)
    return Selection(tuple(asked_areas), tuple(asked_ids), profile, in_order)


def _config_selection(config: pytest.Config) -> Selection:
    try:
        return resolve_selection(
            str(config.getoption("--areas")),
            str(config.getoption("--ids")),
            str(config.getoption("--profile")),
        )
    except SelectionError as exc:
        raise pytest.UsageError(str(exc)) from exc


def _selected(ids: list[str], wanted: set[str]) -> bool:
    known = [i for i in ids if i in {b.id for b in catalogue.CATALOGUE}]
    if not known:
        return True
    return any(i in wanted for i in known)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = set(_config_selection(config).behaviour_ids)
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        ids = behaviour_ids_of(item)
        if ids and not _selected(ids, wanted):
            dropped.append(item)
            continue
        for bid in ids:
            area = bid.rsplit("-", 1)[0]
            item.add_marker(pytest.mark.allure_label(area, label_type="epic"))
            item.add_marker(pytest.mark.allure_label(bid, label_type="feature"))
        keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    if report.when == "call" and report.failed:
        _add_evidence(item, report)
    return report


def _add_evidence(item: pytest.Item, report: pytest.TestReport) -> None:
    """Failing check: what the clusters looked like, as report sections and allure attachments."""
    for provider in item.stash.get(EVIDENCE, []):
        try:
            sections = provider()
        except Exception as exc:
            sections = {"evidence error": repr(exc)}
        for name, text in sections.items():
            report.sections.append((f"evidence: {name}", text))
            attach(name, text)


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


def _outcome(reports: dict[str, pytest.TestReport]) -> tuple[str, str | None]:
    for when in ("setup", "call", "teardown"):
        rep = reports.get(when)
        if rep is None:
            continue
        if rep.failed:
            kind = "failed" if when == "call" else "error"
            return kind, (rep.longreprtext.strip().splitlines() or [""])[-1][:500]
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    started, t0 = utc_now_iso(), time.monotonic()
    result = yield
    results_dir = str(item.config.getoption("--results-dir"))
    if results_dir:
        _write(item, Path(results_dir), started, time.monotonic() - t0)
    return result


def _metrics_of(item: pytest.Item) -> list[PhaseMetric]:
    metrics: list[PhaseMetric] = item.stash.get(_METRICS, [])
    return metrics


def _write(item: pytest.Item, results_dir: Path, started: str, duration_s: float) -> None:
    outcome, reason = _outcome(item.stash.get(_REPORTS, {}))
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
