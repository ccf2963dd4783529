"""Real chaos runs of the ``admin-api`` scenario against the reference: every admin-API op (the
dynamic broker configs included) is issued under faults, answered by the cluster, recorded with
Kafka's answer, and judged valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.history import History
from chaos.scenarios import API_OPS
from tests.chaos.runner.support import chaos

pytestmark = pytest.mark.chaos

SEED = 4408  # seeds 4408 and 4409 draw every admin-API op


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    out = tmp_path_factory.mktemp("admin-api")
    done = chaos(
        "run", "--runs", "2", "--seed", str(SEED), "--parallel", "2", "--scenario", "admin-api",
        "--out", str(out), "--keep-all", "--no-progress",
    )  # fmt: skip
    return out, done.returncode, done.stdout + done.stderr


def test_every_admin_api_run_is_judged_valid(campaign: tuple[Path, int, str]) -> None:
    out, code, log = campaign
    verdicts = [json.loads(p.read_text()) for p in sorted(out.glob("*/runs/*/verdict.json"))]
    assert len(verdicts) == 2, log
    assert [v["verdict"] for v in verdicts] == ["valid", "valid"], log
    assert code == 0, log
    for v in verdicts:
        judged = {c["checker"]: c["validity"] for c in v["checkers"]}
        for name in (
            "reassign_znode_created_by_admin",
            "listings_agree_with_topic_znode",
            "cancellations_reverted",
        ):
            assert judged[name] == "valid", (name, v)


def test_every_admin_api_op_is_issued_and_answered(campaign: tuple[Path, int, str]) -> None:
    out, _, log = campaign
    completions = [
        op
        for path in sorted(out.glob("*/runs/*/history.jsonl"))
        for op in History.load(path)
        if op.f in API_OPS and not op.is_invoke
    ]
    assert {op.f for op in completions} == set(API_OPS), log
    # the cluster answered: an applied reassignment, listings, a config change
    assert any(op.f == "reassign_api" and op.type == "ok" for op in completions), log
    assert any(op.f == "list_reassignments" and op.type == "ok" for op in completions), log
    assert any(op.f == "alter_topic_config" and op.type == "ok" for op in completions), log
    assert any(op.f == "alter_broker_config" and op.type == "ok" for op in completions), log
    for op in completions:
        if op.type == "ok" and op.f not in ("alter_topic_config", "alter_broker_config"):  # Kafka's answer
            assert ("reassigning" if op.f == "list_reassignments" else "results") in op.value, op
            assert op.value["started_ms"] <= op.value["ended_ms"], op
        if "results" in op.value:
            codes = [r["error_code"] for r in op.value["results"]]
            assert (op.type == "ok") == all(c == 0 for c in codes), op
            assert op.type != "fail" or 0 not in codes, op
