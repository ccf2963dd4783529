"""``python -m reports allure RESULTS_DIR --out DIR``: Allure 3's HTML report, offline (drivers ring).

Runs the npm package ``allure`` (Allure 3: pure Node, no Java, no network) that
``scripts/setup_reports.sh`` installs into ``.tools/node_modules``; ``$KZK_ALLURE`` may name
another ``cli.js``. The report is one self-contained ``index.html`` (the awesome plugin's
``singleFile`` mode), so it opens from the file system.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from reports.errors import EnvironmentProblem, InputError

__all__ = ["allure_cli", "generate", "main"]

_ROOT = Path(__file__).resolve().parent.parent
_TIMEOUT_S = 600


def allure_cli() -> Path:
    """The Allure 3 ``cli.js``; a missing one is an error that names the set-up step."""
    cli = Path(os.environ.get("KZK_ALLURE") or _ROOT / ".tools" / "node_modules" / "allure" / "cli.js")
    if not cli.is_file():
        raise EnvironmentProblem(
            f"Allure 3 is not installed ({cli} missing): run bash scripts/setup_reports.sh"
        )
    if shutil.which("node") is None:
        raise EnvironmentProblem("node is not on PATH: run bash scripts/setup_reports.sh (installs nodejs)")
    return cli


def generate(results: Path, out: Path, name: str = "Conformance") -> Path:
    """Generate the report of ``results`` into ``out``; returns ``out/index.html``."""
    if not results.is_dir():
        raise InputError(f"allure results {results}: no such directory")
    if not any(results.glob("*-result.json")):
        raise InputError(f"allure results {results}: no *-result.json files in it")
    cli = allure_cli()
    out = out.resolve()
    with tempfile.TemporaryDirectory(prefix="kzk-allure-") as tmp:
        config = Path(tmp, "allurerc.json")
        config.write_text(
            json.dumps(
                {
                    "name": name,
                    "output": str(out),
                    "plugins": {"awesome": {"options": {"singleFile": True, "reportName": name}}},
                }
            ),
            encoding="utf-8",
        )
        cmd = ["node", str(cli), "generate", str(results.resolve()), "--config", str(config)]
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False, cwd=tmp
            )
        except subprocess.TimeoutExpired as exc:
            raise EnvironmentProblem(f"allure generate did not finish within {_TIMEOUT_S} s") from exc
    index = out / "index.html"
    if done.returncode != 0 or not index.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise EnvironmentProblem(f"allure generate failed (exit {done.returncode}): {' | '.join(tail)}")
    return index


def main(args: argparse.Namespace) -> int:
    index = generate(args.results, args.out, args.name)
    print(f"allure report: {index}")
    return 0
