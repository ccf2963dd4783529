"""Docker inspection helpers of the docker launcher's tests (ring: test tooling)."""

from __future__ import annotations

import subprocess


def kit_containers(label: str = "kzk.kit=1") -> list[str]:
    """Names of the containers (running or not) carrying ``label``."""
    out = subprocess.run(
        ["docker", "ps", "--all", "--filter", f"label={label}", "--format", "{{.Names}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split()


def inspect(name: str, template: str) -> str:
    proc = subprocess.run(
        ["docker", "inspect", "--format", template, name], check=False, capture_output=True, text=True
    )
    return proc.stdout.strip() if proc.returncode == 0 else f"<no such container: {proc.stderr.strip()}>"
