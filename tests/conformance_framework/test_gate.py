"""The gate: ``python -m conformance`` refuses bad selections and never certifies nothing.

Every test runs the real CLI in a subprocess. The argument-validation tests start no server (they
must be refused before pytest or ZooKeeper is started); the others run one cheap check (EPOCH-2,
about 2 s) on a real ZooKeeper and read the certificate the run wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import catalogue
from cluster.targets import REPO_ROOT
from tests.conformance_framework.target_files import write_target

CHEAP_ID = "EPOCH-2"
TIMEOUT_S = 300.0


def run_cli(
    *args: str, results: Path, env: dict[str, str] | None = None, module: str = "conformance"
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "KZK_LAUNCHER"}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", module, "--results-dir", str(results), *args],
        cwd=REPO_ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def certificate(results: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((results / "certificate.json").read_text(encoding="utf-8"))
    return data


def no_spec_env(tmp_path: Path) -> dict[str, str]:
    """Point the catalogue meta-check at an empty dir: it skips, so only the gate is under test."""
    empty = tmp_path / "no-spec"
    empty.mkdir()
    return {"KZK_SPEC_DIR": str(empty)}


# --- refused before anything runs ------------------------------------------------------------------


@pytest.mark.unit
def test_unknown_area_is_exit_2_listing_every_valid_area(tmp_path: Path) -> None:
    out = run_cli("--areas", "EPOCH,NO_SUCH_AREA", results=tmp_path / "r")
    assert out.returncode == 2, out
    assert "unknown area 'NO_SUCH_AREA'" in out.stderr
    assert all(area in out.stderr for area in catalogue.AREAS)
    assert not (tmp_path / "r" / "certificate.json").exists()
    assert "running:" not in out.stdout


@pytest.mark.unit
def test_unknown_id_is_exit_2_with_a_suggestion_and_the_valid_ids(tmp_path: Path) -> None:
    out = run_cli("--ids", "EPOCH-1,REASSIGN-99,epoch2", results=tmp_path / "r")
    assert out.returncode == 2, out
    assert "'REASSIGN-99'" in out.stderr
    assert "'EPOCH2' (did you mean EPOCH-2" in out.stderr
    assert all(b.id in out.stderr for b in catalogue.CATALOGUE)
    assert not (tmp_path / "r" / "certificate.json").exists()


@pytest.mark.unit
def test_unknown_profile_is_exit_2_listing_valid_profiles(tmp_path: Path) -> None:
    out = run_cli("--profile", "9.9", "--ids", CHEAP_ID, results=tmp_path / "r")
    assert out.returncode == 2, out
    assert "unknown profile '9.9'; valid profiles: 2.5" in out.stderr
    assert not (tmp_path / "r" / "certificate.json").exists()


@pytest.mark.unit
def test_unknown_target_is_exit_2_listing_builtin_targets(tmp_path: Path) -> None:
    out = run_cli("--target", "refrence", "--ids", CHEAP_ID, results=tmp_path / "r")
    assert out.returncode == 2, out
    assert "'refrence'" in out.stderr
    assert "'kafka', 'reference'" in out.stderr
    assert not (tmp_path / "r" / "certificate.json").exists()


@pytest.mark.unit
@pytest.mark.parametrize("value", ["-3", "two", "1.5"])
def test_bad_worker_count_is_exit_2_not_a_silent_serial_run(tmp_path: Path, value: str) -> None:
    out = run_cli(f"-n{value}", "--ids", CHEAP_ID, results=tmp_path / "r")
    assert out.returncode == 2, out
    assert f"invalid worker count {value!r}" in out.stderr
    assert not (tmp_path / "r" / "certificate.json").exists()


@pytest.mark.unit
@pytest.mark.parametrize(
    ("value", "says"), [("0", "1 to 16, got 0"), ("17", "1 to 16, got 17"), ("two", "'two' is not a number")]
)
def test_bad_differential_worker_count_is_exit_2(tmp_path: Path, value: str, says: str) -> None:
    out = run_cli("--diff-workers", value, "--ids", CHEAP_ID, results=tmp_path / "r")
    assert out.returncode == 2, out
    assert says in out.stderr, out.stderr
    assert not (tmp_path / "r" / "certificate.json").exists()


@pytest.mark.unit
def test_unknown_launcher_is_exit_2_listing_launchers(tmp_path: Path) -> None:
    out = run_cli("--launcher", "k8s", "--ids", CHEAP_ID, results=tmp_path / "r")
    assert out.returncode == 2, out
    assert "unknown launcher 'k8s'; valid launchers: process, docker" in out.stderr


@pytest.mark.unit
def test_pytest_directly_refuses_an_unknown_area(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "conformance/checks", "--areas=NOPE", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert out.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert "unknown area 'NOPE'; valid areas: EPOCH" in out.stderr


# --- runs that execute (or fail to execute) the selection ------------------------------------------


@pytest.mark.integration
def test_one_id_that_passes_is_conformant_and_the_selection_is_recorded(tmp_path: Path) -> None:
    results = tmp_path / "r"
    out = run_cli("--ids", "epoch-2", "-n", "0", results=results, env=no_spec_env(tmp_path))
    cert = certificate(results)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert cert["conformant"] is True
    assert cert["not_conformant_because"] == []
    assert list(cert["verdicts"]) == [CHEAP_ID]
    assert cert["verdicts"][CHEAP_ID]["verdict"] == "pass"
    assert cert["selection"] == {
        "target": "reference",
        "target_source": str(REPO_ROOT / "cluster" / "target_defs" / "reference.toml"),
        "topology": "combined",
        "profile": "2.5",
        "areas": [],
        "ids": [CHEAP_ID],
        "launcher": "process",
        "launcher_given": False,
        "pytest_args": [],
        "behaviour_ids": [CHEAP_ID],
        "not_applicable": {},
    }
    assert "checks were all skipped" in cert["conformant_rule"]
    assert cert["preflight"]["ok"] is True
    assert cert["target_error"] is None
    assert "[  1/1 IDs, " in out.stdout  # progress by behaviour ID
    assert "conformant: yes" in out.stdout


@pytest.mark.integration
def test_selected_id_without_an_executed_check_is_never_conformant(tmp_path: Path) -> None:
    results = tmp_path / "r"
    out = run_cli("--ids", CHEAP_ID, "-n", "0", "--", "-k", "no_test_has_this_name", results=results)
    cert = certificate(results)
    assert out.returncode == 1, out
    assert cert["conformant"] is False
    assert cert["verdicts"][CHEAP_ID]["verdict"] == "no check"
    assert f"no check ran: {CHEAP_ID}" in cert["not_conformant_because"]
    assert cert["selection"]["pytest_args"] == ["-k", "no_test_has_this_name"]


@pytest.mark.integration
def test_skipped_only_ids_are_not_conformant(tmp_path: Path) -> None:
    # A target that cannot run here, with the preflight skipped: every check is skipped with the reason.
    target = write_target(tmp_path, extra='requires_env = ["KZK_TEST_SURELY_UNSET"]')
    results = tmp_path / "r"
    out = run_cli("--target", str(target), "--ids", CHEAP_ID, "-n", "0", "--skip-preflight", results=results)
    cert = certificate(results)
    assert out.returncode == 1, out
    assert cert["conformant"] is False
    assert cert["verdicts"][CHEAP_ID]["verdict"] == "skipped"
    assert any("KZK_TEST_SURELY_UNSET" in r for r in cert["verdicts"][CHEAP_ID]["reasons"])
    assert f"no executed check (every check skipped): {CHEAP_ID}" in cert["not_conformant_because"]
    assert cert["preflight"] is None


@pytest.mark.integration
def test_areas_and_ids_select_their_union(tmp_path: Path) -> None:
    results = tmp_path / "r"
    # -k keeps the run cheap: only EPOCH-2's check executes; every EPOCH ID is still in the selection.
    out = run_cli("--areas", "epoch", "--ids", "FENCE-1", "-n", "0", "--", "-k", "one_multi", results=results)
    cert = certificate(results)
    assert out.returncode == 1, out
    expected = [*catalogue.ids_in_areas(["EPOCH"]), "FENCE-1"]
    assert list(cert["verdicts"]) == expected
    assert cert["selection"]["areas"] == ["EPOCH"]
    assert cert["selection"]["ids"] == ["FENCE-1"]
    assert cert["verdicts"][CHEAP_ID]["verdict"] == "pass"
    assert cert["verdicts"]["FENCE-1"]["verdict"] == "no check"
    assert cert["conformant"] is False


# --- harness.cli help ----------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("reap", ["pid file", "owner", "never touched", "kzk-run-*"]),
        ("zk-smoke", ["ZooKeeper", "/kzk-smoke", "Exit 0"]),
    ],
)
def test_every_fixtures_cli_subcommand_help_says_what_it_does(command: str, says: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "harness", command, "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out
    text = " ".join(out.stdout.split())
    for phrase in says:
        assert phrase in text, f"{command} --help lacks {phrase!r}:\n{out.stdout}"


@pytest.mark.unit
def test_fixtures_cli_top_level_help_lists_what_each_subcommand_does() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "harness", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out
    text = " ".join(out.stdout.split())
    assert "zk-smoke start a real ZooKeeper" in text
    assert "reap kill the processes and remove the run dirs" in text


# --- bad input: exit 2 with the reason, never a traceback, nothing run ------------------------------


def refused(out: subprocess.CompletedProcess[str], says: str, results: Path) -> None:
    assert out.returncode == 2, out
    assert says in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert "preflight" not in out.stdout
    assert not (results / "certificate.json").exists()


@pytest.mark.unit
@pytest.mark.parametrize(("option", "what"), [("--areas", "areas"), ("--ids", "behaviour IDs")])
@pytest.mark.parametrize("value", ["", " ", ","])
def test_an_option_given_empty_is_refused_not_read_as_everything(
    tmp_path: Path, option: str, what: str, value: str
) -> None:
    out = run_cli(option, value, results=tmp_path / "r")
    refused(out, f"{option} is empty ({value!r}): give a comma list of {what}", tmp_path / "r")


@pytest.mark.unit
def test_a_results_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "results"
    file.write_text("not a directory\n", encoding="utf-8")
    out = run_cli("--ids", CHEAP_ID, results=file)
    refused(out, f"--results-dir {file}: is a file, not a directory", tmp_path)
    assert file.read_text(encoding="utf-8") == "not a directory\n"


@pytest.mark.unit
def test_a_results_dir_that_cannot_be_written_is_refused(tmp_path: Path) -> None:
    unwritable = Path("/proc/kzk-results")  # procfs: no one may create it, root included
    out = run_cli("--ids", CHEAP_ID, results=unwritable)
    refused(out, f"--results-dir {unwritable}: cannot write there", tmp_path)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'name = "x"\ncommand = ["run", "{config}"\n', "is not valid TOML"),
        (b'name = "x"\ncommand = ["r", "{config}"]\ndeadline_scale = "x"\n', "deadline_scale must be"),
        (b'name = "x"\ncommand = ["run", "{config}"]\nstart_timeout = 3\n', "unknown key 'start_timeout'"),
        (b'name = "x"\ncommand = ["run", "{conf}"]\n', "unknown template field {conf}"),
        (b'name = "x"\ncommand = ["run"]\n', "command must pass the generated server.properties as {config}"),
        (
            b'name = "x"\ncommand = ["{python}", "{config}"]\n[controller]\ncount = 2\n',
            "unknown key 'count' in [controller]",
        ),
        (b"\xff\xfe binary", "is not UTF-8 text"),
    ],
)
def test_a_malformed_target_file_is_refused_with_the_key(tmp_path: Path, content: bytes, says: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_bytes(content)
    out = run_cli("--target", str(path), "--ids", CHEAP_ID, results=tmp_path / "r")
    refused(out, says, tmp_path / "r")
    assert str(path) in out.stderr


@pytest.mark.unit
def test_a_missing_target_file_says_the_file_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    out = run_cli("--target", str(missing), "--ids", CHEAP_ID, results=tmp_path / "r")
    refused(out, f"target file {missing}: the file does not exist", tmp_path / "r")
    assert "or give a .toml path" not in out.stderr


@pytest.mark.unit
def test_an_unreadable_target_file_is_refused(tmp_path: Path) -> None:
    out = run_cli("--target", str(tmp_path), "--ids", CHEAP_ID, results=tmp_path / "r")
    refused(out, f"target file {tmp_path}: is a directory, not a TOML file", tmp_path / "r")


# --- target errors ----------------------------------------------------------------------------------


@pytest.mark.integration
def test_a_failing_preflight_stops_the_run_with_a_target_error(tmp_path: Path) -> None:
    target = write_target(tmp_path, command='["/opt/nowhere/kafka-server-start.sh", "{config}"]')
    results = tmp_path / "r"
    out = run_cli("--target", str(target), "--areas", "EPOCH", results=results)
    assert out.returncode == 1, out
    cert = certificate(results)
    assert {v["verdict"] for v in cert["verdicts"].values()} == {"target error"}
    assert cert["target_error"]["where"] == "preflight"
    says = "command not found: /opt/nowhere/kafka-server-start.sh does not exist"
    assert says in cert["target_error"]["problem"]
    assert cert["pytest_exit_code"] is None
    assert not (results / "pytest.log").exists()
    assert "conformant: NO (target error)" in out.stdout
    assert "FAIL" not in out.stdout.split("target error:")[-1]  # no per-check failures


@pytest.mark.integration
def test_a_node_that_dies_during_a_check_is_a_target_error_not_a_failure(tmp_path: Path) -> None:
    broken = Path(__file__).resolve().parent / "broken_nodes.py"
    command = f'["{{python}}", "{broken}", "die-on-leader-and-isr", "2", "{{config}}"]'
    target = write_target(tmp_path, command=command)
    results = tmp_path / "r"
    # LOGDIR-1's check creates a topic with a replica on node 2, which dies at its LeaderAndIsr
    out = run_cli("--target", str(target), "--ids", "LOGDIR-1", "-n", "0", results=results)
    assert out.returncode == 1, out
    cert = certificate(results)
    assert cert["verdicts"]["LOGDIR-1"]["verdict"] == "target error", cert["verdicts"]["LOGDIR-1"]
    assert cert["target_error"]["where"] == "checks"
    (problem,) = cert["target_error"]["problems"]
    assert problem.startswith("target error: node 2 exited with code 7 while the check ran")
    assert "dying on purpose at its first LeaderAndIsr" in problem
    assert any(line.startswith("not conformant: target error") for line in out.stdout.splitlines())
    evidence = list((results / "evidence").glob("*.txt"))
    assert len(evidence) == 1
    text = evidence[0].read_text(encoding="utf-8")
    assert text.startswith("TARGET ERROR: conformance/checks/test_logdir.py::")
    assert "broken node 2: dying on purpose at its first LeaderAndIsr" in text  # the node's own stderr


# --- clusters started ahead (conformance.ahead) ------------------------------------------------------


def _records(results: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(results.glob("runs-*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


@pytest.mark.integration
def test_a_cluster_started_ahead_that_failed_is_the_adopting_checks_target_error(tmp_path: Path) -> None:
    """Nodes that die at start only in a chroot of a cluster started ahead: the check that
    adopted such a cluster is a target error with the node's words, the check before it (whose
    own cluster started) passed, and with ``--no-start-ahead`` every check passes."""
    broken = Path(__file__).resolve().parent / "broken_nodes.py"
    target = write_target(
        tmp_path, command=f'["{{python}}", "{broken}", "die-in-chroot", "/t/ahead-", "{{config}}"]'
    )
    # checks of which at least three take the default `cluster` fixture, on one worker (-n 0)
    ids = "EPOCH-2,EPOCH-5,TOPIC-4"
    results = tmp_path / "ahead"
    out = run_cli("--target", str(target), "--ids", ids, "-n", "0", results=results)
    assert out.returncode == 1, out
    checks = [r for r in _records(results) if r["behaviour_ids"]]
    assert len(checks) >= 3, checks
    passed = [r for r in checks if r["outcome"] == "passed"]
    broken_ones = [r for r in checks if r["outcome"] != "passed"]
    assert passed, checks
    assert broken_ones, checks
    for r in broken_ones:
        assert r["outcome"] == "error", r
        assert r["reason"].startswith("target error: node "), r["reason"]
        assert "before it registered" in r["reason"], r["reason"]
    cert = certificate(results)
    assert cert["target_error"]["where"] == "checks"
    evidence = list((results / "evidence").glob("*.txt"))
    assert len(evidence) == len(broken_ones)
    text = evidence[0].read_text(encoding="utf-8")
    assert text.startswith("TARGET ERROR: conformance/checks/")
    assert "broken node: exiting on purpose at start in chroot /t/ahead-" in text  # the node's own stderr

    results = tmp_path / "own"
    out = run_cli("--target", str(target), "--ids", ids, "-n", "0", "--", "--no-start-ahead", results=results)
    assert out.returncode == 0, out
    checks = [r for r in _records(results) if r["behaviour_ids"]]
    assert len(checks) >= 3, checks
    assert {r["outcome"] for r in checks} == {"passed"}, checks
