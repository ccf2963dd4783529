"""The preflight (``python -m conformance doctor``) on broken targets: the exact cause, exit 1.

Every test runs the real CLI in a subprocess against a target file written here; the nodes are
real processes (the reference node, or the deliberately broken ones of ``broken_nodes.py``) on a
real ZooKeeper the preflight starts itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.targets import REPO_ROOT

pytestmark = pytest.mark.integration

BROKEN = Path(__file__).resolve().parent / "broken_nodes.py"
TIMEOUT_S = 300.0

REFERENCE_NODE = '["{python}", "-m", "reference_controller.node", "{config}"]'


def target_file(
    tmp_path: Path, command: str, *, logs: str = "", extra: str = "", start_timeout_s: int = 60
) -> Path:
    """A target file whose nodes run ``command`` (a TOML array) in the repo root."""
    path = tmp_path / "target.toml"
    path.write_text(
        f"""name = "broken"
command = {command}
cwd = "{{repo_root}}"
start_timeout_s = {start_timeout_s}
{extra}
[env]
LOG_DIR = "{{log_dir}}"
PYTHONUNBUFFERED = "1"

[logs]
{logs or 'state_change = "{log_dir}/state-change.log"'}
server = "{{log_dir}}/server.log"
""",
        encoding="utf-8",
    )
    return path


def doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", "doctor", *args],
        cwd=REPO_ROOT,
        env={k: v for k, v in os.environ.items() if k != "KZK_LAUNCHER"},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def failed_step(out: subprocess.CompletedProcess[str]) -> str:
    """The FAIL line of the preflight's report (there is exactly one)."""
    fails = [ln.strip() for ln in out.stdout.splitlines() if ln.strip().startswith("FAIL")]
    assert len(fails) == 1, out.stdout + out.stderr
    return fails[0]


def test_the_reference_target_is_healthy() -> None:
    out = doctor("--target", "reference")
    assert out.returncode == 0, out.stdout + out.stderr
    steps = ["available", "command", "start", "listeners", "controller", "state-change log"]
    steps += ["requests", "stop"]
    for step in steps:
        assert any(ln.strip().startswith(f"ok    {step}") for ln in out.stdout.splitlines()), out.stdout
    assert "healthy" in out.stdout


def test_a_command_that_does_not_exist(tmp_path: Path) -> None:
    command = '["/opt/nowhere/bin/kafka-server-start.sh", "{config}"]'
    out = doctor("--target", str(target_file(tmp_path, command)))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "command not found: /opt/nowhere/bin/kafka-server-start.sh does not exist" in failed_step(out)
    assert "target error: command" in out.stdout


def test_a_program_that_is_not_on_path(tmp_path: Path) -> None:
    out = doctor("--target", str(target_file(tmp_path, '["kzk-no-such-broker", "{config}"]')))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "command not found: 'kzk-no-such-broker' is not on PATH" in failed_step(out)


def test_a_node_that_exits_at_once_shows_its_exit_code_and_last_output(tmp_path: Path) -> None:
    script = "import sys; print('booting'); print('FATAL: no libbroker.so', file=sys.stderr); sys.exit(3)"
    out = doctor("--target", str(target_file(tmp_path, f'["{{python}}", "-c", "{script}", "{{config}}"]')))
    assert out.returncode == 1, out.stdout + out.stderr
    line = failed_step(out)
    assert "node 1 exited with code 3 before it registered /brokers/ids/<id>" in line
    assert "| FATAL: no libbroker.so" in out.stdout  # the tail of its output, stderr included
    assert "| booting" in out.stdout


def test_a_node_that_never_registers(tmp_path: Path) -> None:
    script = "import time; print('waiting for a licence server', flush=True); time.sleep(600)"
    command = f'["{{python}}", "-c", "{script}", "{{config}}"]'
    out = doctor("--target", str(target_file(tmp_path, command, start_timeout_s=4)))
    assert out.returncode == 1, out.stdout + out.stderr
    line = failed_step(out)
    assert "node 1 is running but never registered /brokers/ids/<id> within 4 s" in line
    assert "| waiting for a licence server" in out.stdout


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("wrong-port", "registered port 1 but nothing accepts connections there"),
        ("port-zero", "registered port 0: a listener on port 0 must register the port it bound"),
    ],
)
def test_a_node_that_does_not_register_its_bound_ports(tmp_path: Path, mode: str, says: str) -> None:
    command = f'["{{python}}", "{BROKEN}", "{mode}", "{{config}}"]'
    out = doctor("--target", str(target_file(tmp_path, command)))
    assert out.returncode == 1, out.stdout + out.stderr
    line = failed_step(out)
    assert line.split()[1] == "listeners", line
    assert says in line


def test_no_state_change_log_where_the_target_says(tmp_path: Path) -> None:
    logs = 'state_change = "{log_dir}/elsewhere/state-change.log"'
    out = doctor("--target", str(target_file(tmp_path, REFERENCE_NODE, logs=logs)))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "no state-change log at " in failed_step(out)
    assert "/logs/elsewhere/state-change.log (the target's [logs] state_change)" in failed_step(out)


def test_a_state_change_log_in_a_layout_it_cannot_parse(tmp_path: Path) -> None:
    logs = 'state_change = "{log_dir}/controller-requests.jsonl"'  # JSON lines, not Kafka's layout
    out = doctor("--target", str(target_file(tmp_path, REFERENCE_NODE, logs=logs)))
    assert out.returncode == 1, out.stdout + out.stderr
    line = failed_step(out)
    assert "cannot parse" in line
    assert "in Kafka's layout '[yyyy-MM-dd HH:mm:ss,SSS] LEVEL message (logger)'" in line


def test_a_state_change_log_without_trace_lines(tmp_path: Path) -> None:
    logs = 'state_change = "{log_dir}/server.log"'  # Kafka's layout, INFO and up only
    out = doctor("--target", str(target_file(tmp_path, REFERENCE_NODE, logs=logs)))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "has no TRACE line after a topic was created" in failed_step(out)


def test_a_target_that_cannot_run_here_names_what_is_missing(tmp_path: Path) -> None:
    extra = 'requires_env = ["KZK_TEST_SURELY_UNSET"]'
    out = doctor("--target", str(target_file(tmp_path, REFERENCE_NODE, extra=extra)))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "needs $KZK_TEST_SURELY_UNSET, which is not set" in failed_step(out)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--target", "/nowhere/target.toml"], "target file /nowhere/target.toml: the file does not exist"),
        (["--target", "refrence"], "no target 'refrence' (did you mean 'reference'?): the built-in"),
        (["--launcher", "k8s"], "unknown launcher 'k8s'"),
    ],
)
def test_bad_input_is_exit_2(args: list[str], says: str) -> None:
    out = doctor(*args)
    assert out.returncode == 2, out
    assert says in out.stderr
    assert "Traceback" not in out.stderr
