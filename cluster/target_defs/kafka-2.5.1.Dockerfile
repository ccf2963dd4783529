# An image for the kafka target under --launcher docker: Apache Kafka 2.5.1 in /opt/kafka on a
# Java 11 runtime. Build where a registry and archive.apache.org are reachable (the kit's own
# machines have neither, so this file has not been built there):
#   docker build -t kzk-kafka:2.5.1 -f cluster/target_defs/kafka-2.5.1.Dockerfile .
FROM eclipse-temurin:11-jre
ARG KAFKA_URL=https://archive.apache.org/dist/kafka/2.5.1/kafka_2.13-2.5.1.tgz
RUN apt-get update && apt-get install -y --no-install-recommends curl && rm -rf /var/lib/apt/lists/* \
 && curl -fsSL "$KAFKA_URL" | tar -xz -C /opt && mv /opt/kafka_2.13-2.5.1 /opt/kafka
# The kit runs the container as the caller's uid with the node dir bind-mounted; nothing else is needed.
