#!/usr/bin/env bash
# Installs everything the kit needs on a fresh Debian bookworm machine (idempotent):
#   Debian: a Java runtime and ZooKeeper 3.8 (skipped when ZOOKEEPER_HOME points at an install),
#   Python: a virtualenv at .venv with the project and its dev tools.
# Prints what it did. Source it or run it; scripts/main.sh and scripts/test.sh call it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
if [ -n "${ZOOKEEPER_HOME:-}" ]; then
  if ! ls "$ZOOKEEPER_HOME"/lib/zookeeper-*.jar "$ZOOKEEPER_HOME"/zookeeper-*.jar >/dev/null 2>&1; then
    echo "setup: ZOOKEEPER_HOME=$ZOOKEEPER_HOME has no zookeeper-*.jar (expected in lib/ or the top folder)." >&2
    echo "       Unset it to use Debian's package, or point it at an unpacked ZooKeeper 3.8 release." >&2
    exit 1
  fi
elif [ ! -f /usr/share/java/zookeeper.jar ]; then
  missing+=(zookeeper)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: missing Debian packages: ${missing[*]}" >&2
    echo "       As root: apt-get install -y ${missing[*]}" >&2
    echo "       Or set ZOOKEEPER_HOME to an unpacked ZooKeeper 3.8 release (and put java on PATH)." >&2
    exit 1
  fi
fi

py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null 2>&1 || py=python3
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($py --version)"
  "$py" -m venv .venv
fi
stamp=".venv/.kit-installed"
want="$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing Python dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q -e '.[dev,reports]'
  echo "$want" > "$stamp"
fi
# The kit's own modules as bytecode. Every node, proxy and pytest worker imports them, and where
# PYTHONDONTWRITEBYTECODE is set (CI machines, containers) each process would compile them from
# source again: about 0.05 s more per node start and 10-15 % on the suite's wall time. Python checks
# each .pyc against its source's mtime and size, so an edited module never runs stale bytecode.
.venv/bin/python -m compileall -q -j 0 reference_controller kafkawire harness probes cluster records \
  catalogue conformance chaos reports bench tests >/dev/null
echo "setup: ready (java: $(java -version 2>&1 | head -1); python: $(.venv/bin/python --version))"
