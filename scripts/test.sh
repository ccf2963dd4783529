#!/usr/bin/env bash
# README command B: the project's own tests — lint, types, the conformance suite against the
# reference target, then unit and integration tests (real ZooKeeper, real reference nodes).
# KZK_SKIP_CONFORMANCE=1 skips the conformance run (e.g. when iterating on unit tests).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
py=.venv/bin/python
echo "== lint (ruff) =="
"$py" -m ruff check .
"$py" -m ruff format --check .
echo "== types (mypy --strict) =="
"$py" -m mypy .
set +e
if [ "${KZK_SKIP_CONFORMANCE:-0}" != 1 ]; then
  echo "== conformance suite against the reference target (README command A's job) =="
  "$py" -m conformance -n 2 --results-dir "${KZK_RESULTS_DIR:-results}/conformance"
  conformance_rc=$?
else
  conformance_rc=0
fi
echo "== tests (pytest, xdist) =="
"$py" -m pytest tests -n 2 -p no:cacheprovider "$@"
rc=$?
set -e
# Exit code 5 = no tests collected (a narrowed selection); not a failure of the kit.
if [ "$rc" = 5 ]; then echo "pytest: no tests selected"; rc=0; fi
if [ "$conformance_rc" != 0 ]; then
  echo "conformance suite failed (exit $conformance_rc): see the matrix above" >&2
  exit "$conformance_rc"
fi
exit "$rc"
