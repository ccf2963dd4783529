#!/usr/bin/env bash
# Installs what the PySpark reports need on top of scripts/setup.sh (idempotent):
#   Python: the `reports` extra (pyspark) into .venv;
#   npm:    Allure 3 (`allure`, pure Node, offline report generator) into .tools/node_modules;
#   Debian: a Java runtime (Spark 4 needs Java 17+), Node.js + npm when absent, and Debian's
#           chromium (the reports tests open the HTML report in a headless browser).
# Root installs the Debian packages; without root it says what to install and exits 1.
# KZK_REPORTS_NO_BROWSER=1 skips chromium (the report job itself does not need it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
allure_version="3.18.0"

missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ "${KZK_REPORTS_NO_BROWSER:-0}" != 1 ] && [ ! -x /usr/bin/chromium ]; then
  missing+=(chromium)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup_reports: installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup_reports: missing Debian packages: ${missing[*]}" >&2
    echo "               As root: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup_reports: no .venv yet: run scripts/setup.sh first" >&2
  exit 1
fi
if ! .venv/bin/python -c "import pyspark" >/dev/null 2>&1; then
  echo "setup_reports: installing the reports extra (pyspark, ~490 MB) into .venv"
  .venv/bin/python -m pip install -q -e '.[dev,reports]'
fi

cli=".tools/node_modules/allure/cli.js"
have="$(node -p "require('./.tools/node_modules/allure/package.json').version" 2>/dev/null || true)"
if [ "$have" != "$allure_version" ]; then
  echo "setup_reports: installing npm allure@$allure_version into .tools/node_modules"
  mkdir -p .tools
  npm install --prefix .tools --no-audit --no-fund --loglevel=error "allure@$allure_version" >/dev/null
fi
[ -f "$cli" ] || { echo "setup_reports: $cli missing after npm install" >&2; exit 1; }
echo "setup_reports: ready (pyspark $(.venv/bin/python -c 'import pyspark; print(pyspark.__version__)'); allure $(node -p "require('./.tools/node_modules/allure/package.json').version"))"
