#!/usr/bin/env bash
# README command A: the main job — the conformance suite against the reference controller on a
# real ZooKeeper (embedded default). Extra arguments go to `python -m conformance`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
exec .venv/bin/python -m conformance "$@"
