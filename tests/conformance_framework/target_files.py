"""Target files for the gate's and the differential mode's tests (ring: test support)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["write_target"]


def write_target(tmp_path: Path, command: str = "", extra: str = "") -> Path:
    """A target file running the reference node (or ``command``, a TOML array)."""
    path = tmp_path / "target.toml"
    path.write_text(
        f"""name = "test-target"
command = {command or '["{python}", "-m", "reference_controller.node", "{config}"]'}
cwd = "{{repo_root}}"
{extra}
[env]
LOG_DIR = "{{log_dir}}"

[logs]
state_change = "{{log_dir}}/state-change.log"
server = "{{log_dir}}/server.log"
""",
        encoding="utf-8",
    )
    return path
