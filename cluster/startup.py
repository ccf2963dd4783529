"""Why a target's node did not start or died: target errors, not behaviour failures (conformance ring).

A node that cannot be started (command not found, working directory missing), exits before it
registers, never registers within the target's ``start_timeout_s``, or dies while a check runs
is a fault of the target's set-up or a crash of the implementation, never evidence about the
controller's behaviour. :class:`TargetNodeError` says which node, what happened, its exit code
and the last lines of its own output (stdout and stderr, ``node-<id>/stdout.log``), so the gate
can report a target error with the cause instead of a wall of timeouts.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

__all__ = ["TARGET_ERROR_PREFIX", "TargetNodeError", "command_problem", "output_tail"]

#: Run records of a check that ended in a target error carry outcome ``error`` and a reason
#: starting with this (the record schema has no separate outcome for it).
TARGET_ERROR_PREFIX = "target error: "


def output_tail(path: Path, lines: int = 15) -> str:
    """The last ``lines`` lines of a node's output file ('' when it has none)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


class TargetNodeError(RuntimeError):
    """A node of the target failed to start or died (see the module docstring)."""

    def __init__(
        self,
        node_id: int,
        problem: str,
        *,
        role: str = "broker",
        exit_code: int | None = None,
        output: str = "",
        output_path: Path | None = None,
    ) -> None:
        self.node_id, self.role, self.problem = node_id, role, problem
        self.exit_code, self.output, self.output_path = exit_code, output, output_path
        super().__init__(self.summary())

    @property
    def who(self) -> str:
        return f"{'controller process' if self.role == 'controller' else 'node'} {self.node_id}"

    def summary(self) -> str:
        """One line: who, what, and the last line of its output."""
        last = next((ln.strip() for ln in reversed(self.output.splitlines()) if ln.strip()), "")
        said = f"; its last output line: {last[:200]}" if last else "; it printed nothing"
        return f"{self.who} {self.problem}{said}"

    def details(self) -> str:
        """Several lines: the summary, where the full output is, and its tail."""
        where = f" (full output: {self.output_path})" if self.output_path else ""
        tail = self.output or "(no output)"
        return f"{self.summary()}\nlast lines of its output{where}:\n{tail}"


def command_problem(argv: Sequence[str], cwd: Path, env_path: str | None = None) -> str | None:
    """Why ``argv`` cannot be started in ``cwd`` (missing program, not executable, missing
    directory), or ``None``. Checked before spawning so the message names the exact cause."""
    if not argv:
        return "the command is empty"
    if not cwd.is_dir():
        return f"its working directory {cwd} does not exist"
    program = argv[0]
    if "/" in program:
        path = Path(program) if Path(program).is_absolute() else cwd / program
        if not path.exists():
            return f"command not found: {program} does not exist"
        if path.is_dir():
            return f"command not found: {program} is a directory"
        if not os.access(path, os.X_OK):
            return f"command {program} is not executable (chmod +x it)"
        return None
    if shutil.which(program, path=env_path if env_path is not None else os.environ.get("PATH")) is None:
        return f"command not found: {program!r} is not on PATH"
    return None
