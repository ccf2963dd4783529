#!/bin/sh
# Run a Kafka "class" the way Apache Kafka's kafka-run-class.sh sets it up (LOG_DIR, log4j
# configuration), with the kit's reference node standing in for the JVM (see ../README.md).
if [ $# -lt 1 ]; then
  echo "USAGE: $0 classname [opts]" >&2
  exit 1
fi
base_dir=$(cd "$(dirname "$0")/.." && pwd)
repo_root=$(cd "$base_dir/../../.." && pwd)
class=$1
shift
: "${LOG_DIR:=$base_dir/logs}"
export LOG_DIR
mkdir -p "$LOG_DIR" || exit 1
log4j=$(printf '%s' "$KAFKA_LOG4J_OPTS" | sed -n 's/.*-Dlog4j.configuration=file:\([^ ]*\).*/\1/p')
if [ -n "$log4j" ] && [ ! -f "$log4j" ]; then
  echo "$0: log4j configuration $log4j does not exist" >&2
  exit 1
fi
PYTHONPATH="$repo_root${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
python=${KZK_PYTHON:-python3}
case "$class" in
  kafka.Kafka)
    exec "$python" -m reference_controller.node "$@"
    ;;
  kafka.admin.TopicCommand)
    if [ "$1" = "--version" ]; then
      echo "2.5.1 (test distribution: the kit's reference node, not Apache Kafka)"
      exit 0
    fi
    echo "$0: this test distribution only answers kafka.admin.TopicCommand --version" >&2
    exit 1
    ;;
  *)
    echo "$0: class $class is not in this test distribution" >&2
    exit 1
    ;;
esac
