#!/bin/sh
# Start one broker from a server.properties, as Apache Kafka's kafka-server-start.sh does:
# KAFKA_LOG4J_OPTS defaults to this distribution's config/log4j.properties, then
# kafka-run-class.sh runs the broker (here: the kit's reference node, see ../README.md).
if [ $# -lt 1 ]; then
  echo "USAGE: $0 [-daemon] server.properties [--override property=value]*" >&2
  exit 1
fi
if [ "$1" = "-daemon" ]; then
  echo "$0: -daemon is not supported by this test distribution" >&2
  exit 1
fi
base_dir=$(cd "$(dirname "$0")" && pwd)
if [ -z "$KAFKA_LOG4J_OPTS" ]; then
  KAFKA_LOG4J_OPTS="-Dlog4j.configuration=file:$base_dir/../config/log4j.properties"
  export KAFKA_LOG4J_OPTS
fi
exec "$base_dir/kafka-run-class.sh" kafka.Kafka "$@"
