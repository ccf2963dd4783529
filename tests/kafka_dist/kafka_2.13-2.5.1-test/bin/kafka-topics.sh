#!/bin/sh
# kafka-topics.sh: only --version is answered by this test distribution.
exec "$(dirname "$0")/kafka-run-class.sh" kafka.admin.TopicCommand "$@"
